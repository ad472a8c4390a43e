package boltstore_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/hpa-recommender/hpa-recommender/recommender"
	"github.com/hpa-recommender/hpa-recommender/store"
	"github.com/hpa-recommender/hpa-recommender/store/boltstore"
	"github.com/hpa-recommender/hpa-recommender/store/internal/codec"
	"github.com/hpa-recommender/hpa-recommender/store/storetest"
)

func open(t *testing.T, path string) *boltstore.Store {
	t.Helper()
	s, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestStore runs the suite with the default batching, and with batches of one write (each
// Update its own transaction, as bbolt's retry of a failed batch runs them).
func TestStore(t *testing.T) {
	for _, opts := range []boltstore.Options{{}, {MaxBatchSize: 1}} {
		t.Run(fmt.Sprintf("batch=%d", opts.MaxBatchSize), func(t *testing.T) {
			storetest.Run(t, func(t *testing.T) store.Store {
				// A parent directory that does not exist yet: Open creates it.
				path := filepath.Join(t.TempDir(), "data", "hpa-recommender.db")
				s, err := boltstore.Open(path, opts)
				if err != nil {
					t.Fatalf("Open(%s): %v", path, err)
				}
				t.Cleanup(func() { _ = s.Close() })
				return s
			}, storetest.WithInvariant(func(t *testing.T, s store.Store) {
				if err := s.(*boltstore.Store).Check(); err != nil {
					t.Error(err)
				}
			}))
		})
	}
}

// TestDecisionLog runs the decision log suite, with the default batching and batches of one.
func TestDecisionLog(t *testing.T) {
	for _, opts := range []boltstore.Options{{}, {MaxBatchSize: 1}} {
		t.Run(fmt.Sprintf("batch=%d", opts.MaxBatchSize), func(t *testing.T) {
			storetest.RunDecisionLog(t, func(t *testing.T, limits store.DecisionLogLimits) store.Store {
				opts.DecisionLog = limits
				s, err := boltstore.Open(filepath.Join(t.TempDir(), "hpa.db"), opts)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = s.Close() })
				return s
			}, storetest.WithInvariant(func(t *testing.T, s store.Store) {
				if err := s.(*boltstore.Store).Check(); err != nil {
					t.Error(err)
				}
			}))
		})
	}
}

// TestFailedWriteInABatch: writes that share a batch with one whose fn fails commit; the
// failing one gets fn's error and writes nothing.
func TestFailedWriteInABatch(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "hpa.db"))
	boom := errors.New("boom")
	const writers = 32
	errs := make(chan error, writers)
	for i := range writers {
		go func() {
			k := store.Key{Cluster: "c", Namespace: "ns", Name: strconv.Itoa(i)}
			_, err := s.Update(t.Context(), k, func(cur *store.Target) (*store.Target, error) {
				if i%4 == 1 {
					return nil, boom
				}
				return bump(cur)
			})
			errs <- err
		}()
	}
	failed := 0
	for range writers {
		err := <-errs
		switch {
		case errors.Is(err, boom):
			failed++
		case err != nil:
			t.Errorf("Update: %v", err)
		}
	}
	if failed != writers/4 {
		t.Errorf("%d writes failed with fn's error, want %d", failed, writers/4)
	}
	for i := range writers {
		k := store.Key{Cluster: "c", Namespace: "ns", Name: strconv.Itoa(i)}
		_, err := s.Get(t.Context(), k)
		if (i%4 == 1) != errors.Is(err, store.ErrNotFound) {
			t.Errorf("Get(%s) = %v after a write whose fn %s", k, err, map[bool]string{true: "failed", false: "succeeded"}[i%4 == 1])
		}
	}
	if err := s.Check(); err != nil {
		t.Error(err)
	}
}

func bump(cur *store.Target) (*store.Target, error) {
	if cur == nil {
		cur = &store.Target{}
	}
	cur.Spec.MaxReplicas++
	return cur, nil
}

func TestReopenKeepsData(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hpa.db")
	k := store.Key{Cluster: "c", Namespace: "ns", Name: "web"}
	s := open(t, path)
	first, err := s.Update(t.Context(), k, func(*store.Target) (*store.Target, error) {
		return &store.Target{Spec: recommender.Spec{MaxReplicas: 9}, LastSeen: time.Unix(1, 5).UTC()}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = open(t, path)
	got, err := s.Get(t.Context(), k)
	if err != nil {
		t.Fatalf("Get after reopen: %v", err)
	}
	if got.Spec.MaxReplicas != 9 || !got.LastSeen.Equal(time.Unix(1, 5)) || got.Revision != first.Revision {
		t.Errorf("after reopen got %+v, want what was stored before", got)
	}
	second, err := s.Update(t.Context(), k, func(cur *store.Target) (*store.Target, error) { return cur, nil })
	if err != nil {
		t.Fatal(err)
	}
	if second.Revision <= first.Revision {
		t.Errorf("revision after reopen %d, want > %d", second.Revision, first.Revision)
	}
	if err := s.Check(); err != nil {
		t.Error(err)
	}
}

func TestSecondOpenTimesOut(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hpa.db")
	open(t, path)
	start := time.Now()
	s, err := boltstore.Open(path, boltstore.Options{Timeout: 100 * time.Millisecond})
	if err == nil {
		_ = s.Close()
		t.Fatal("second Open of a locked file succeeded")
	}
	if !errors.Is(err, bolterrors.ErrTimeout) || !strings.Contains(err.Error(), "locked by another process") {
		t.Errorf("second Open error = %q, want a lock timeout naming the cause", err)
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Errorf("second Open took %s, want about its timeout", waited)
	}
}

// rawFile writes a bbolt file with the given buckets and keys, bypassing the store.
func rawFile(t *testing.T, setup func(tx *bolt.Tx) error) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "raw.db")
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(setup); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func withMeta(version string, targets bool) func(tx *bolt.Tx) error {
	return func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte("meta"))
		if err != nil {
			return err
		}
		if version != "" {
			if err := b.Put([]byte("schema_version"), []byte(version)); err != nil {
				return err
			}
		}
		if targets {
			_, err = tx.CreateBucket([]byte("targets"))
		}
		return err
	}
}

func TestSchemaVersion(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(tx *bolt.Tx) error
		wantErr string // "" = opens
	}{
		{name: "current", setup: withMeta("5", true)},
		{name: "version 1, upgraded", setup: withMeta("1", true)},
		{name: "version 2, upgraded", setup: withMeta("2", true)},
		{name: "version 3, upgraded", setup: withMeta("3", true)},
		{name: "version 4, upgraded", setup: withMeta("4", true)},
		{name: "newer", setup: withMeta("6", true), wantErr: "newer binary"},
		{name: "garbage", setup: withMeta("one", true), wantErr: "corrupt schema version"},
		{name: "zero", setup: withMeta("0", true), wantErr: "corrupt schema version"},
		{name: "no version", setup: withMeta("", true), wantErr: "no schema version"},
		{name: "no targets bucket", setup: withMeta("1", false), wantErr: "missing"},
		{name: "someone else's file", setup: func(tx *bolt.Tx) error {
			_, err := tx.CreateBucket([]byte("other"))
			return err
		}, wantErr: "not an hpa-recommender store"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := rawFile(t, tt.setup)
			s, err := boltstore.Open(path, boltstore.Options{})
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				if got, want := schemaVersion(t, path), strconv.Itoa(boltstore.SchemaVersion); got != want {
					t.Errorf("schema version %q after Open, want %q", got, want)
				}
				return
			}
			if err == nil {
				_ = s.Close()
				t.Fatal("Open succeeded, want a schema error")
			}
			if !errors.Is(err, boltstore.ErrUnsupportedSchema) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Open error = %q, want ErrUnsupportedSchema mentioning %q", err, tt.wantErr)
			}
		})
	}
}

// TestVersion1RecordsUpgrade: a file of schema version 1 whose record an older binary wrote in
// record version 1 is upgraded at Open: the record is stored in format 4 with its revision,
// Get and collection read it, an update takes the next revision, and the file checks clean.
func TestVersion1RecordsUpgrade(t *testing.T) {
	k := store.Key{Cluster: "c", Namespace: "ns", Name: "old"}
	path := rawFile(t, func(tx *bolt.Tx) error {
		if err := withMeta("1", true)(tx); err != nil {
			return err
		}
		b := tx.Bucket([]byte("targets"))
		if err := b.SetSequence(7); err != nil {
			return err
		}
		return b.Put(codec.EncodeKey(k), []byte(storetest.RecordV1(7)))
	})
	s := open(t, path)
	if v := storedRecord(t, s, k); len(v) == 0 || v[0] != 4 {
		t.Errorf("record after Open %.20q, want one of record format 4", v)
	}
	got, err := s.Get(t.Context(), k)
	if err != nil {
		t.Fatal(err)
	}
	if got.Revision != 7 || got.Spec.MaxReplicas != 5 || len(got.State.Conditions) != 1 ||
		got.LastDecision == nil || len(got.LastDecision.Decision.Conditions) != 1 {
		t.Fatalf("Get = %+v, want the stored version 1 record", got)
	}
	if n, err := s.DeleteUnseenSince(t.Context(), time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)); err != nil || n != 0 {
		t.Fatalf("DeleteUnseenSince = %d, %v; want 0 removed", n, err)
	}
	calls := 0
	next, err := s.Update(t.Context(), k, func(cur *store.Target) (*store.Target, error) {
		calls++
		cur.Spec.MaxReplicas++
		return cur, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 1 || next.Revision != 8 || next.Spec.MaxReplicas != 6 {
		t.Errorf("Update ran fn %d times and stored revision %d, MaxReplicas %d; want once, 8, 6", calls, next.Revision, next.Spec.MaxReplicas)
	}
	if err := s.Check(); err != nil {
		t.Error(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket([]byte("targets")).Get(codec.EncodeKey(k))
		if len(v) == 0 || v[0] != 4 {
			t.Errorf("rewritten record %q, want one of record format 4", v)
		}
		if t2, rev, err := codec.Unmarshal(v); err != nil || rev != next.Revision || t2.Spec.MaxReplicas != 6 {
			t.Errorf("rewritten record decodes to revision %d, MaxReplicas %v (%v); want %d, 6", rev, t2, err, next.Revision)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// storedRecord reads k's record as the file holds it.
func storedRecord(t *testing.T, s *boltstore.Store, k store.Key) []byte {
	t.Helper()
	var v []byte
	err := boltstore.View(s, func(tx *bolt.Tx) error {
		v = bytes.Clone(tx.Bucket([]byte("targets")).Get(codec.EncodeKey(k)))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// schemaVersion reads the schema version of the file at path, bypassing the store.
func schemaVersion(t *testing.T, path string) string {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v string
	err = db.View(func(tx *bolt.Tx) error {
		v = string(tx.Bucket([]byte("meta")).Get([]byte("schema_version")))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestNotABoltFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "junk.db")
	if err := os.WriteFile(path, []byte(strings.Repeat("not a database ", 1000)), 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := boltstore.Open(path, boltstore.Options{}); err == nil {
		_ = s.Close()
		t.Fatal("Open of a junk file succeeded")
	}
}

// TestFileOpensWithDefaultBoltOptions: the store does not sync bbolt's free-page list, yet its
// file opens and checks clean with bbolt's defaults (as an older hpa-recommender opened it), and
// reopens with the store afterwards.
func TestFileOpensWithDefaultBoltOptions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hpa.db")
	k := store.Key{Cluster: "c", Namespace: "ns", Name: "web"}
	s := open(t, path)
	for i := range 50 {
		if _, err := s.Update(t.Context(), k, func(*store.Target) (*store.Target, error) {
			return &store.Target{Spec: recommender.Spec{MaxReplicas: int32(i + 1)}}, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatalf("bbolt defaults cannot open the store's file: %v", err)
	}
	err = db.View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			return err
		}
		return nil
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatalf("check with bbolt defaults: %v", err)
	}
	s = open(t, path)
	got, err := s.Get(t.Context(), k)
	if err != nil || got.Spec.MaxReplicas != 50 {
		t.Fatalf("after a round trip through bbolt defaults: %+v, %v", got, err)
	}
	if err := s.Check(); err != nil {
		t.Error(err)
	}
}
