package boltstore

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	bbolt "go.etcd.io/bbolt"

	"github.com/hpa-recommender/hpa-recommender/recommender"
	"github.com/hpa-recommender/hpa-recommender/store"
	"github.com/hpa-recommender/hpa-recommender/store/internal/bounded"
	"github.com/hpa-recommender/hpa-recommender/store/internal/codec"
)

func bump(cur *store.Target) (*store.Target, error) {
	if cur == nil {
		return &store.Target{Spec: recommender.Spec{MaxReplicas: 1}}, nil
	}
	cur.Spec.MaxReplicas++
	return cur, nil
}

// TestStaleHintIsNotTrusted: an update whose cache entry does not carry the stored record's
// revision starts over from the stored record, whatever the entry says.
func TestStaleHintIsNotTrusted(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "hpa.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	k := store.Key{Cluster: "c", Namespace: "ns", Name: "web"}
	var stored *store.Target
	for range 3 {
		if stored, err = s.Update(ctx, k, bump); err != nil {
			t.Fatal(err)
		}
	}
	if stored.Spec.MaxReplicas != 3 {
		t.Fatalf("MaxReplicas %d after 3 bumps", stored.Spec.MaxReplicas)
	}
	ek := codec.EncodeKey(k)
	h, ok := s.hints.GetBytes(ek)
	if !ok || h.rev != stored.Revision || h.t.Spec.MaxReplicas != 3 {
		t.Fatalf("cache entry %+v, %v; want revision %d and MaxReplicas 3", h, ok, stored.Revision)
	}

	for name, bogus := range map[string]hint{
		"older revision":     {rev: stored.Revision - 1, t: &store.Target{Key: k, Spec: recommender.Spec{MaxReplicas: 100}}},
		"newer revision":     {rev: stored.Revision + 5, t: &store.Target{Key: k, Spec: recommender.Spec{MaxReplicas: 200}}},
		"absent, as if none": {rev: 0, t: nil},
	} {
		t.Run(name, func(t *testing.T) {
			want := stored.Spec.MaxReplicas + 1
			if bogus.t == nil {
				s.hints.DeleteBytes(ek)
			} else {
				s.hints.Put(string(ek), hint{rev: bogus.rev, t: bogus.t})
			}
			got, err := s.Update(ctx, k, bump)
			if err != nil {
				t.Fatal(err)
			}
			if got.Spec.MaxReplicas != want {
				t.Errorf("MaxReplicas %d after a bump, want %d: the stale entry was used", got.Spec.MaxReplicas, want)
			}
			stored = got
		})
	}

	// An entry for a record deleted since (behind the store's back, in the file, after a
	// checkpoint emptied the log): the update creates it afresh.
	if err := s.checkpoint(); err != nil {
		t.Fatal(err)
	}
	s.hints.Put(string(ek), hint{rev: stored.Revision, t: stored})
	if err := s.db.Update(func(tx *bbolt.Tx) error { return tx.Bucket(bucketTargets).Delete(ek) }); err != nil {
		t.Fatal(err)
	}
	got, err := s.Update(ctx, k, bump)
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.MaxReplicas != 1 {
		t.Errorf("MaxReplicas %d after recreating, want 1", got.Spec.MaxReplicas)
	}
}

// openCaching opens a store whose cache holds n targets.
func openCaching(t *testing.T, n int) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "hpa.db"), Options{CachedTargets: n})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// hintKey is the i-th target of the cache tests.
func hintKey(i int) store.Key {
	return store.Key{Cluster: "c", Namespace: "ns", Name: fmt.Sprintf("t%d", i)}
}

// isCached reports whether s's cache holds k.
func isCached(s *Store, k store.Key) bool { _, ok := s.hints.GetBytes(codec.EncodeKey(k)); return ok }

// TestHintsBounded: the cache never holds more than its bound; it admits every target while it
// has room, then about one Apply in bounded.AdmitOneIn of a target it does not hold (the others build no
// decoded copy), keeps a target it holds, and Delete drops the entry.
func TestHintsBounded(t *testing.T) {
	s := openCaching(t, 5)
	ctx := t.Context()
	const n = 800
	admitted := 0
	for i := range n {
		if err := s.Apply(ctx, hintKey(i), bump); err != nil {
			t.Fatal(err)
		}
		if l := s.hints.Len(); l > 5 {
			t.Fatalf("%d cache entries after %d targets, bound 5", l, i+1)
		}
		switch {
		case i < 5 && !isCached(s, hintKey(i)):
			t.Fatalf("target %d not cached while the cache had room", i)
		case i >= 5 && isCached(s, hintKey(i)):
			admitted++
		}
	}
	// Binomial(795, 1/8): mean 99, standard deviation 9.3.
	if lo, hi := 50, 150; admitted < lo || admitted > hi {
		t.Fatalf("%d of %d targets missing from a full cache were admitted, want about one in %d", admitted, n-5, bounded.AdmitOneIn)
	}
	var held store.Key
	for i := range n {
		if isCached(s, hintKey(i)) {
			held = hintKey(i)
		}
	}
	// Apply shares the cached target with fn: this one only reads it.
	readOnlyBump := func(cur *store.Target) (*store.Target, error) {
		next := &store.Target{Spec: recommender.Spec{MaxReplicas: 1}}
		if cur != nil {
			next.Spec.MaxReplicas = cur.Spec.MaxReplicas + 1
		}
		return next, nil
	}
	for range 20 {
		if err := s.Apply(ctx, held, readOnlyBump); err != nil {
			t.Fatal(err)
		}
		if !isCached(s, held) {
			t.Fatal("a cached target's update dropped it from the cache")
		}
	}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, held); err != nil {
		t.Fatal(err)
	}
	if isCached(s, held) {
		t.Error("a deleted target is still cached")
	}
}

// TestHintsKeepWhatAwaitsReport: a full cache that admits few misses still keeps the record of
// an Apply that adds a decision awaiting its ReportScale (the next update of that target comes
// within moments); an Apply that adds none is kept only as often as any miss.
func TestHintsKeepWhatAwaitsReport(t *testing.T) {
	s := openCaching(t, 2)
	ctx := t.Context()
	decide := func(id string) store.UpdateFunc {
		return func(cur *store.Target) (*store.Target, error) {
			next := &store.Target{Spec: recommender.Spec{MaxReplicas: 3}}
			if cur != nil {
				next.Pending = slices.Clone(cur.Pending)
			}
			if id != "" {
				next.Pending = append(next.Pending, store.PendingDecision{RecommendationID: id, CurrentReplicas: 1, DesiredReplicas: 2})
			}
			return next, nil
		}
	}
	const n = 200
	for i := range n { // fill the cache, then the targets are misses
		if err := s.Apply(ctx, hintKey(i), decide("")); err != nil {
			t.Fatal(err)
		}
	}
	kept := 0
	for i := range n {
		if err := s.Apply(ctx, hintKey(i), decide("")); err != nil {
			t.Fatal(err)
		}
		if isCached(s, hintKey(i)) {
			kept++
		}
		if err := s.Apply(ctx, hintKey(i), decide(fmt.Sprint("r", i))); err != nil {
			t.Fatal(err)
		}
		if !isCached(s, hintKey(i)) {
			t.Fatalf("target %d: an Apply adding a pending decision left it out of the cache", i)
		}
	}
	// Binomial(200, 1/8) at most, plus the targets left cached by the step before: mean < 27.
	if kept > 60 {
		t.Errorf("%d of %d Applies adding no pending decision were kept, want about one in %d", kept, n, bounded.AdmitOneIn)
	}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestCheckCatchesAModifiedCacheEntry: Apply shares cache entries with fn, which must not modify
// them; Check notices when one did.
func TestCheckCatchesAModifiedCacheEntry(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "hpa.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	k := store.Key{Cluster: "c", Namespace: "ns", Name: "web"}
	for range 2 {
		if err := s.Apply(t.Context(), k, func(cur *store.Target) (*store.Target, error) {
			next := &store.Target{Spec: recommender.Spec{MaxReplicas: 1}}
			if cur != nil {
				next.Spec.MaxReplicas = cur.Spec.MaxReplicas + 1
			}
			return next, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Check(); err != nil {
		t.Fatalf("Check before any harm: %v", err)
	}
	// A misbehaving fn: it modifies the shared target it was given.
	if err := s.Apply(t.Context(), k, func(cur *store.Target) (*store.Target, error) {
		cur.Spec.MaxReplicas = 99
		return nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Check(); err == nil || !strings.Contains(err.Error(), "differs from the stored one") {
		t.Errorf("Check after a cache entry was modified: %v, want it to say so", err)
	}
}
