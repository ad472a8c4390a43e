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

// storeHealth are the metrics of the store's availability as the server sees it, whatever the
// backend: whether it answers the health check's ping, and the calls its errors failed.
type storeHealth struct {
	up     prometheus.Gauge
	errors *prometheus.CounterVec // error
}

// The error label values of hpa_recommender_store_errors_total.
const (
	storeErrUnavailable = "unavailable"
	storeErrNoSpace     = "no_space"
)

func newStoreHealth(reg prometheus.Registerer) (*storeHealth, error) {
	h := &storeHealth{
		up: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "hpa_recommender_store_up",
			Help: "1 while the store answers the server's ping and health is SERVING, else 0 (also while shutting down).",
		}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hpa_recommender_store_errors_total",
			Help: "Calls that failed on the store, by error (unavailable: the store did not answer, the call got Unavailable; no_space: its disk or quota is full, the call got ResourceExhausted).",
		}, []string{"error"}),
	}
	for _, e := range []string{storeErrUnavailable, storeErrNoSpace} {
		h.errors.WithLabelValues(e)
	}
	for _, c := range []prometheus.Collector{h.up, h.errors} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return h, nil
}
