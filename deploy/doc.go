// Package deploy holds the Kubernetes manifests (kustomize bases and overlays under base/ and
// overlays/) and the Dockerfiles (docker/) of hpa-recommender and hpa-scaler, and monitoring/:
// Prometheus alerting rules and a Grafana dashboard, which the module monitoring/check tests
// (docs/OPERATIONS.md). It has no Go code of its own: its tests parse every manifest strictly
// into the Kubernetes API types and check the configuration against the binaries' real flags
// (go test), and render every overlay with kubectl kustomize and apply it with a server-side
// dry run against a real kube-apiserver (go test -tags e2e, through internal/controlplane;
// make e2e).
package deploy
