#!/usr/bin/env bash
# How many targets one replica serves: for each fleet size N, a fresh bbolt server holding N
# targets is called as N HPAs would call it, each target once per sync period (open loop at
# N/PERIOD calls a second, round-robin over the targets, so every target is decided once per
# period). Run from the repository root:
#   cmd/hpa-bench/scripts/capacity.sh OUT_DIR "N1 N2 ..." [hpa-bench flags...]
# PERIOD (seconds, default 15: the HPA controller's default sync period) sets the rate; SERVER
# (default bin/hpa-recommender, built) is the server binary. Each run writes OUT_DIR/N.{txt,json};
# a summary line per run at the end. The hpa-bench flags default to steady demand
# (--load-swing 0), 30 s measured after 5 s of warm-up, one repeat, with the no-op baseline at
# the same rate. e.g.
#   cmd/hpa-bench/scripts/capacity.sh /tmp/capacity "10000 30000 60000 100000"
set -euo pipefail
[[ $# -ge 2 ]] || { sed -n 2,12p "$0" >&2; exit 2; }
out=$1 sizes=$2
shift 2
period=${PERIOD:-15}
mkdir -p "$out" bin
go build -o bin/hpa-bench ./cmd/hpa-bench
server=${SERVER:-}
if [[ -z $server ]]; then
	go build -o bin/hpa-recommender ./cmd/hpa-recommender
	server=bin/hpa-recommender
fi
for n in $sizes; do
	rate=$(( (n + period - 1) / period ))
	d=$(mktemp -d)
	"$server" --store bolt --bolt-path "$d/x.db" --metrics-listen 127.0.0.1:50092 --listen 127.0.0.1:50091 2>"$d/server.log" &
	pid=$!
	until (echo >/dev/tcp/127.0.0.1/50091) 2>/dev/null; do sleep 0.1; done
	bin/hpa-bench --addr 127.0.0.1:50091 --baseline --server-pid "$pid" --store-file "$d/x.db" \
		--server-metrics http://127.0.0.1:50092/metrics --targets "$n" --quiet --json-out "$out/$n.json" \
		--concurrency '' --rate "$rate" --load-swing 0 --duration 30s --warmup 5s --repeat 1 \
		--loopback-probe 0 "$@" >"$out/$n.txt"
	kill "$pid"
	wait "$pid" || true
	rm -rf "$d"
	echo "== $n targets, $rate/s"
	grep -E '^(service|baseline)' "$out/$n.txt"
done
echo "== summary (targets, calls/s asked and served, p50, p99, server cores, CPU per call, RSS)"
for n in $sizes; do
	awk -F'|' -v n="$n" '/^service /{gsub(/ /, ""); print n, $2, $3 "/s", "p50", $4, "p99", $6, $10, "cores", $11, $12}' "$out/$n.txt"
done
