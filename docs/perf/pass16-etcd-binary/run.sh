#!/usr/bin/env bash
# Paired runs of two hpa-recommender binaries on etcd: for each pair, each binary on a fresh
# one-member etcd (default fsync) of its own, its row as docs/perf/run.sh's etcd rows, the order
# alternating. Run from the repository root:
#   docs/perf/pass16-etcd-binary/run.sh OUT OLD-BINARY NEW-BINARY PAIRS TARGETS [hpa-bench flags...]
set -euo pipefail
OUT=$1 OLD=$2 NEW=$3 PAIRS=$4 TARGETS=$5
shift 5
FLAGS=("$@")
ETCD=${ETCD:-$HOME/.cache/hpa-recommender/etcd-v3.6.16/etcd}
mkdir -p "$OUT"
go build -o bin/hpa-bench ./cmd/hpa-bench
DATA=$(mktemp -d)
trap 'rm -rf "$DATA"' EXIT
row() { # label binary pair
	rm -rf "$DATA/etcd"
	"$ETCD" --name p --data-dir "$DATA/etcd" --listen-client-urls http://127.0.0.1:23790 \
		--advertise-client-urls http://127.0.0.1:23790 --listen-peer-urls http://127.0.0.1:23890 \
		--initial-advertise-peer-urls http://127.0.0.1:23890 --initial-cluster p=http://127.0.0.1:23890 \
		--listen-metrics-urls http://127.0.0.1:23990 2>"$DATA/etcd.log" &
	local etcd_pid=$!
	until curl -fs http://127.0.0.1:23790/health | grep -q '"health":"true"'; do sleep 0.2; done
	"$2" --store etcd --etcd-endpoints 127.0.0.1:23790 --metrics-listen '' --listen 127.0.0.1:50091 2>"$DATA/server.log" &
	local pid=$!
	until (echo >/dev/tcp/127.0.0.1/50091) 2>/dev/null; do sleep 0.1; done
	bin/hpa-bench --addr 127.0.0.1:50091 --baseline --server-pid "$pid" --store-pid "$etcd_pid" --targets "$TARGETS" \
		--quiet --json-out "$OUT/$1-$TARGETS-$3.json" "${FLAGS[@]}" | tee "$OUT/$1-$TARGETS-$3.txt"
	echo "etcd database: $(stat -c %s "$DATA/etcd/member/snap/db") bytes" | tee -a "$OUT/$1-$TARGETS-$3.txt"
	kill "$pid"
	wait "$pid" || true
	kill "$etcd_pid"
	wait "$etcd_pid" || true
}
for ((i = 1; i <= PAIRS; i++)); do
	if ((i % 2)); then
		row old "$OLD" "$i"
		row new "$NEW" "$i"
	else
		row new "$NEW" "$i"
		row old "$OLD" "$i"
	fi
done
