package boltstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/hpa-recommender/hpa-recommender/recommender"
	"github.com/hpa-recommender/hpa-recommender/store"
)

// TestBackup: a backup taken while other targets are written opens as a store that holds
// every target written before it, passes the consistency check, and says it wrote what it
// wrote; a canceled context stops it.
func TestBackup(t *testing.T) {
	dir := t.TempDir()
	s := open(t, filepath.Join(dir, "live.db"))
	ctx := t.Context()
	put := func(name string, max int32) error {
		_, err := s.Update(ctx, store.Key{Cluster: "c", Namespace: "ns", Name: name}, func(*store.Target) (*store.Target, error) {
			return &store.Target{Spec: recommender.Spec{MaxReplicas: max}}, nil
		})
		return err
	}
	for i := range 200 {
		if err := put(fmt.Sprintf("before-%03d", i), int32(i+1)); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if err := put(fmt.Sprintf("during-%d-%d", w, i), 1); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	var buf bytes.Buffer
	n, err := s.Backup(ctx, &buf)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(buf.Len()) {
		t.Errorf("Backup says %d bytes, wrote %d", n, buf.Len())
	}
	path := filepath.Join(dir, "backup.db")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	b := open(t, path)
	if err := b.Check(); err != nil {
		t.Fatalf("the backup is inconsistent: %v", err)
	}
	for i := range 200 {
		got, err := b.Get(ctx, store.Key{Cluster: "c", Namespace: "ns", Name: fmt.Sprintf("before-%03d", i)})
		if err != nil || got.Spec.MaxReplicas != int32(i+1) {
			t.Fatalf("before-%03d in the backup: %+v, %v", i, got, err)
		}
	}

	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Backup(canceled, &bytes.Buffer{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Backup with a canceled context: %v, want context.Canceled", err)
	}
}
