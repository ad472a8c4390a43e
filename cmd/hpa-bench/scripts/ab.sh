#!/usr/bin/env bash
# Paired runs of two server builds, alternating, driven by one hpa-bench build: how a change
# is told from the machine's hour. Run from the repository root:
#   cmd/hpa-bench/scripts/ab.sh OLD_BIN NEW_BIN OUT_DIR TARGETS PAIRS [hpa-bench flags...]
# e.g. (10k targets, three pairs):
#   git worktree add /tmp/old 8d5bc1a && (cd /tmp/old && go build -o /tmp/srv-old ./cmd/hpa-recommender)
#   go build -o /tmp/srv-new ./cmd/hpa-recommender
#   cmd/hpa-bench/scripts/ab.sh /tmp/srv-old /tmp/srv-new /tmp/ab 10000 3 --concurrency 64 --rate 2000 --duration 8s --warmup 2s --repeat 1
# Within a pair the order alternates: old first in odd pairs, new first in even ones.
# STORE=memory runs both builds with --store memory instead (no file, no disk probe).
# Each run starts a fresh server (bbolt in a temporary directory) on 127.0.0.1:50091 and writes
# OUT_DIR/{old,new}-TARGETS-PAIR.{txt,json}; the service and baseline rows are echoed, and a
# summary line per run at the end.
set -euo pipefail
[[ $# -ge 5 ]] || { sed -n 2,9p "$0" >&2; exit 2; }
old=$1 new=$2 out=$3 targets=$4 pairs=$5
shift 5
mkdir -p "$out" bin
go build -o bin/hpa-bench ./cmd/hpa-bench
for p in $(seq 1 "$pairs"); do
	# Alternate which build runs first (old, new; new, old; ...), so that a drift of the
	# machine within a pair does not always favour one side.
	order="old new"
	[[ $((p % 2)) == 0 ]] && order="new old"
	for b in $order; do
		srv=$old
		[[ $b == new ]] && srv=$new
		d=$(mktemp -d)
		storeflags=(--store bolt --bolt-path "$d/x.db")
		benchflags=(--store-file "$d/x.db")
		if [[ ${STORE:-bolt} == memory ]]; then
			storeflags=(--store memory)
			benchflags=()
		fi
		"$srv" "${storeflags[@]}" --metrics-listen 127.0.0.1:50092 --listen 127.0.0.1:50091 2>"$d/server.log" &
		pid=$!
		until (echo >/dev/tcp/127.0.0.1/50091) 2>/dev/null; do sleep 0.1; done
		bin/hpa-bench --addr 127.0.0.1:50091 --baseline --server-pid "$pid" "${benchflags[@]}" --server-metrics http://127.0.0.1:50092/metrics --targets "$targets" \
			--quiet --json-out "$out/$b-$targets-$p.json" "$@" >"$out/$b-$targets-$p.txt"
		kill "$pid"
		wait "$pid" || true
		rm -rf "$d"
		echo "== $b, pair $p"
		grep -E '^(service|baseline)' "$out/$b-$targets-$p.txt"
	done
done
# Summary, one line per run: the service at 64 callers (throughput, CPU per call, × baseline,
# RSS) and its p99 at 2,000/s, when the flags asked for those rows.
echo "== summary (service at c=64: rps, CPU/call, × baseline, RSS; p99 at rate=2000)"
for f in "$out"/old-"$targets"-*.txt "$out"/new-"$targets"-*.txt; do
	awk -F'|' -v f="$(basename "$f" .txt)" '
		/^service *\|c=64 /{gsub(/ /, ""); r = $3; cpu = $11; x = $15; rss = $12}
		/^service *\|rate=2000 /{gsub(/ /, ""); p99 = $6}
		END {print f, r "/s", cpu, x, rss, "p99@2000", p99}' "$f"
done
