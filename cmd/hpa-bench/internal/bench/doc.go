// Package bench is the load generator behind cmd/hpa-bench: it drives Recommend (and
// ReportScale for the decisions that scale) against a running hpa-recommender over gRPC,
// closed-loop (a fixed number of concurrent callers) or open-loop (a fixed arrival rate, with
// latency measured from each call's intended send time so a stalled server cannot hide its
// stall: no coordinated omission), and compares every figure with a no-op baseline server
// driven by the same generator over the same transport in the same run.
//
// It owns latency recording and percentiles, the no-op baseline, the disk and loopback probes,
// the probe of a bare bbolt file's ceiling on a disk (ProbeBolt, hpa-bench --bolt-probe),
// reading a server process's CPU time and RSS from /proc, and reading the service's own
// figures from its /metrics page (servermetrics.go: Recommend's handling time and, with the
// bbolt store, its writes per commit and write time). The payload (targets with 20-ish pods, a
// CPU utilization and an External metric, a behavior) is internal/workload's, which the
// server's tests send too. The hot loop sends each target's request as proto.Marshal encodes
// it, the part its calls share encoded once and each call's Metrics after it (requests.go says
// why): the generator shares the machine with the server it measures, and every microsecond it
// spends per call is taken from the server. It imports the generated API, internal/workload,
// internal/syncbuf and bbolt (for ProbeBolt) only; it never imports the server or a store. It
// lives under cmd/hpa-bench (Go's internal rule): only the load tool's commands import it.
package bench
