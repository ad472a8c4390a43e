#!/usr/bin/env bash
# What one replica's look for unseen targets (--target-ttl) costs while nothing else happens:
# a fresh store (STORE=etcd: a one-member etcd; STORE=bolt: a bbolt file), the service on it
# (its flags: SRVFLAGS, e.g. "--target-ttl 0" to switch the looks off), TARGETS targets written
# once (default 100000), then IDLE seconds (default 125) without calls; prints the CPU etcd and
# the service used in them. Run from the repository root after building bin/hpa-recommender and
# bin/hpa-bench (docs/perf/run.sh builds both).
set -euo pipefail
STORE=${STORE:-etcd}
ETCD=${ETCD:-$HOME/.cache/hpa-recommender/etcd-v3.6.16/etcd}
DATA=$(mktemp -d)
trap 'rm -rf "$DATA"' EXIT
# shellcheck source=docs/perf/etcd.sh
source "$(dirname "$0")/../etcd.sh"
store=(--store bolt --bolt-path "$DATA/x.db")
if [[ $STORE == etcd ]]; then
	start_etcd 1
	store=(--store etcd --etcd-endpoints "$ETCD_ENDPOINTS")
fi
# shellcheck disable=SC2086
bin/hpa-recommender "${store[@]}" --metrics-listen '' --listen 127.0.0.1:50091 ${SRVFLAGS:-} 2>"$DATA/server.log" &
pid=$!
until (echo >/dev/tcp/127.0.0.1/50091) 2>/dev/null; do sleep 0.1; done
bin/hpa-bench --addr 127.0.0.1:50091 --targets "${TARGETS:-100000}" --concurrency 1 --duration 100ms --warmup 0s \
	--repeat 1 --loopback-probe 0 --disk-probe 0 --quiet >/dev/null
ticks() { [[ -z $1 ]] && echo 0 || awk '{print $14+$15}' "/proc/$1/stat"; }
e0=$(ticks "${ETCD_PIDS-}") s0=$(ticks "$pid") t0=$(date +%s)
sleep "${IDLE:-125}"
e1=$(ticks "${ETCD_PIDS-}") s1=$(ticks "$pid") t1=$(date +%s)
echo "$STORE ${SRVFLAGS:-}: $((t1 - t0)) s idle: etcd CPU $(((e1 - e0) * 10)) ms, service CPU $(((s1 - s0) * 10)) ms"
kill "$pid"
wait "$pid" || true
[[ $STORE == etcd ]] && stop_etcd
true
