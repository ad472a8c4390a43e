#!/usr/bin/env bash
# The hostile-caller load against an etcd-backed service: a fresh one-member etcd, the service
# on it, then hpa-bench with H hostile callers (0, then 2) as docs/RELIABILITY.md's bbolt runs.
# Run from the repository root after cmd/hpa-bench/scripts/run.sh has built bin/: cmd/hpa-bench/scripts/etcd-hostile.sh OUT
set -euo pipefail
OUT=$1
mkdir -p "$OUT"
ETCD=${ETCD:-$HOME/.cache/hpa-recommender/etcd-v3.6.16/etcd}
DATA=$(mktemp -d)
trap 'rm -rf "$DATA"' EXIT
# shellcheck source=cmd/hpa-bench/scripts/etcd.sh
source "$(dirname "$0")/etcd.sh"
for h in 0 2; do
	start_etcd 1
	bin/hpa-recommender --store etcd --etcd-endpoints "$ETCD_ENDPOINTS" --metrics-listen '' --listen 127.0.0.1:50091 2>"$DATA/server.log" &
	pid=$!
	until (echo >/dev/tcp/127.0.0.1/50091) 2>/dev/null; do sleep 0.1; done
	bin/hpa-bench --addr 127.0.0.1:50091 --server-pid "$pid" --store-pid "$ETCD_PIDS" --targets 1000 --concurrency 64 \
		--rate 500 --duration 5s --warmup 1s --repeat 3 --hostile "$h" --loopback-probe 0 --quiet \
		--json-out "$OUT/hostile-$h.json" | tee "$OUT/hostile-$h.txt"
	kill "$pid"
	wait "$pid" || true
	stop_etcd
done
