#!/usr/bin/env bash
# The server's own handling time and its store's commit figures at 64 callers and at 2,000/s,
# steady demand, per fleet size: run from the repository root as
#   cmd/hpa-bench/scripts/server-own.sh OUT_DIR 1000 10000 100000
# (writes OUT_DIR/steady-<N>.txt and .json).
# WITH_BASELINE=1 also runs the no-op baseline and keeps the disk and loopback probes (the busy
# one says whether the VM stops): the goal rows with everything beside them.
set -euo pipefail
extra=(--disk-probe 0 --loopback-probe 0)
[[ -n ${WITH_BASELINE-} ]] && extra=(--baseline)
OUT=$1
shift
mkdir -p "$OUT" bin
go build -o bin/hpa-recommender ./cmd/hpa-recommender
go build -o bin/hpa-bench ./cmd/hpa-bench
for n in "$@"; do
	D=$(mktemp -d)
	bin/hpa-recommender --store bolt --bolt-path "$D/x.db" --metrics-listen 127.0.0.1:9091 --listen 127.0.0.1:50091 2>"$D/log" &
	pid=$!
	until (echo >/dev/tcp/127.0.0.1/50091) 2>/dev/null; do sleep 0.1; done
	bin/hpa-bench --addr 127.0.0.1:50091 --server-pid "$pid" --store-file "$D/x.db" \
		--server-metrics http://127.0.0.1:9091/metrics --targets "$n" --load-swing 0 \
		--concurrency 64 --rate 2000 --duration 10s --warmup 2s --repeat 2 "${extra[@]}" \
		--quiet --json-out "$OUT/steady-$n.json" >"$OUT/steady-$n.txt" 2>&1
	kill "$pid"
	wait "$pid" || true
	rm -rf "$D"
done
