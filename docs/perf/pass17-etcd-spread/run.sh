#!/usr/bin/env bash
# Two replicas of one build sharing a one-member etcd, each loaded by an hpa-bench of its own
# at 32 callers, at once, for 10 s: "shared" sends both the same 1,000 targets (each target's
# calls alternate between the replicas, as behind a load balancer that spreads each call),
# "sticky" gives each its own 1,000 (as scalers that keep one connection). Prints each
# bench's table and each replica's update metrics. Run from the repository root:
#   docs/perf/pass17-etcd-spread/run.sh OUT BINARY [hpa-recommender flags...]
set -euo pipefail
OUT=$1 BIN=$2
shift 2
ETCD=${ETCD:-$HOME/.cache/hpa-recommender/etcd-v3.6.16/etcd}
mkdir -p "$OUT" bin
go build -o bin/hpa-bench ./cmd/hpa-bench
DATA=$(mktemp -d)
trap 'rm -rf "$DATA"' EXIT
# shellcheck source=docs/perf/etcd.sh
source "$(dirname "$0")/../etcd.sh"
for shape in shared sticky; do
	start_etcd 1
	pids=()
	for i in 0 1; do
		"$BIN" --store etcd --etcd-endpoints "$ETCD_ENDPOINTS" --metrics-listen "127.0.0.1:919$i" \
			--listen "127.0.0.1:5009$i" "$@" 2>"$DATA/server-$i.log" &
		pids+=($!)
		until (echo >/dev/tcp/127.0.0.1/5009$i) 2>/dev/null; do sleep 0.1; done
	done
	bpids=()
	for i in 0 1; do
		cluster=bench
		[[ $shape == sticky ]] && cluster=bench-$i
		bin/hpa-bench --addr "127.0.0.1:5009$i" --server-pid "${pids[$i]}" --cluster "$cluster" --targets 1000 \
			--load-swing 0 --concurrency 32 --duration 10s --warmup 2s --repeat 1 --disk-probe 0 --loopback-probe 0 \
			--quiet --json-out "$OUT/$shape-$i.json" >"$OUT/$shape-$i.txt" &
		bpids+=($!)
	done
	wait "${bpids[@]}"
	for i in 0 1; do
		curl -s "http://127.0.0.1:919$i/metrics" | grep '^hpa_recommender_store_update' | sed "s/^/replica $i: /" | tee -a "$OUT/$shape-metrics.txt"
		kill "${pids[$i]}"
	done
	wait "${pids[@]}" 2>/dev/null || true
	stop_etcd
done
