#!/usr/bin/env bash
# What etcd's history costs without compaction, and what --etcd-compaction-interval keeps.
# For each interval (0: never): a fresh one-member etcd (default fsync and 2 GiB quota), a fresh
# hpa-recommender on it, and hpa-bench at a fleet's rate (10k targets, each decided every 15 s:
# 667/s, open loop) for DURATION; every 10 s the etcd database file's size and etcd's RSS are
# written to <out>/compaction-<interval>.tsv, the load's table to <out>/compaction-<interval>.txt.
# Run from the repository root: cmd/hpa-bench/scripts/etcd-compaction.sh OUT [interval...]
set -euo pipefail
OUT=$1
shift
INTERVALS=("${@:-0 30s}")
DURATION=${DURATION:-180s}
ETCD=${ETCD:-$HOME/.cache/hpa-recommender/etcd-v3.6.16/etcd}
mkdir -p "$OUT" bin
go build -o bin/hpa-recommender ./cmd/hpa-recommender
go build -o bin/hpa-bench ./cmd/hpa-bench
DATA=$(mktemp -d)
trap 'rm -rf "$DATA"' EXIT
# shellcheck source=cmd/hpa-bench/scripts/etcd.sh
source "$(dirname "$0")/etcd.sh"
for iv in ${INTERVALS[@]}; do
	start_etcd 1
	etcd_pid=$ETCD_PIDS
	bin/hpa-recommender --store etcd --etcd-endpoints "$ETCD_ENDPOINTS" --etcd-compaction-interval "$iv" \
		--metrics-listen '' --listen 127.0.0.1:50091 2>"$OUT/compaction-$iv.server.log" &
	srv_pid=$!
	until (echo >/dev/tcp/127.0.0.1/50091) 2>/dev/null; do sleep 0.1; done
	printf 'seconds\tdb_bytes\tetcd_rss_kib\n' >"$OUT/compaction-$iv.tsv"
	(
		t0=$(date +%s)
		while kill -0 "$srv_pid" 2>/dev/null; do
			printf '%d\t%d\t%d\n' $(($(date +%s) - t0)) "$(stat -c %s "$DATA/etcd-0/member/snap/db")" \
				"$(awk '/VmRSS/ {print $2}' /proc/$etcd_pid/status)" >>"$OUT/compaction-$iv.tsv"
			sleep 10
		done
	) &
	sampler=$!
	bin/hpa-bench --addr 127.0.0.1:50091 --server-pid "$srv_pid" --store-pid "$etcd_pid" --targets 10000 \
		--concurrency '' --rate 667 --warmup 0s --duration "$DURATION" --repeat 1 --loopback-probe 0 --quiet \
		--json-out "$OUT/compaction-$iv.json" | tee "$OUT/compaction-$iv.txt"
	kill "$srv_pid"
	wait "$srv_pid" || true
	wait "$sampler" || true
	stop_etcd
done
