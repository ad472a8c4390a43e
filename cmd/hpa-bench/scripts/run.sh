#!/usr/bin/env bash
# Reproduces every row of docs/PERFORMANCE.md. Run from the repository root:
#   cmd/hpa-bench/scripts/run.sh [out-dir]        (default: /tmp/hpa-bench-results)
# For each configuration it starts a fresh hpa-recommender on 127.0.0.1:50091, drives it with
# hpa-bench (with the no-op baseline: a process of its own since 2026-11-27, in hpa-bench's own
# process before; --baseline-in generator gives that one), and writes <name>.txt (the table) and
# <name>.json (every repeat). ETCD (default: etcd on PATH) serves the etcd rows; unset it to
# skip them. ONLY="name ..." runs just those configurations. Takes about 40 minutes on a 2-core
# machine.
set -euo pipefail
OUT=${1:-/tmp/hpa-bench-results}
ETCD=${ETCD-$(command -v etcd || true)}
mkdir -p "$OUT" bin
go build -o bin/hpa-recommender ./cmd/hpa-recommender
go build -o bin/hpa-bench ./cmd/hpa-bench
DATA=$(mktemp -d)
trap 'rm -rf "$DATA"' EXIT

run() { # name store targets [hpa-bench flags...]
	local name=$1 store=$2 targets=$3
	shift 3
	[[ -z ${ONLY-} || " $ONLY " == *" $name "* ]] || return 0
	local extra=() sf=() sp=()
	[[ $store == etcd ]] && extra=(--etcd-endpoints "$ETCD_ENDPOINTS" --etcd-prefix "/bench-$name") && sp=(--store-pid "$ETCD_PIDS")
	[[ $store == bolt ]] && sf=(--store-file "$DATA/$name.db")
	bin/hpa-recommender --store "$store" --bolt-path "$DATA/$name.db" "${extra[@]}" \
		--metrics-listen '' --listen 127.0.0.1:50091 2>"$DATA/$name.server.log" &
	local pid=$!
	until (echo >/dev/tcp/127.0.0.1/50091) 2>/dev/null; do sleep 0.1; done
	bin/hpa-bench --addr 127.0.0.1:50091 --baseline --server-pid "$pid" "${sf[@]}" "${sp[@]}" --targets "$targets" \
		--quiet --json-out "$OUT/$name.json" "$@" | tee "$OUT/$name.txt"
	kill "$pid"
	wait "$pid" || true
}

run bolt-1k-sweep bolt 1000 --concurrency 1,8,64,256 --duration 5s --warmup 1s --repeat 3
run bolt-1k-open bolt 1000 --concurrency '' --rate 250,500,1000,1500,2000 --duration 5s --warmup 1s --repeat 3
run bolt-10k bolt 10000 --concurrency 64 --rate 2000 --duration 5s --warmup 1s --repeat 3
run bolt-100k bolt 100000 --concurrency 64 --rate 2000 --duration 5s --warmup 1s --repeat 3
# The same with steady demand (no decision scales): rows that differ only in the store's size.
for n in 1k:1000 10k:10000 100k:100000; do
	run "bolt-${n%%:*}-steady" bolt "${n#*:}" --load-swing 0 --concurrency 64 --rate 2000 --duration 5s --warmup 1s --repeat 3
done
# The payload before 2026-11-25: one spec shared by every target (every other row sends a spec
# per target, as HPAs do).
run bolt-10k-sharedspec bolt 10000 --shared-spec --concurrency 64 --rate 2000 --duration 5s --warmup 1s --repeat 3
run bolt-100k-sharedspec bolt 100000 --shared-spec --concurrency 64 --rate 2000 --duration 5s --warmup 1s --repeat 3
run mem-1k memory 1000 --concurrency 64 --rate 2000 --duration 5s --warmup 1s --repeat 3
run mem-10k memory 10000 --concurrency 64 --duration 5s --warmup 1s --repeat 3
run mem-100k memory 100000 --concurrency 64 --duration 5s --warmup 1s --repeat 1
# The no-op baseline as a process of its own (Go's collector pacing, as the service's; its own
# CPU), loaded like the service against the baseline in the generator's process: how much of
# that baseline's lead is the transport and how much the process. (Every other row's baseline is such a process, which
# hpa-bench starts itself since 2026-11-27.)
if [[ -z ${ONLY-} || " $ONLY " == *" noop-process "* ]]; then
	bin/hpa-bench --serve-noop 127.0.0.1:50092 >"$DATA/noop.log" &
	noop_pid=$!
	until (echo >/dev/tcp/127.0.0.1/50092) 2>/dev/null; do sleep 0.1; done
	bin/hpa-bench --addr 127.0.0.1:50092 --baseline --baseline-in generator --server-pid "$noop_pid" --targets 1000 --concurrency 64 \
		--rate 2000 --duration 5s --warmup 1s --repeat 3 --quiet --json-out "$OUT/noop-process.json" | tee "$OUT/noop-process.txt"
	kill "$noop_pid"
	wait "$noop_pid" || true
fi
# shellcheck source=cmd/hpa-bench/scripts/etcd.sh
source "$(dirname "$0")/etcd.sh"
# etcd_row NAME MEMBERS TARGETS [hpa-bench flags...]: one row on an etcd of its own, so that no
# row reads the history an earlier one left (etcd keeps it until compacted).
etcd_row() {
	local name=$1 members=$2
	shift 2
	[[ -z ${ONLY-} || " $ONLY " == *" $name "* ]] || return 0
	start_etcd "$members"
	run "$name" etcd "$@"
	stop_etcd
}
if [[ -n $ETCD ]]; then
	# One member on the same machine: what a single-node etcd costs the service.
	etcd_row etcd-1k 1 1000 --concurrency 64 --rate 2000 --duration 5s --warmup 1s --repeat 3
	etcd_row etcd-10k 1 10000 --concurrency 64 --duration 5s --warmup 1s --repeat 3
	etcd_row etcd-100k 1 100000 --concurrency 64 --duration 5s --warmup 1s --repeat 1
	# Three members, as several replicas share one in production, here on the same two cores:
	# every write is replicated and synced by a quorum of them. Past ~600/s they cannot keep
	# up here, so the open-loop row runs at 500/s.
	etcd_row etcd3-1k 3 1000 --concurrency 64 --rate 500 --duration 5s --warmup 1s --repeat 3
	etcd_row etcd3-10k 3 10000 --concurrency 64 --duration 5s --warmup 1s --repeat 3
fi
