#!/usr/bin/env bash
# The goal rows with everything beside them: per fleet size, steady demand, 64 callers and 2,000/s,
# with the no-op baseline, the disk and loopback probes (the busy one says whether the VM stops)
# and the server's own figures. Run from the repository root:
#   docs/perf/pass18-fast-hour/run.sh OUT_DIR 1000 10000 100000
set -euo pipefail
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
	bin/hpa-bench --addr 127.0.0.1:50091 --baseline --server-pid "$pid" --store-file "$D/x.db" \
		--server-metrics http://127.0.0.1:9091/metrics --targets "$n" --load-swing 0 \
		--concurrency 64 --rate 2000 --duration 10s --warmup 2s --repeat 2 \
		--quiet --json-out "$OUT/steady-$n.json" >"$OUT/steady-$n.txt" 2>&1
	kill "$pid"
	wait "$pid" || true
	rm -rf "$D"
done
