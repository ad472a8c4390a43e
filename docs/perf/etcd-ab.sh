#!/usr/bin/env bash
# Paired runs of two hpa-recommender binaries on etcd: per pair, each binary on a fresh etcd of
# MEMBERS members (default fsync, on this machine) of its own, loaded by hpa-bench with the
# no-op baseline and etcd's pids (--store-pid), the order alternating from pair to pair.
# Run from the repository root:
#   docs/perf/etcd-ab.sh OUT OLD-BINARY NEW-BINARY PAIRS MEMBERS TARGETS [hpa-bench flags...]
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
row() { # label binary pair
	local i cluster="" endpoints="" pids=""
	rm -rf "$DATA"/etcd-*
	for ((i = 0; i < MEMBERS; i++)); do cluster+="${cluster:+,}m$i=http://127.0.0.1:$((23890 + i))"; done
	for ((i = 0; i < MEMBERS; i++)); do
		"$ETCD" --name "m$i" --data-dir "$DATA/etcd-$i" --listen-client-urls "http://127.0.0.1:$((23790 + i))" \
			--advertise-client-urls "http://127.0.0.1:$((23790 + i))" --listen-peer-urls "http://127.0.0.1:$((23890 + i))" \
			--initial-advertise-peer-urls "http://127.0.0.1:$((23890 + i))" --initial-cluster "$cluster" \
			--listen-metrics-urls "http://127.0.0.1:$((23990 + i))" 2>"$DATA/etcd-$i.log" &
		pids+="${pids:+,}$!"
		endpoints+="${endpoints:+,}127.0.0.1:$((23790 + i))"
	done
	until curl -fs http://127.0.0.1:23790/health | grep -q '"health":"true"'; do sleep 0.2; done
	"$2" --store etcd --etcd-endpoints "$endpoints" --metrics-listen '' --listen 127.0.0.1:50091 2>"$DATA/server.log" &
	local pid=$!
	until (echo >/dev/tcp/127.0.0.1/50091) 2>/dev/null; do sleep 0.1; done
	bin/hpa-bench --addr 127.0.0.1:50091 --baseline --server-pid "$pid" --store-pid "$pids" --targets "$TARGETS" \
		--quiet --json-out "$OUT/$1-$TARGETS-$3.json" "${FLAGS[@]}" | tee "$OUT/$1-$TARGETS-$3.txt"
	echo "etcd database: $(stat -c %s "$DATA/etcd-0/member/snap/db") bytes" | tee -a "$OUT/$1-$TARGETS-$3.txt"
	kill "$pid"
	wait "$pid" || true
	for i in ${pids//,/ }; do kill "$i"; done
	for i in ${pids//,/ }; do wait "$i" || true; done
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
