// Command hpa-bench loads a running hpa-recommender with Recommend (and ReportScale for the
// decisions that scale) and reports throughput, latency percentiles, errors, and the server's
// CPU and RSS; with --baseline it drives a no-op server the same way (by default a process of
// its own, this binary with --serve-noop) and reports every figure as a ratio too. See
// cmd/hpa-bench/internal/bench and docs/PERFORMANCE.md.
//
// Flags and wiring only: it imports cmd/hpa-bench/internal/bench; nothing imports cmd/.
package main
