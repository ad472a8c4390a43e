package boltstore_test

import (
	"fmt"
	"io"
	"path/filepath"
	"testing"

	"github.com/hpa-recommender/hpa-recommender/store"
	"github.com/hpa-recommender/hpa-recommender/store/boltstore"
	"github.com/hpa-recommender/hpa-recommender/store/storetest"
)

// BenchmarkUpdate is storetest.BenchUpdate on a durable file (fsync on) with the default
// options: 1, 8 and 64 concurrent writers.
func BenchmarkUpdate(b *testing.B) {
	storetest.BenchUpdate(b, func(b *testing.B) store.Store {
		s, err := boltstore.Open(filepath.Join(b.TempDir(), "bench.db"), boltstore.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = s.Close() })
		return s
	})
}

// BenchmarkBackup measures Backup of a file of 10,000 of the suite's fixture targets (with
// their decision logs) to io.Discard: what a hot backup costs the service besides the
// network.
func BenchmarkBackup(b *testing.B) {
	s, err := boltstore.Open(filepath.Join(b.TempDir(), "bench.db"), boltstore.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	fixtures := storetest.FixtureTargets()
	for i := range 10000 {
		tgt := fixtures[i%len(fixtures)]
		key := store.Key{Cluster: "bench", Namespace: "ns", Name: fmt.Sprintf("target-%05d", i)}
		if _, err := s.Update(b.Context(), key, func(*store.Target) (*store.Target, error) { return tgt, nil }); err != nil {
			b.Fatal(err)
		}
	}
	var n int64
	for b.Loop() {
		if n, err = s.Backup(b.Context(), io.Discard); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(n)
	b.ReportMetric(float64(n), "file-bytes")
}
