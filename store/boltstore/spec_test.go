package boltstore

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/hpa-recommender/hpa-recommender/recommender"
	"github.com/hpa-recommender/hpa-recommender/store"
	"github.com/hpa-recommender/hpa-recommender/store/internal/codec"
	"github.com/hpa-recommender/hpa-recommender/store/storetest"
)

// textEqual compares quantities by value and by the text a record holds: Quantity's Equal
// method, which cmp would use, sees only the value.
var textEqual = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 && a.String() == b.String() })

func quantity(s string) *resource.Quantity { q := resource.MustParse(s); return &q }

// TestSpecChanges: a target updated many times, with the same spec (built anew each time, as a
// request carries it) and with each kind of change of storetest.FullSpec, reads back through
// Get as written, before and after the store is reopened. Check after each update verifies the
// cached record against the stored bytes.
func TestSpecChanges(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hpa.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	k := store.Key{Cluster: "c", Namespace: "ns", Name: "web"}
	ek := codec.EncodeKey(k)
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

	same := func(*recommender.Spec) {}
	steps := []struct {
		name   string
		change func(*recommender.Spec)
	}{
		{"first", same},
		{"same", same},
		{"same again", same},
		{"maxReplicas", func(s *recommender.Spec) { s.MaxReplicas++ }},
		{"same", same},
		{"minReplicas unset", func(s *recommender.Spec) { s.MinReplicas = nil }},
		{"minReplicas set", func(s *recommender.Spec) { s.MinReplicas = new(int32) }},
		{"scaleTargetRef", func(s *recommender.Spec) { s.ScaleTargetRef.Name = "web-v2" }},
		{"metric type", func(s *recommender.Spec) { s.Metrics[0].Type = "resource" }},
		{"metric dropped", func(s *recommender.Spec) { s.Metrics = s.Metrics[1:] }},
		{"same", same},
		{"metric added", func(s *recommender.Spec) { s.Metrics = append(s.Metrics, storetest.FullSpec().Metrics[0]) }},
		{"utilization", func(s *recommender.Spec) { *s.Metrics[0].ContainerResource.Target.AverageUtilization = 80 }},
		{"quantity", func(s *recommender.Spec) { s.Metrics[len(s.Metrics)-1].Resource.Target.AverageValue = quantity("9Gi") }},
		{"same, a quantity of the same text in another form", func(s *recommender.Spec) {
			s.Metrics[2].Object.Target.Value = quantity("10000") // String() is "10k"
		}},
		{"quantity of the same value, another text", func(s *recommender.Spec) {
			s.Metrics[2].Object.Target.Value = quantity("+10k") // String() is "+10k"
		}},
		{"quantity whose text does not read back", func(s *recommender.Spec) {
			s.Metrics[2].Object.Target.Value = quantity("62.5Ki") // String() is "64000", which reads back as "64k"
		}},
		{"same, with a text that does not read back", same},
		{"quantity back", func(s *recommender.Spec) { s.Metrics[2].Object.Target.Value = quantity("10k") }},
		{"same", same},
		{"quantity set", func(s *recommender.Spec) { s.Metrics[1].Pods.Target.Value = quantity("2") }},
		{"matchLabels value", func(s *recommender.Spec) { s.Metrics[1].Pods.Metric.Selector.MatchLabels["app"] = "api" }},
		{"matchLabels entry added", func(s *recommender.Spec) { s.Metrics[1].Pods.Metric.Selector.MatchLabels["x"] = "y" }},
		{"matchLabels empty", func(s *recommender.Spec) { s.Metrics[1].Pods.Metric.Selector.MatchLabels = map[string]string{} }},
		{"matchLabels nil, as empty", func(s *recommender.Spec) { s.Metrics[1].Pods.Metric.Selector.MatchLabels = nil }},
		{"matchExpressions values", func(s *recommender.Spec) {
			s.Metrics[2].Object.Metric.Selector.MatchExpressions[0].Values = []string{"b", "a"}
		}},
		{"selector unset", func(s *recommender.Spec) { s.Metrics[2].Object.Metric.Selector = nil }},
		{"selector set, empty", func(s *recommender.Spec) { s.Metrics[3].External.Metric.Selector = &recommender.LabelSelector{} }},
		{"describedObject", func(s *recommender.Spec) { s.Metrics[2].Object.DescribedObject.Kind = "Service" }},
		{"container", func(s *recommender.Spec) { s.Metrics[0].ContainerResource.Container = "sidecar" }},
		{"policy", func(s *recommender.Spec) { s.Behavior.ScaleUp.Policies[1].PeriodSeconds = 30 }},
		{"policies nil", func(s *recommender.Spec) { s.Behavior.ScaleUp.Policies = nil }},
		{"policies empty, as nil", func(s *recommender.Spec) { s.Behavior.ScaleUp.Policies = []recommender.ScalingPolicy{} }},
		{"selectPolicy", func(s *recommender.Spec) { *s.Behavior.ScaleDown.SelectPolicy = recommender.SelectDisabled }},
		{"stabilization window", func(s *recommender.Spec) { s.Behavior.ScaleDown.StabilizationWindowSeconds = nil }},
		{"tolerance", func(s *recommender.Spec) { s.Behavior.ScaleDown.Tolerance = quantity("100m") }},
		{"scaleUp unset", func(s *recommender.Spec) { s.Behavior.ScaleUp = nil }},
		{"behavior unset", func(s *recommender.Spec) { s.Behavior = nil }},
		{"same", same},
		{"everything back", func(s *recommender.Spec) { *s = storetest.FullSpec() }},
		{"same", same},
	}
	for i, step := range steps {
		// The spec as a request carries it: built anew, sharing nothing with the last one.
		spec := storetest.FullSpec()
		for _, st := range steps[:i+1] {
			st.change(&spec)
		}
		written := &store.Target{Spec: spec, LastSeen: t0.Add(time.Duration(i) * time.Second),
			State: recommender.State{History: recommender.History{Recommendations: []recommender.Recommendation{
				{Time: t0.Add(time.Duration(i) * time.Second), Replicas: int32(i)}}}}}
		fn := func(*store.Target) (*store.Target, error) { w := *written; return &w, nil }
		if i%2 == 0 {
			err = s.Apply(t.Context(), k, fn)
		} else {
			_, err = s.Update(t.Context(), k, fn)
		}
		if err != nil {
			t.Fatalf("step %d (%s): %v", i, step.name, err)
		}
		if _, ok := s.hints.GetBytes(ek); !ok {
			t.Fatalf("step %d (%s): not cached", i, step.name)
		}
		// Also after a quantity whose text does not read back: the cached record reads "64k"
		// where the stored one says "64000", as the stored one does once decoded.
		if err := s.Check(); err != nil {
			t.Fatalf("step %d (%s): %v", i, step.name, err)
		}
		want, err := codec.Normalize(written)
		if err != nil {
			t.Fatal(err)
		}
		want.Key = k
		if i%5 == 4 || i == len(steps)-1 { // reopen: Get decodes what the file holds
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if s, err = Open(path, Options{}); err != nil {
				t.Fatal(err)
			}
		}
		got, err := s.Get(t.Context(), k)
		if err != nil {
			t.Fatalf("step %d (%s): %v", i, step.name, err)
		}
		want.Revision = got.Revision
		if d := cmp.Diff(want, got, textEqual); d != "" {
			t.Fatalf("step %d (%s): Get (-written +got):\n%s", i, step.name, d)
		}
	}
}
