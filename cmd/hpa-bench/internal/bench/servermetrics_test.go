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
