#!/usr/bin/env bash
# Two replicas of one build sharing a one-member etcd, loaded by one hpa-bench (64 callers,
# 1,000 targets, steady demand, with the no-op baseline): "sticky" sends each target's calls
# to one replica (as scalers that keep one connection), "spread" sends each target's successive
# calls to the replicas in turn (as behind a load balancer that spreads each call). Writes
# OUT/{sticky,spread}.{txt,json} and each replica's update metrics at the end
# (OUT/*-metrics.txt). Run from the repository root:
#   cmd/hpa-bench/scripts/etcd-spread.sh OUT BINARY [hpa-recommender flags...]
set -euo pipefail
OUT=$1 BIN=$2
shift 2
ETCD=${ETCD:-$HOME/.cache/hpa-recommender/etcd-v3.6.16/etcd}
mkdir -p "$OUT" bin
go build -o bin/hpa-bench ./cmd/hpa-bench
DATA=$(mktemp -d)
trap 'rm -rf "$DATA"' EXIT
# shellcheck source=cmd/hpa-bench/scripts/etcd.sh
source "$(dirname "$0")/etcd.sh"
for shape in sticky spread; do
	start_etcd 1
	pids=()
	for i in 0 1; do
		"$BIN" --store etcd --etcd-endpoints "$ETCD_ENDPOINTS" --metrics-listen "127.0.0.1:919$i" \
			--listen "127.0.0.1:5009$i" "$@" 2>"$DATA/server-$i.log" &
		pids+=($!)
		until (echo >/dev/tcp/127.0.0.1/5009$i) 2>/dev/null; do sleep 0.1; done
	done
	flags=()
	[[ $shape == spread ]] && flags=(--spread)
	bin/hpa-bench --addr 127.0.0.1:50090,127.0.0.1:50091 "${flags[@]}" --baseline \
		--server-pid "${pids[0]},${pids[1]}" --store-pid "$ETCD_PIDS" --targets 1000 --load-swing 0 \
		--concurrency 64 --duration 10s --warmup 2s --repeat 1 --quiet --json-out "$OUT/$shape.json" | tee "$OUT/$shape.txt"
	for i in 0 1; do
		curl -s "http://127.0.0.1:919$i/metrics" | grep '^hpa_recommender_store_update' | sed "s/^/replica $i: /" | tee -a "$OUT/$shape-metrics.txt"
		kill "${pids[$i]}"
	done
	wait "${pids[@]}" 2>/dev/null || true
	stop_etcd
done
