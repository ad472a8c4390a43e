#!/usr/bin/env bash
# Made this directory's files (one member each): docs/perf/etcd-ab.sh with MEMBERS 1.
#   docs/perf/pass16-etcd-binary/run.sh OUT OLD-BINARY NEW-BINARY PAIRS TARGETS [hpa-bench flags...]
set -euo pipefail
OUT=$1 OLD=$2 NEW=$3 PAIRS=$4 TARGETS=$5
shift 5
exec "$(dirname "$0")/../etcd-ab.sh" "$OUT" "$OLD" "$NEW" "$PAIRS" 1 "$TARGETS" "$@"
