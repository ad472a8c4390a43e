package boltstore_test

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/hpa-recommender/hpa-recommender/recommender"
	"github.com/hpa-recommender/hpa-recommender/store"
	"github.com/hpa-recommender/hpa-recommender/store/boltstore"
)

func bump(cur *store.Target) (*store.Target, error) {
	if cur == nil {
		cur = &store.Target{}
	}
	cur.Spec.MaxReplicas++
	return cur, nil
}

// BenchmarkUpdateParallel measures group commit: concurrent Updates, each goroutine on its own
// key, fsync on. With 2 CPUs, SetParallelism(32) gives 64 writers, one full batch.
func BenchmarkUpdateParallel(b *testing.B) {
	benchWriters(b, []int{1, 8, 32}, func(s *boltstore.Store, k store.Key) error {
		_, err := s.Update(b.Context(), k, bump)
		return err
	})
}

// benchWriters runs a sub-benchmark for each parallelism of pars, in which writers, each on its
// own key of a new store, call write.
func benchWriters(b *testing.B, pars []int, write func(s *boltstore.Store, k store.Key) error) {
	for _, par := range pars {
		b.Run(fmt.Sprintf("writers=%dxGOMAXPROCS", par), func(b *testing.B) {
			s, err := boltstore.Open(filepath.Join(b.TempDir(), "bench.db"), boltstore.Options{})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = s.Close() })
			var next atomic.Int64
			b.SetParallelism(par)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				k := store.Key{Cluster: "bench", Namespace: "ns", Name: fmt.Sprintf("t%d", next.Add(1))}
				for pb.Next() {
					if err := write(s, k); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkApplySameSpec is BenchmarkUpdateParallel as the server writes: Apply, a full spec that
// stays the same from one write to the next (every Recommend carries it), shared between the
// writers as the server's spec cache shares it, and a state that changes.
func BenchmarkApplySameSpec(b *testing.B) {
	spec := benchSpec()
	benchWriters(b, []int{1, 32}, func(s *boltstore.Store, k store.Key) error {
		return s.Apply(b.Context(), k, sameSpecWrite(spec))
	})
}

// sameSpecWrite is an UpdateFunc as the server's: spec unchanged, one more recommendation in a
// history of at most 30, cur only read.
func sameSpecWrite(spec *recommender.Spec) store.UpdateFunc {
	return func(cur *store.Target) (*store.Target, error) {
		n := &store.Target{Spec: *spec, LastSeen: time.Unix(1, 0)}
		if cur != nil {
			n.State, n.LastSeen = cur.State, cur.LastSeen.Add(time.Second)
		}
		n.State.History.Recommendations = append(slices.Clone(n.State.History.Recommendations),
			recommender.Recommendation{Time: n.LastSeen, Replicas: 3})[max(0, len(n.State.History.Recommendations)-29):]
		return n, nil
	}
}

// benchSpec is a spec as an HPA with a few metrics and a behavior has it.
func benchSpec() *recommender.Spec {
	q := func(s string) *resource.Quantity { v := resource.MustParse(s); return &v }
	i32 := func(v int32) *int32 { return &v }
	policy := recommender.SelectMax
	return &recommender.Spec{
		ScaleTargetRef: recommender.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "checkout-api"},
		MinReplicas:    i32(2), MaxReplicas: 50,
		Metrics: []recommender.MetricSpec{
			{Type: recommender.MetricResource, Resource: &recommender.ResourceMetricSource{Name: "cpu",
				Target: recommender.MetricTarget{Type: recommender.TargetUtilization, AverageUtilization: i32(70)}}},
			{Type: recommender.MetricPods, Pods: &recommender.PodsMetricSource{
				Metric: recommender.MetricIdentifier{Name: "http_requests_per_second", Selector: &recommender.LabelSelector{
					MatchLabels: map[string]string{"app": "checkout", "tier": "api"}}},
				Target: recommender.MetricTarget{Type: recommender.TargetAverageValue, AverageValue: q("250m")}}},
			{Type: recommender.MetricExternal, External: &recommender.ExternalMetricSource{
				Metric: recommender.MetricIdentifier{Name: "queue_depth"},
				Target: recommender.MetricTarget{Type: recommender.TargetValue, Value: q("30")}}},
		},
		Behavior: &recommender.Behavior{
			ScaleUp: &recommender.ScalingRules{SelectPolicy: &policy,
				Policies: []recommender.ScalingPolicy{{Type: recommender.PolicyPods, Value: 4, PeriodSeconds: 15}}},
			ScaleDown: &recommender.ScalingRules{StabilizationWindowSeconds: i32(300), Tolerance: q("50m"),
				Policies: []recommender.ScalingPolicy{{Type: recommender.PolicyPercent, Value: 10, PeriodSeconds: 60}}},
		},
	}
}

// BenchmarkApplyManyTargets is BenchmarkApplySameSpec over ten times more targets than the
// record cache holds (10,000 against the default 1,000), each write on a random one, 32
// writers per CPU: most updates miss the cache, as at 10k targets and more.
func BenchmarkApplyManyTargets(b *testing.B) {
	const targets = 10000
	spec := benchSpec()
	s, err := boltstore.Open(filepath.Join(b.TempDir(), "bench.db"), boltstore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	key := func(i int) store.Key {
		return store.Key{Cluster: "bench", Namespace: "ns", Name: fmt.Sprintf("t%d", i)}
	}
	write := func(k store.Key) error { return s.Apply(b.Context(), k, sameSpecWrite(spec)) }
	for i := range targets {
		if err := write(key(i)); err != nil {
			b.Fatal(err)
		}
	}
	b.SetParallelism(32)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := write(key(rand.N(targets))); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
