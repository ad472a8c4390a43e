// Package workload is the realistic Recommend traffic of N targets: each a Deployment of about
// 20 pods autoscaled on CPU utilization and an External queue-depth metric, with a behavior,
// whose CPU demand follows a cycle so that a share of the decisions scale up and down. It
// builds each target's next request as a message of the generated API (Request), which callers
// send with the generated client or encode with proto.Marshal, and remembers each target's
// replica count as a controller would (Applied).
//
// The server's tests and benchmarks, the crash test of cmd/hpa-recommender and the load tool
// (cmd/hpa-bench/internal/bench, the one production importer) all send this traffic, so the
// server's tests need not import the load tool. It imports the generated API and package
// recommender (for its string constants) only; it must never import server, store, clients or
// cmd.
package workload
