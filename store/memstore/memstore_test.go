package memstore_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
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

func TestDecisionLog(t *testing.T) {
	storetest.RunDecisionLog(t, func(t *testing.T, limits store.DecisionLogLimits) store.Store {
		s := memstore.NewWithOptions(memstore.Options{DecisionLog: limits})
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
