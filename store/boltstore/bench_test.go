package boltstore_test

import (
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
