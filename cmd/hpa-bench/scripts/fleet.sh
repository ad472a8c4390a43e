#!/usr/bin/env bash
# One hpa-scaler replica keeping a fleet of HorizontalPodAutoscaler objects in one cluster
# (issue 32): for each size N, cmd/hpa-bench/fleet starts the e2e control plane (internal/controlplane:
# etcd, kube-apiserver, kube-controller-manager without its HPA controller, the test metrics
# adapter), creates N HPAs on Deployments of 2-5 Ready pods (CPU and External metrics), starts
# the built service (bbolt) and hpa-scaler --source hpa, and measures PERIODS sync periods
# after every autoscaler synced once. Run from the repository root:
#   cmd/hpa-bench/scripts/fleet.sh OUT_DIR "N1 N2 ..." [fleet flags...]
# PERIOD (default 15s) and PERIODS (default 5) set the period and how many are measured;
# SCALER_ARGS adds hpa-scaler flags (e.g. "--kube-qps=1000 --kube-burst=2000"). The kube
# binaries come from `make kube-binaries`. Each run writes OUT_DIR/N.{txt,json} and keeps its
# logs in OUT_DIR/N/. CONTROLLER=in-tree runs the peer instead: the same fleet kept by
# kube-controller-manager's own HPA controller (no service, no scaler), files N-in-tree.*. e.g.
#   cmd/hpa-bench/scripts/fleet.sh /tmp/fleet "200 1000"
#   CONTROLLER=in-tree cmd/hpa-bench/scripts/fleet.sh /tmp/fleet "1000"
set -euo pipefail
[[ $# -ge 2 ]] || { sed -n 2,15p "$0" >&2; exit 2; }
out=$1 sizes=$2
shift 2
mkdir -p "$out" bin
go build -o bin/ ./cmd/hpa-recommender ./cmd/hpa-scaler ./cmd/hpa-bench/fleet
controller=${CONTROLLER:-hpa-scaler}
for size in $sizes; do
	n=$size
	[[ $controller == hpa-scaler ]] || n=$size-$controller
	rm -rf "${out:?}/$n"
	bin/fleet -controller "$controller" -hpas "$size" -period "${PERIOD:-15s}" -periods "${PERIODS:-5}" -scaler-args "${SCALER_ARGS:-}" \
		-service-bin bin/hpa-recommender -scaler-bin bin/hpa-scaler -dir "$out/$n" \
		-json-out "$out/$n.json" "$@" >"$out/$n.txt"
	# The control plane's etcd data is the bulk of the directory; the logs stay.
	rm -rf "$out/$n/control-plane/etcd" "$out/$n/service"
	cat "$out/$n.txt"
done
