// Package controlplane runs a real Kubernetes control plane on this machine, for end-to-end
// tests and hpa-bench's fleet benchmark: etcd, kube-apiserver and kube-controller-manager (every
// controller except horizontalpodautoscaling) as child processes on free loopback ports, with
// certificates, service-account keys and an admin token generated in Go. No kubelet, scheduler or
// kube-proxy: pods stay unscheduled unless they are bound to a kwok node (StartKwok, below), and
// SetPodStatus / MakeDeploymentReady make unscheduled ones Running and Ready through the status
// subresource (the fleet benchmark's thousands of pods, tests of the adapter itself).
//
// The binaries come from `make kube-binaries` (built from the Go module proxy in tools/kube-1.MINOR
// and tools/etcd, cached under $HOME/.cache/hpa-recommender; see FindBinaries). Tests that
// use this package carry the build tag e2e and run with `make e2e`.
//
// MetricsAdapter is a test server for custom.metrics.k8s.io/v1beta2,
// external.metrics.k8s.io/v1beta1 and metrics.k8s.io/v1beta1 with values the test sets. The
// e2e tests read custom and external metrics from it (no real component serves values a test
// chooses), and resource metrics from metrics-server on kwok; its metrics.k8s.io serves the
// fleet benchmark, whose pods no kwok node runs.
// StartMetricsAdapter registers it with kube-apiserver's aggregation layer: APIService
// objects pointing at an ExternalName Service for "localhost" with the adapter's port, so
// clients read metrics through kube-apiserver exactly as in a cluster (the request-header
// front proxy included).
//
//	cp := controlplane.Start(t, controlplane.Options{})
//	adapter := controlplane.StartMetricsAdapter(t, cp)
//	cs := cp.Client // admin; cp.Config is its *rest.Config
//	... create a Deployment, controlplane.MakeDeploymentReady(ctx, cs, ns, name) ...
//	adapter.SetPodMetric(ns, pod, "requests_per_second", resource.MustParse("10"))
//
// StartKwok adds what a cluster's nodes give: the kwok controller (sigs.k8s.io/kwok) simulating
// fake nodes, moving the pods bound to them through their phases and conditions with kwok's own
// stages (plus ours: a pod annotated KwokReadyAfterAnnotation turns Ready late), and emulating
// each node's kubelet /metrics/resource with the CPU and memory set in the pods' usage
// annotations (KwokNoUsage: none at all); and the real metrics-server scraping them, registered as
// v1beta1.metrics.k8s.io (taking that API over from a MetricsAdapter, which keeps the custom and
// external metrics APIs). Both run on loopback; `make kwok-binaries` builds them (tools/kwok,
// tools/metrics-server; see FindKwokBinaries).
//
//	k := controlplane.StartKwok(t, cp, controlplane.KwokOptions{})
//	... a Deployment whose pod template has spec.nodeName k.Nodes[0] ...
//	cpu := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}
//	controlplane.SetKwokPodUsage(ctx, cs, ns, pod, cpu)
//	k.WaitPodUsage(ctx, ns, map[string]corev1.ResourceList{pod: cpu}) // the next scrape; a new pod's 20-30 s
//
// metrics-server scrapes every 10 s (its minimum --metric-resolution). Kwok.StopMetricsServer
// and StartMetricsServer make metrics.k8s.io fail (503, as when metrics-server is down) and
// recover.
//
// StartPrometheus runs a real Prometheus (built by `make prometheus` from tools/prometheus; see
// FindPrometheus) on a loopback port, scraping the targets a test gives it every second, for
// the scaler's Prometheus source.
//
// Start, StartMetricsAdapter and StartKwok take a testing.TB and stop what they started at its cleanup;
// StartControlPlane, NewMetricsAdapterFor and StartKwokFor are the same without one, for a program (the fleet
// benchmark, cmd/hpa-bench/internal/fleet) that stops them itself.
//
// It imports internal/certgen, client-go and the Kubernetes API types; never server, store,
// clients or cmd. Its importers are e2e tests and the fleet benchmark.
package controlplane
