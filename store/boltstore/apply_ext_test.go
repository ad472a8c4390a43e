package boltstore_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
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

// TestGroupCommitIsolatesFailures: among concurrent writers sharing commits, a write whose
// function fails returns its error alone and every other write commits.
func TestGroupCommitIsolatesFailures(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "hpa.db"))
	const writers = 32
	errs := make(chan error, writers)
	for i := range writers {
		go func() {
			k := store.Key{Cluster: "c", Namespace: "ns", Name: fmt.Sprintf("t%d", i)}
			_, err := s.Update(t.Context(), k, func(*store.Target) (*store.Target, error) {
				if i == 7 {
					return nil, errors.New("boom")
				}
				return &store.Target{Spec: recommender.Spec{MaxReplicas: int32(i)}}, nil
			})
			errs <- err
		}()
	}
	failed := 0
	for range writers {
		if err := <-errs; err != nil {
			failed++
			if !strings.Contains(err.Error(), "boom") {
				t.Errorf("failed write: %v, want fn's error", err)
			}
		}
	}
	if failed != 1 {
		t.Errorf("%d writes failed, want only the panicking one", failed)
	}
	for i := range writers {
		_, err := s.Get(t.Context(), store.Key{Cluster: "c", Namespace: "ns", Name: fmt.Sprintf("t%d", i)})
		if (err != nil) != (i == 7) {
			t.Errorf("Get(t%d): %v", i, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	_, err := s.Update(t.Context(), store.Key{Cluster: "c", Namespace: "ns", Name: "late"}, func(*store.Target) (*store.Target, error) {
		return &store.Target{}, nil
	})
	if !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Update after Close: %v, want ErrUnavailable", err)
	}
}
