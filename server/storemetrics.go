package server

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hpa-recommender/hpa-recommender/store"
)

// storeCollector exports a store's Stats on every scrape of /metrics: whether a fleet fits in
// the bbolt store's write-ahead log (log targets against their limit), how many writes share
// a sync (commit writes per commit), what the commits and the log's syncs take, and what the
// checkpoints copy and cost.
type storeCollector struct{ r store.StatsReporter }

var (
	storeTargets = prometheus.NewDesc("hpa_recommender_store_targets",
		"Targets stored.", nil, nil)
	storeLogTargets = prometheus.NewDesc("hpa_recommender_store_log_targets",
		"Distinct targets whose latest write waits in the store's write-ahead log.", nil, nil)
	storeLogTargetsLimit = prometheus.NewDesc("hpa_recommender_store_log_targets_limit",
		"Distinct targets that may wait in the write-ahead log before a checkpoint copies them into the store's file (--bolt-log-targets).", nil, nil)
	storeCommits = prometheus.NewDesc("hpa_recommender_store_commits_total",
		"Group commits: one write-ahead log write and sync each.", nil, nil)
	storeCommitWrites = prometheus.NewDesc("hpa_recommender_store_commit_writes_total",
		"Writes the group commits carried.", nil, nil)
	storeCommitSeconds = prometheus.NewDesc("hpa_recommender_store_commit_seconds_total",
		"Time the group commits took, from checking their writes to answering them.", nil, nil)
	storeSyncSeconds = prometheus.NewDesc("hpa_recommender_store_log_sync_seconds_total",
		"Time the group commits spent writing the write-ahead log and syncing it (fdatasync), part of their time.", nil, nil)
	storeCheckpoints = prometheus.NewDesc("hpa_recommender_store_checkpoints_total",
		"Checkpoints that copied the write-ahead log into the store's file.", nil, nil)
	storeCheckpointRecords = prometheus.NewDesc("hpa_recommender_store_checkpoint_records_total",
		"Records the checkpoints copied.", nil, nil)
	storeCheckpointSeconds = prometheus.NewDesc("hpa_recommender_store_checkpoint_seconds_total",
		"Time the checkpoints took, their pauses included.", nil, nil)
)

func (storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{storeTargets, storeLogTargets, storeLogTargetsLimit, storeCommits,
		storeCommitWrites, storeCommitSeconds, storeSyncSeconds, storeCheckpoints, storeCheckpointRecords, storeCheckpointSeconds} {
		ch <- d
	}
}

func (c storeCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.r.Stats()
	gauge := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
	counter := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
	}
	gauge(storeTargets, float64(st.Targets))
	gauge(storeLogTargets, float64(st.LogTargets))
	gauge(storeLogTargetsLimit, float64(st.LogTargetsLimit))
	counter(storeCommits, float64(st.Commits))
	counter(storeCommitWrites, float64(st.CommitWrites))
	counter(storeCommitSeconds, st.CommitTime.Seconds())
	counter(storeSyncSeconds, st.SyncTime.Seconds())
	counter(storeCheckpoints, float64(st.Checkpoints))
	counter(storeCheckpointRecords, float64(st.CheckpointRecords))
	counter(storeCheckpointSeconds, st.CheckpointTime.Seconds())
}

// compactionCollector exports a store's CompactionStats on every scrape of /metrics: whether
// the etcd store's compactions succeed (an etcd never compacted fills its space quota).
type compactionCollector struct{ r store.CompactionReporter }

var (
	storeCompactions = prometheus.NewDesc("hpa_recommender_store_compactions_total",
		"Compactions of the store's history this process asked for (etcd, --etcd-compaction-interval), by result.", []string{"result"}, nil)
	storeCompactedRevision = prometheus.NewDesc("hpa_recommender_store_compacted_revision",
		"The revision this process last compacted the store's history to (0: none yet).", nil, nil)
)

func (compactionCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- storeCompactions
	ch <- storeCompactedRevision
}

func (c compactionCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.r.CompactionStats()
	ch <- prometheus.MustNewConstMetric(storeCompactions, prometheus.CounterValue, float64(st.Compactions), "done")
	ch <- prometheus.MustNewConstMetric(storeCompactions, prometheus.CounterValue, float64(st.Failures), "failed")
	ch <- prometheus.MustNewConstMetric(storeCompactedRevision, prometheus.GaugeValue, float64(st.Revision))
}
