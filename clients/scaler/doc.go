// Package scaler is the logic of hpa-scaler, the thin in-cluster client of hpa-recommender.
//
// Every sync period it reads, for each autoscaler (an autoscaling/v2 HorizontalPodAutoscaler
// manifest from a directory, an HPA object, or a CentralHorizontalPodAutoscaler object: see
// Config.Source; objects get their status written as the in-tree controller writes it), the
// target's scale subresource, its pods (from an informer cache) and every metric of the spec
// (metrics.k8s.io, custom.metrics.k8s.io, external.metrics.k8s.io, or Prometheus's HTTP API
// for a metric with a prometheus-query annotation: prometheus.go); it sends Recommend, writes
// the scale subresource when the answer says so (with the resourceVersion precondition), and
// reports the outcome with ReportScale.
//
// Reliability rules, in the order they matter:
//   - One decision, at most one scale write: a decision's write is attempted once (conflicts
//     are retried only while spec.replicas is still the count the decision was made from), and
//     its outcome is reported until the service acknowledges it; a later sync never replays it.
//   - One actor: with leader election (a coordination.k8s.io Lease) only the leader syncs.
//   - One controller per workload (safety.go): two autoscalers over the same pods both hold
//     (AmbiguousSelector); an in-tree-controlled HPA on the same workload holds ours unless it
//     opts in (AllowInTreeHPAAnnotation); an HPA object whose status another manager writes
//     is compared only (shadow).
//   - A metric that cannot be fetched is sent as an error observation, never as a value.
//   - Service unreachable: nothing is scaled (fail static). With Config.FallbackAfter set, after
//     that long without an answer the scaler decides locally with package recommender and a
//     local history (scale-up only unless Config.FallbackScaleDown), and says so in events and
//     metrics. When the service answers again its stored history is authoritative again.
//   - Shadow mode (per autoscaler with the annotation hpa-recommender.io/mode: shadow, or
//     globally with Config.DryRun) asks with dryRun and writes nothing to the cluster.
//   - Per-object controls (annotations.go, controls.go): pause (at the current count, at a
//     given count, or one direction), an opt-in fallback when every metric keeps failing, and
//     a per-object sync period, the same on every source. An invalid value is reported on the
//     object and read as its safest meaning; it never stops the autoscaler being served.
//
// It imports the generated API, clients/goclient, package recommender (through
// clients/internal/local, for the local fallback) and client-go; never package server.
package scaler
