package codec

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/hpa-recommender/hpa-recommender/recommender"
	"github.com/hpa-recommender/hpa-recommender/store"
)

// benchTarget is a record shaped like hpa-bench's targets after a few decisions: a CPU
// utilization and an External metric with a selector, a behavior with policies, three
// conditions, a short history (pruning keeps one: dropDominated), one pending decision.
func benchTarget() *store.Target {
	now := time.Date(2026, 11, 27, 12, 0, 0, 123456789, time.UTC)
	q := func(s string) *resource.Quantity { v := resource.MustParse(s); return &v }
	i32 := func(v int32) *int32 { return &v }
	conds := []recommender.Condition{
		{Type: "AbleToScale", Status: "True", Reason: "ReadyForNewScale", Message: "recommended size matches current size", LastTransitionTime: now},
		{Type: "ScalingActive", Status: "True", Reason: "ValidMetricFound", Message: "the HPA was able to successfully calculate a replica count from cpu resource utilization (percentage of request)", LastTransitionTime: now},
		{Type: "ScalingLimited", Status: "False", Reason: "DesiredWithinRange", Message: "the desired count is within the acceptable range", LastTransitionTime: now},
	}
	t := &store.Target{
		Key: store.Key{Cluster: "bench", Namespace: "bench", Name: "web-00042"},
		Spec: recommender.Spec{
			ScaleTargetRef: recommender.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web-00042"},
			MinReplicas:    i32(2), MaxReplicas: 50,
			Metrics: []recommender.MetricSpec{
				{Type: "Resource", Resource: &recommender.ResourceMetricSource{Name: "cpu",
					Target: recommender.MetricTarget{Type: "Utilization", AverageUtilization: i32(60)}}},
				{Type: "External", External: &recommender.ExternalMetricSource{
					Metric: recommender.MetricIdentifier{Name: "queue_depth", Selector: &recommender.LabelSelector{
						MatchLabels: map[string]string{"queue": "orders", "tier": "gold"}}},
					Target: recommender.MetricTarget{Type: "AverageValue", AverageValue: q("30")}}},
			},
			Behavior: &recommender.Behavior{
				ScaleUp: &recommender.ScalingRules{StabilizationWindowSeconds: i32(0), Policies: []recommender.ScalingPolicy{
					{Type: "Percent", Value: 100, PeriodSeconds: 15}, {Type: "Pods", Value: 4, PeriodSeconds: 15}}},
				ScaleDown: &recommender.ScalingRules{StabilizationWindowSeconds: i32(300), Policies: []recommender.ScalingPolicy{
					{Type: "Percent", Value: 10, PeriodSeconds: 60}}},
			},
		},
		State:    recommender.State{Seeded: true, Conditions: conds},
		Pending:  []store.PendingDecision{{RecommendationID: "01JQ7Z3K8W", Time: now, CurrentReplicas: 8, DesiredReplicas: 10}},
		Reported: []string{"01JQ7Z3K8A", "01JQ7Z3K8B"},
		LastDecision: &store.LastDecision{RecommendationID: "01JQ7Z3K8W", Decision: recommender.Decision{
			Time: now, CurrentReplicas: 8, DesiredReplicas: 10, Conditions: conds,
			CurrentMetrics: []recommender.MetricStatus{
				{Type: "Resource", Resource: &recommender.ResourceMetricStatus{Name: "cpu",
					Current: recommender.MetricValueStatus{AverageValue: q("412m"), AverageUtilization: i32(74)}}},
				{Type: "External", External: &recommender.ExternalMetricStatus{
					Metric:  recommender.MetricIdentifier{Name: "queue_depth", Selector: &recommender.LabelSelector{MatchLabels: map[string]string{"queue": "orders", "tier": "gold"}}},
					Current: recommender.MetricValueStatus{AverageValue: q("37500m")}}},
			},
			Explanation: recommender.Explanation{Message: "scale up to 10: cpu above target", WinningMetric: 0, Proposal: 10, Stabilized: 10,
				Final: 10, Metrics: []recommender.MetricExplanation{{Index: 0, Name: "cpu", Proposal: 10, UsageRatio: 1.23, ReadyPods: 8},
					{Index: 1, Name: "queue_depth", Proposal: 10, UsageRatio: 1.25}}},
		}},
		LastSeen: now, FirstSeen: now.Add(-time.Hour),
	}
	for i := range 4 {
		t.State.History.Recommendations = append(t.State.History.Recommendations,
			recommender.Recommendation{Time: now.Add(-time.Duration(i) * 15 * time.Second), Replicas: 8 + int32(i%3)})
	}
	for i := range 3 {
		t.State.History.ScaleUpEvents = append(t.State.History.ScaleUpEvents,
			recommender.ScaleEvent{Time: now.Add(-time.Duration(i) * time.Minute), Change: 2})
	}
	return t
}

// BenchmarkMarshal is a write's encoding.
func BenchmarkMarshal(b *testing.B) {
	t := benchTarget()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Marshal(t, 7); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUnmarshal is a read's decoding.
func BenchmarkUnmarshal(b *testing.B) {
	rec, err := Marshal(benchTarget(), 7)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := Unmarshal(rec); err != nil {
			b.Fatal(err)
		}
	}
}
