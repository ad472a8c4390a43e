// Package fleet is hpa-bench's one-cluster benchmark of hpa-scaler (issue 32, "5,000 HPAs in
// one cluster"): Run starts a local control plane (internal/controlplane: etcd, kube-apiserver,
// kube-controller-manager without its HPA controller, and the metrics adapter through the
// aggregation layer), creates Config.HPAs HorizontalPodAutoscaler objects on Deployments of 2-5
// pods made Running and Ready without a kubelet (half on CPU utilization, half on an External
// metric, every fifth on both), starts the real service (a built hpa-recommender, bbolt) and a
// built hpa-scaler with --source hpa, and measures Config.Periods sync periods: the share of
// autoscalers synced within each period, the sync lag, decisions/s, the processes' CPU and RSS
// and the API server's requests/s by verb. With Config.Controller ControllerInTree it measures
// kube-controller-manager's own HPA controller keeping the same fleet instead.
//
// The command is cmd/hpa-bench/fleet (flags and wiring); cmd/hpa-bench/scripts/fleet.sh builds
// the binaries and runs it; the figures are in docs/PERFORMANCE.md. AnalyseSyncs, ParseMetrics
// and BucketQuantile are the pieces of the measurement that read what the processes report.
//
// It imports internal/controlplane, cmd/hpa-bench/internal/bench (reading a process's CPU and
// RSS), client-go and the Kubernetes API types; never server or store (it runs the service as a
// process).
package fleet
