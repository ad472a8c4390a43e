# Sourced (bash) by the scripts beside it: run.sh, etcd-ab.sh, etcd-*.sh. Needs ETCD (the etcd binary) and
# DATA (a scratch directory).
#
# start_etcd N: an etcd cluster of N members on this machine, default fsync, client URLs on
# 127.0.0.1:23790+i, its client endpoints in ETCD_ENDPOINTS and its pids in ETCD_PIDS (both
# comma-separated); it returns once the cluster has a leader. stop_etcd ends it and removes its
# data.
start_etcd() {
	local n=$1 cluster="" i pid
	[[ -x $ETCD ]] || { echo "etcd.sh: ETCD=$ETCD is not an executable (make kube-binaries builds one)" >&2; return 1; }
	ETCD_ENDPOINTS="" ETCD_PIDS=""
	for ((i = 0; i < n; i++)); do cluster+="${cluster:+,}m$i=http://127.0.0.1:$((23890 + i))"; done
	for ((i = 0; i < n; i++)); do
		"$ETCD" --name "m$i" --data-dir "$DATA/etcd-$i" --listen-client-urls "http://127.0.0.1:$((23790 + i))" \
			--advertise-client-urls "http://127.0.0.1:$((23790 + i))" --listen-peer-urls "http://127.0.0.1:$((23890 + i))" \
			--initial-advertise-peer-urls "http://127.0.0.1:$((23890 + i))" --initial-cluster "$cluster" \
			--listen-metrics-urls "http://127.0.0.1:$((23990 + i))" 2>"$DATA/etcd-$i.log" &
		ETCD_PIDS+="${ETCD_PIDS:+,}$!"
		ETCD_ENDPOINTS+="${ETCD_ENDPOINTS:+,}127.0.0.1:$((23790 + i))"
	done
	# A member answers its port before the cluster has a leader; /health says when it has one.
	# A member that exits (a port in use, a bad flag) fails the start instead of a wait forever.
	until curl -fs "http://${ETCD_ENDPOINTS%%,*}/health" | grep -q '"health":"true"'; do
		for pid in ${ETCD_PIDS//,/ }; do
			kill -0 "$pid" 2>/dev/null || { echo "etcd.sh: etcd (pid $pid) exited; its log: $DATA/etcd-*.log" >&2; tail -5 "$DATA"/etcd-*.log >&2; return 1; }
		done
		sleep 0.2
	done
}
stop_etcd() {
	local pid
	for pid in ${ETCD_PIDS//,/ }; do kill "$pid"; done
	for pid in ${ETCD_PIDS//,/ }; do wait "$pid" || true; done
	rm -rf "$DATA"/etcd-*
}
