package memstore_test

import (
	"testing"

	"github.com/hpa-recommender/hpa-recommender/store"
	"github.com/hpa-recommender/hpa-recommender/store/memstore"
	"github.com/hpa-recommender/hpa-recommender/store/storetest"
)

// BenchmarkUpdate is storetest.BenchUpdate on the memory store, the reference for the
// durable ones.
func BenchmarkUpdate(b *testing.B) {
	storetest.BenchUpdate(b, func(b *testing.B) store.Store {
		s := memstore.New()
		b.Cleanup(func() { _ = s.Close() })
		return s
	})
}
