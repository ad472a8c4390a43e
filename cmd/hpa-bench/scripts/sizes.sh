#!/usr/bin/env bash
# One build at several fleet sizes, the sizes alternating round after round, so that a drift of
# the machine does not favour one size: how flat the latency is from 1k to 100k targets. Run
# from the repository root:
#   cmd/hpa-bench/scripts/sizes.sh SERVER_BIN OUT_DIR ROUNDS "SIZES" [hpa-bench flags...]
# e.g. (2026-11-27, the flatness runs of docs/PERFORMANCE.md):
#   go build -o /tmp/srv ./cmd/hpa-recommender
#   cmd/hpa-bench/scripts/sizes.sh /tmp/srv /tmp/flat 3 "1000 10000 100000" --load-swing 0 --concurrency '' --rate 2000 --duration 10s --warmup 2s --repeat 1
# Each run starts a fresh bbolt server on 127.0.0.1:50091 (its metrics on 50092, so the table
# has the server's own handling time) and writes OUT_DIR/TARGETS-ROUND.{txt,json}; a summary
# line per run at the end. Round r runs the sizes in the given order when r is odd, reversed
# when it is even.
set -euo pipefail
[[ $# -ge 4 ]] || { sed -n 2,12p "$0" >&2; exit 2; }
srv=$1 out=$2 rounds=$3 sizes=$4
shift 4
mkdir -p "$out" bin
go build -o bin/hpa-bench ./cmd/hpa-bench
for r in $(seq 1 "$rounds"); do
	order=$sizes
	[[ $((r % 2)) == 0 ]] && order=$(echo "$sizes" | tr ' ' '\n' | tac | tr '\n' ' ')
	for n in $order; do
		d=$(mktemp -d)
		"$srv" --store bolt --bolt-path "$d/x.db" --metrics-listen 127.0.0.1:50092 --listen 127.0.0.1:50091 2>"$d/server.log" &
		pid=$!
		until (echo >/dev/tcp/127.0.0.1/50091) 2>/dev/null; do sleep 0.1; done
		bin/hpa-bench --addr 127.0.0.1:50091 --baseline --server-pid "$pid" --store-file "$d/x.db" --server-metrics http://127.0.0.1:50092/metrics \
			--targets "$n" --quiet --json-out "$out/$n-$r.json" "$@" >"$out/$n-$r.txt"
		kill "$pid"
		wait "$pid" || true
		rm -rf "$d"
	done
done
# Summary, one line per run and load: the generator's p50 and p99, then the server's own.
echo "== summary (per run and load: generator p50 p99 | the server's own p50 p99, share within 5 ms)"
for n in $sizes; do
	for f in "$out/$n"-*.txt; do
		awk -v f="$(basename "$f" .txt)" -F'|' '
			/^service /{gsub(/ /, ""); gen[$2] = $4 " " $6}
			/^server during service /{l = $0; sub(/^server during service /, "", l); sub(/:.*/, "", l)
				own = $0; sub(/.*handled in /, "", own); sub(/ \(its.*/, "", own); srv[l] = own}
			END {for (l in gen) print f, l, gen[l], "|", srv[l]}' "$f"
	done
done
