package server

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hpa-recommender/hpa-recommender/store"
)

// storeCollector exports a store's CommitStats on every scrape of /metrics: how many writes
// share a commit (commit writes per commit) and what writing and syncing the file costs.
type storeCollector struct{ r store.CommitReporter }

var (
	storeCommits = prometheus.NewDesc("hpa_recommender_store_commits_total",
		"Write transactions the store committed (bbolt: one batch of writes each, synced).", nil, nil)
	storeCommitWrites = prometheus.NewDesc("hpa_recommender_store_commit_writes_total",
		"Writes the commits carried.", nil, nil)
	storeWriteSeconds = prometheus.NewDesc("hpa_recommender_store_write_seconds_total",
		"Time the commits spent writing their pages to the store's file and syncing them.", nil, nil)
)

func (storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{storeCommits, storeCommitWrites, storeWriteSeconds} {
		ch <- d
	}
}

func (c storeCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.r.CommitStats()
	counter := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
	}
	counter(storeCommits, float64(st.Commits))
	counter(storeCommitWrites, float64(st.Writes))
	counter(storeWriteSeconds, st.WriteTime.Seconds())
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
