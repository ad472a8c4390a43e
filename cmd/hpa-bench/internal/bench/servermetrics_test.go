package bench

import (
	"testing"
	"time"
)

// TestServerLatencyFromBuckets: the quantiles are interpolated within the histogram's buckets
// between two readings, as histogram_quantile does; beyond the last finite bound they are that
// bound; the share within 5 ms is read off its bucket; lines of other methods do not count.
func TestServerLatencyFromBuckets(t *testing.T) {
	before := map[string]float64{"recommend_le=0.001": 10, "recommend_le=0.005": 10, "recommend_le=0.01": 10, "recommend_le=+Inf": 10}
	after := map[string]float64{"recommend_le=0.001": 60, "recommend_le=0.005": 100, "recommend_le=0.01": 110, "recommend_le=+Inf": 110, "commits_total": 3}
	got := serverLatency(before, after)
	// 100 calls: 50 within 1 ms, 40 more within 5 ms, 10 more within 10 ms.
	want := &ServerLatency{Count: 100, P50: time.Millisecond, P99: 9500 * time.Microsecond, Within5ms: 0.9}
	if got == nil || got.Count != want.Count || got.P50 != want.P50 || got.P99 != want.P99 || got.Within5ms != want.Within5ms {
		t.Errorf("serverLatency = %+v, want %+v", got, want)
	}

	slow := serverLatency(nil, map[string]float64{"recommend_le=0.005": 0, "recommend_le=10": 1, "recommend_le=+Inf": 4})
	if slow == nil || slow.P50 != 10*time.Second || slow.P99 != 10*time.Second || slow.Within5ms != 0 {
		t.Errorf("calls beyond the last bound: %+v, want p50 = p99 = 10s, none within 5 ms", slow)
	}
	if got := serverLatency(after, after); got != nil {
		t.Errorf("no call between the readings: %+v, want nil", got)
	}
	if got := serverLatency(nil, map[string]float64{"commits_total": 5}); got != nil {
		t.Errorf("a page without the histogram: %+v, want nil", got)
	}
	for name, want := range map[string]string{
		`grpc_server_handling_seconds_bucket{grpc_method="Recommend",grpc_service="recommender.v1.RecommenderService",grpc_type="unary",le="0.005"}`:   "recommend_le=0.005",
		`grpc_server_handling_seconds_bucket{grpc_method="Recommend",grpc_service="recommender.v1.RecommenderService",grpc_type="unary",le="+Inf"}`:    "recommend_le=+Inf",
		`grpc_server_handling_seconds_bucket{grpc_method="ReportScale",grpc_service="recommender.v1.RecommenderService",grpc_type="unary",le="0.005"}`: "",
		`grpc_server_handling_seconds_sum{grpc_method="Recommend",grpc_service="recommender.v1.RecommenderService",grpc_type="unary"}`:                 "",
	} {
		if got, _ := recommendBucket(name); got != want {
			t.Errorf("recommendBucket(%s) = %q, want %q", name, got, want)
		}
	}
}

// TestStoreRunFromCounters: the store's figures are the counters' growth between two readings:
// writes per commit, a commit's write time, that time per write and its share of the time
// between the readings; a page without the store's counters (the memory and etcd stores')
// gives none, and a run without a commit gives counts but no ratios.
func TestStoreRunFromCounters(t *testing.T) {
	before := map[string]float64{"commits_total": 100, "commit_writes_total": 900, "write_seconds_total": 1.5}
	after := map[string]float64{"commits_total": 150, "commit_writes_total": 1300, "write_seconds_total": 1.75}
	got := storeRun(before, after, time.Second)
	// 50 commits carried 400 writes in 250 ms of writing and syncing, over a second.
	want := StoreRun{Writes: 400, Commits: 50, WritesPerCommit: 8, CommitWrite: 5 * time.Millisecond,
		WritePerWrite: 625 * time.Microsecond, WriteBusy: 0.25}
	if got == nil || *got != want {
		t.Errorf("storeRun = %+v, want %+v", got, want)
	}
	if got := storeRun(map[string]float64{"recommend_le=+Inf": 1}, map[string]float64{"recommend_le=+Inf": 2}, time.Second); got != nil {
		t.Errorf("a page without the store's counters: %+v, want nil", got)
	}
	if got := storeRun(after, after, time.Second); got == nil || *got != (StoreRun{}) {
		t.Errorf("no commit between the readings: %+v, want zero figures", got)
	}
}
