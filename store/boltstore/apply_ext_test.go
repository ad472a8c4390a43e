package boltstore_test

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/hpa-recommender/hpa-recommender/recommender"
	"github.com/hpa-recommender/hpa-recommender/store"
)

// TestApply: Apply stores what Update would, returns fn's error unchanged and writes nothing
// when fn returns nil.
func TestApply(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "hpa.db"))
	k := store.Key{Cluster: "c", Namespace: "ns", Name: "web"}
	write := func(max int32) store.UpdateFunc {
		return func(*store.Target) (*store.Target, error) {
			return &store.Target{Spec: recommender.Spec{MaxReplicas: max}, LastSeen: time.Unix(7, 0).UTC()}, nil
		}
	}
	if err := s.Apply(t.Context(), k, write(5)); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(t.Context(), k)
	if err != nil || got.Spec.MaxReplicas != 5 {
		t.Fatalf("Get after Apply = %+v, %v; want maxReplicas 5", got, err)
	}
	boom := errors.New("boom")
	if err := s.Apply(t.Context(), k, func(*store.Target) (*store.Target, error) { return nil, boom }); err != boom {
		t.Errorf("Apply returned %v, want fn's error unchanged", err)
	}
	if err := s.Apply(t.Context(), k, func(*store.Target) (*store.Target, error) { return nil, nil }); err != nil {
		t.Fatal(err)
	}
	again, err := s.Get(t.Context(), k)
	if err != nil || again.Revision != got.Revision {
		t.Errorf("after no-op Apply: revision %d, %v; want unchanged %d", again.Revision, err, got.Revision)
	}
	if err := s.Check(); err != nil {
		t.Error(err)
	}
}
