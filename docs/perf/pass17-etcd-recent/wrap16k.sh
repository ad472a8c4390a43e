#!/bin/sh
# NEW with 16,384 records kept (SERVER binary path in NEW_BIN, default /tmp/s20/srv-new).
exec "${NEW_BIN:-/tmp/s20/srv-new}" --etcd-cached-targets 16384 "$@"
