// Package recommender is the Kubernetes 1.37 HorizontalPodAutoscaler (autoscaling/v2) decision
// algorithm as a pure library: per-metric replica proposals, tolerance, pod grouping, several
// metrics, stabilization, scaling policies, conditions, an explanation of every decision, the
// history operations the decisions depend on, and replay of a timeline.
//
// It does no I/O, reads no clock or environment, starts no goroutines and keeps no
// package-level state: no pools, caches or tables; its only package-level variables are
// immutable sentinel errors. Working maps belong to one call: allocated once, sized from its
// inputs, reused across its metrics, and left to the garbage collector. The caller passes
// "now" and every input. It imports only the standard library and k8s.io/apimachinery (for
// quantities); it must never import store, server, proto or gRPC.
// Rule ids in comments (R-TOL-1, R-CALC-4, ...) are listed, with the upstream functions they
// mirror, in docs/ALGORITHM.md.
package recommender
