#!/usr/bin/env bash
# The fifteenth pass's runs: each size twice with each baseline, alternating (process first in
# odd pairs, generator first in even ones), a fresh server per run. From the repository root:
#   docs/perf/pass15-baseline/run.sh OUT_DIR PAIRS SIZE...
# SWING (default 0: steady demand) is hpa-bench's --load-swing; other than 0 it is also in the
# files' names (swing0.4-process-N-P).
set -euo pipefail
out=$1 pairs=$2
shift 2
mkdir -p "$out" bin
go build -o bin/hpa-recommender ./cmd/hpa-recommender
go build -o bin/hpa-bench ./cmd/hpa-bench
swing=${SWING:-0}
tag=
[[ $swing != 0 ]] && tag=swing$swing-
for n in "$@"; do
	for p in $(seq 1 "$pairs"); do
		order="process generator"
		[[ $((p % 2)) == 0 ]] && order="generator process"
		for b in $order; do
			d=$(mktemp -d)
			bin/hpa-recommender --store bolt --bolt-path "$d/x.db" --metrics-listen 127.0.0.1:50092 --listen 127.0.0.1:50091 2>"$d/server.log" &
			pid=$!
			until (echo >/dev/tcp/127.0.0.1/50091) 2>/dev/null; do sleep 0.1; done
			bin/hpa-bench --addr 127.0.0.1:50091 --baseline --baseline-in "$b" --server-pid "$pid" --store-file "$d/x.db" \
				--server-metrics http://127.0.0.1:50092/metrics --targets "$n" --load-swing "$swing" --concurrency 64 --rate 2000 \
				--duration 8s --warmup 2s --repeat 1 --loopback-probe 0 --disk-probe 2s \
				--quiet --json-out "$out/$tag$b-$n-$p.json" >"$out/$tag$b-$n-$p.txt"
			kill "$pid"
			wait "$pid" || true
			rm -rf "$d"
			echo "== $b, $n targets, pair $p"
			grep -E '^(service|baseline)' "$out/$tag$b-$n-$p.txt"
		done
	done
done
