package memstore_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hpa-recommender/hpa-recommender/recommender"
	"github.com/hpa-recommender/hpa-recommender/store"
	"github.com/hpa-recommender/hpa-recommender/store/memstore"
	"github.com/hpa-recommender/hpa-recommender/store/storetest"
)

func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s := memstore.New()
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// seenAt returns an UpdateFunc that sets LastSeen to at, on a new target or the current one.
func seenAt(at time.Time) store.UpdateFunc {
	return func(cur *store.Target) (*store.Target, error) {
		if cur == nil {
			cur = &store.Target{Spec: recommender.Spec{MaxReplicas: 3}}
		}
		cur.LastSeen = at
		return cur, nil
	}
}

// TestKeyIndexFollowsWrites checks the lazily sorted key index against a model: targets are
// created, rewritten and deleted one by one and by the TTL sweep, in random order, with lists in
// between, so that a key is removed both while it waits to be merged and after; every list must
// return exactly the targets the model holds, in key order.
func TestKeyIndexFollowsWrites(t *testing.T) {
	s := memstore.New()
	t.Cleanup(func() { _ = s.Close() })
	rng := rand.New(rand.NewPCG(1, 2))
	model := map[store.Key]time.Time{} // key -> LastSeen
	clock := t0
	check := func(step int) {
		t.Helper()
		var want []store.Key
		for k := range model {
			want = append(want, k)
		}
		storetest.SortKeys(want)
		if got := storetest.ListAll(t, s, store.ListOptions{}, 1+rng.IntN(40)); !slices.Equal(got, want) {
			t.Fatalf("step %d: List returned %d targets, want %d: %s", step, len(got), len(want), cmp.Diff(want, got))
		}
	}
	for step := range 3000 {
		clock = clock.Add(time.Second)
		k := store.Key{Cluster: fmt.Sprintf("c%d", rng.IntN(3)), Namespace: "ns", Name: fmt.Sprintf("t%03d", rng.IntN(300))}
		switch op := rng.IntN(100); {
		case op < 60:
			if _, err := s.Update(t.Context(), k, seenAt(clock)); err != nil {
				t.Fatal(err)
			}
			model[k] = clock
		case op < 85:
			err := s.Delete(t.Context(), k)
			if _, ok := model[k]; ok != (err == nil) {
				t.Fatalf("step %d: Delete(%s) = %v with the target stored: %v", step, k, err, ok)
			}
			delete(model, k)
		case op < 88:
			cutoff := clock.Add(-time.Duration(rng.IntN(600)) * time.Second)
			n, err := s.DeleteUnseenSince(t.Context(), cutoff)
			if err != nil {
				t.Fatal(err)
			}
			want := 0
			for k, seen := range model {
				if seen.Before(cutoff) {
					delete(model, k)
					want++
				}
			}
			if n != want {
				t.Fatalf("step %d: DeleteUnseenSince removed %d, want %d", step, n, want)
			}
		default:
			check(step)
		}
	}
	check(-1)
}

// TestApplyWritesWhatUpdateWrites checks that Apply stores what Update stores.
func TestApplyWritesWhatUpdateWrites(t *testing.T) {
	s := memstore.New()
	t.Cleanup(func() { _ = s.Close() })
	spec := storetest.FullSpec()
	fn := func(cur *store.Target) (*store.Target, error) {
		if cur == nil {
			cur = &store.Target{}
		}
		cur.Spec = spec
		cur.LastSeen = cur.LastSeen.Add(time.Minute)
		cur.Reported = append(cur.Reported, fmt.Sprint(len(cur.Reported)))
		return cur, nil
	}
	a := store.Key{Cluster: "c", Namespace: "ns", Name: "applied"}
	u := store.Key{Cluster: "c", Namespace: "ns", Name: "updated"}
	for range 3 {
		if err := s.Apply(t.Context(), a, fn); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Update(t.Context(), u, fn); err != nil {
			t.Fatal(err)
		}
	}
	ga, err := s.Get(t.Context(), a)
	if err != nil {
		t.Fatal(err)
	}
	gu, err := s.Get(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	if ga.Revision != gu.Revision-1 {
		t.Errorf("revisions %d (applied) and %d (updated): want consecutive, the last writes", ga.Revision, gu.Revision)
	}
	ga.Key, ga.Revision = gu.Key, gu.Revision
	if d := cmp.Diff(gu, ga); d != "" {
		t.Errorf("Apply stored something else than Update (-updated +applied):\n%s", d)
	}
	if len(ga.Reported) != 3 {
		t.Errorf("Reported %v after three writes, want three entries", ga.Reported)
	}
}

// BenchmarkUpdateManyTargets is the server's write pattern on the memory store: 64 writers, each
// rewriting a random one of 10,000 targets that carry a full spec.
func BenchmarkUpdateManyTargets(b *testing.B) {
	for _, apply := range []bool{false, true} {
		b.Run(fmt.Sprintf("apply=%v", apply), func(b *testing.B) {
			const targets = 10000
			s := memstore.New()
			b.Cleanup(func() { _ = s.Close() })
			spec := storetest.FullSpec()
			var clock atomic.Int64
			fn := func(cur *store.Target) (*store.Target, error) {
				next := &store.Target{Spec: spec, LastSeen: t0.Add(time.Duration(clock.Add(1)))}
				if cur != nil {
					next.State = cur.State
				}
				return next, nil
			}
			key := func(i int) store.Key {
				return store.Key{Cluster: "bench", Namespace: "ns", Name: fmt.Sprintf("t%d", i)}
			}
			write := func(k store.Key) error {
				if apply {
					return s.Apply(b.Context(), k, fn)
				}
				_, err := s.Update(b.Context(), k, fn)
				return err
			}
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
		})
	}
}
