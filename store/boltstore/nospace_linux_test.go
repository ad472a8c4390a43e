package boltstore_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/hpa-recommender/hpa-recommender/internal/testkit/smalldisk"
	"github.com/hpa-recommender/hpa-recommender/store"
	"github.com/hpa-recommender/hpa-recommender/store/boltstore"
	"github.com/hpa-recommender/hpa-recommender/store/storetest"
)

// TestFullDisk fills a real 4 MiB tmpfs with targets until a write fails: the failure is a
// store.NoSpaceError naming the file (errors.Is ErrNoSpace), Ping fails (even after a small
// write that still fits), every target whose write was acknowledged reads back, and once space is freed writes and Ping succeed again;
// after a reopen every acknowledged write is there and the file checks clean.
func TestFullDisk(t *testing.T) {
	dir, child := smalldisk.Dir(t, "4m")
	if !child {
		return // the child process ran the test
	}
	// Room to give back later: more than Ping's probe asks.
	filler := filepath.Join(dir, "filler")
	if err := os.WriteFile(filler, make([]byte, 2<<20), 0o600); err != nil {
		t.Fatal(err)
	}

	path := filepath.Join(dir, "hpa.db")
	s, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	acked := map[store.Key]*store.Target{}
	var full error
	for i := 0; full == nil; i++ {
		if i > 10000 {
			t.Fatal("10,000 targets written to a 4 MiB disk")
		}
		tg := storetest.FixtureTargets()[0]
		tg.Key = store.Key{Cluster: "c", Namespace: "ns", Name: fmt.Sprintf("target-%04d", i)}
		tg.Spec.MaxReplicas = int32(i + 1)
		got, err := s.Update(t.Context(), tg.Key, func(*store.Target) (*store.Target, error) { return tg, nil })
		if err != nil {
			full = err
			continue
		}
		acked[tg.Key] = got
	}
	t.Logf("%d targets written before the disk was full: %v", len(acked), full)
	var ns *store.NoSpaceError
	if !errors.Is(full, store.ErrNoSpace) || !errors.As(full, &ns) || ns.Where != path {
		t.Fatalf("the write on a full disk failed with %v, want a store.NoSpaceError naming %s", full, path)
	}
	if !errors.Is(full, syscall.ENOSPC) {
		t.Errorf("the error does not keep the driver's (%v)", full)
	}
	if len(acked) == 0 {
		t.Fatal("no write succeeded")
	}
	// A small write may still fit, in the pages the failed one gave back; whether it does or
	// not, the disk has no room and Ping says so.
	var small store.Key
	for k := range acked {
		small = k
		break
	}
	if err := s.Delete(t.Context(), small); err == nil {
		delete(acked, small)
	}
	for range 2 { // Ping's own probe does not find room either
		if err := s.Ping(t.Context()); !errors.Is(err, store.ErrNoSpace) {
			t.Errorf("Ping on a full disk = %v, want ErrNoSpace", err)
		}
	}
	check := func(s store.Store) {
		t.Helper()
		for k, want := range acked {
			got, err := s.Get(t.Context(), k)
			if err != nil {
				t.Fatalf("Get(%s): %v", k, err)
			}
			if got.Spec.MaxReplicas != want.Spec.MaxReplicas || got.Revision != want.Revision {
				t.Fatalf("Get(%s) = max %d rev %d, want max %d rev %d", k, got.Spec.MaxReplicas, got.Revision, want.Spec.MaxReplicas, want.Revision)
			}
		}
	}
	check(s)

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if err := s.Ping(t.Context()); err != nil {
		t.Errorf("Ping once there is room: %v", err)
	}
	k := store.Key{Cluster: "c", Namespace: "ns", Name: "after"}
	after, err := s.Update(t.Context(), k, func(*store.Target) (*store.Target, error) { return &store.Target{}, nil })
	if err != nil {
		t.Fatalf("a write once there is room: %v", err)
	}
	acked[k] = after
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	check(s)
	if err := s.Check(); err != nil {
		t.Error(err)
	}
}
