#!/usr/bin/env bash
# The etcd store's footprint per target: for each N, a fresh one-member etcd, the service on it
# compacting every second, N targets written once by hpa-bench, a pause for the compaction, then
# cmd/hpa-bench/etcdsize (etcd's database in use and RSS, per target). Run from the
# repository root after cmd/hpa-bench/scripts/run.sh has built bin/: cmd/hpa-bench/scripts/etcd-size.sh N...
set -euo pipefail
ETCD=${ETCD:-$HOME/.cache/hpa-recommender/etcd-v3.6.16/etcd}
DATA=$(mktemp -d)
trap 'rm -rf "$DATA"' EXIT
# shellcheck source=cmd/hpa-bench/scripts/etcd.sh
source "$(dirname "$0")/etcd.sh"
go build -o bin/etcd-size ./cmd/hpa-bench/etcdsize
for n in "$@"; do
	start_etcd 1
	bin/hpa-recommender --store etcd --etcd-endpoints "$ETCD_ENDPOINTS" --etcd-compaction-interval 1s \
		--metrics-listen '' --listen 127.0.0.1:50091 2>"$DATA/server.log" &
	pid=$!
	until (echo >/dev/tcp/127.0.0.1/50091) 2>/dev/null; do sleep 0.1; done
	bin/hpa-bench --addr 127.0.0.1:50091 --targets "$n" --concurrency 1 --duration 100ms --warmup 0s --repeat 1 \
		--loopback-probe 0 --quiet >/dev/null
	sleep 5 # two compaction intervals: the history of the writes is compacted away
	bin/etcd-size -endpoint "$ETCD_ENDPOINTS" -targets "$n" -pid "$ETCD_PIDS"
	kill "$pid"
	wait "$pid" || true
	stop_etcd
done
