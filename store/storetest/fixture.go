package storetest

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/hpa-recommender/hpa-recommender/recommender"
	"github.com/hpa-recommender/hpa-recommender/store"
)

// FixtureTargets returns the targets of the backends' legacy fixtures: testdata files that an
// older release wrote (the bbolt file and its log, etcd values), which each backend must still
// read back as exactly these targets (normalized as a store returns them). A new one each call;
// the list must never change, or the fixtures no longer hold what it says.
func FixtureTargets() []*store.Target {
	var ts []*store.Target
	add := func(name string, edit func(*store.Target)) {
		tg := fullTarget(store.Key{Cluster: "fixture", Namespace: "ns", Name: name})
		if edit != nil {
			edit(tg)
		}
		ts = append(ts, tg)
	}
	add("full", nil)
	add("no-decision", func(t *store.Target) { t.LastDecision = nil; t.Pending = nil; t.Reported = nil })
	add("empty", func(t *store.Target) { *t = store.Target{Key: t.Key, LastSeen: t0} })
	add("sep/arators\x00and ünïcode", func(t *store.Target) { t.Spec.Behavior = nil })
	add("quantities", func(t *store.Target) {
		// Quantities whose canonical form differs from the text they were parsed from.
		odd := resource.MustParse("62.5Ki")
		t.Spec.Metrics[0].Resource.Target.AverageValue = &odd
		big := resource.MustParse("9223372036854775807m")
		t.Spec.Metrics[4].External.Target.Value = &big
		t.LastDecision.Decision.Explanation.Metrics[0].UsageRatio = 1.0 / 3
	})
	add("own-conditions", func(t *store.Target) {
		// The decision's conditions differ from the state's.
		t.LastDecision.Decision.Conditions = []recommender.Condition{{Type: recommender.ConditionScalingActive,
			Status: recommender.StatusFalse, Reason: "FailedGetResourceMetric", Message: "x",
			LastTransitionTime: t0.Add(-3 * time.Second)}}
	})
	for i := range 20 {
		add(fmt.Sprintf("many-%02d", i), func(t *store.Target) {
			t.Spec.MaxReplicas = int32(20 + i)
			t.LastSeen = t0.Add(time.Duration(i) * time.Second)
			t.LastDecision.Decision.DesiredReplicas = int32(i)
		})
	}
	return ts
}
