#!/usr/bin/env bash
# Paired runs of two hpa-recommender binaries on etcd: per pair, each binary on a fresh etcd of
# MEMBERS members (default fsync, on this machine) of its own, loaded by hpa-bench with the
# no-op baseline and etcd's pids (--store-pid), the order alternating from pair to pair.
# Run from the repository root:
#   cmd/hpa-bench/scripts/etcd-ab.sh OUT OLD-BINARY NEW-BINARY PAIRS MEMBERS TARGETS [hpa-bench flags...]
# writes OUT/{old,new}-TARGETS-PAIR.{txt,json}; each .txt ends with the size of the first
# member's database.
set -euo pipefail
OUT=$1 OLD=$2 NEW=$3 PAIRS=$4 MEMBERS=$5 TARGETS=$6
shift 6
FLAGS=("$@")
ETCD=${ETCD:-$HOME/.cache/hpa-recommender/etcd-v3.6.16/etcd}
mkdir -p "$OUT" bin
go build -o bin/hpa-bench ./cmd/hpa-bench
DATA=$(mktemp -d)
trap 'rm -rf "$DATA"' EXIT
# shellcheck source=cmd/hpa-bench/scripts/etcd.sh
source "$(dirname "$0")/etcd.sh"
row() { # label binary pair
	start_etcd "$MEMBERS"
	"$2" --store etcd --etcd-endpoints "$ETCD_ENDPOINTS" --metrics-listen '' --listen 127.0.0.1:50091 2>"$DATA/server.log" &
	local pid=$!
	until (echo >/dev/tcp/127.0.0.1/50091) 2>/dev/null; do sleep 0.1; done
	bin/hpa-bench --addr 127.0.0.1:50091 --baseline --server-pid "$pid" --store-pid "$ETCD_PIDS" --targets "$TARGETS" \
		--quiet --json-out "$OUT/$1-$TARGETS-$3.json" "${FLAGS[@]}" | tee "$OUT/$1-$TARGETS-$3.txt"
	echo "etcd database: $(stat -c %s "$DATA/etcd-0/member/snap/db") bytes" | tee -a "$OUT/$1-$TARGETS-$3.txt"
	kill "$pid"
	wait "$pid" || true
	stop_etcd
}
for ((p = 1; p <= PAIRS; p++)); do
	if ((p % 2)); then
		row old "$OLD" "$p"
		row new "$NEW" "$p"
	else
		row new "$NEW" "$p"
		row old "$OLD" "$p"
	fi
done
