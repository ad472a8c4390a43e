package boltstore_test

import (
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/hpa-recommender/hpa-recommender/store"
	"github.com/hpa-recommender/hpa-recommender/store/boltstore"
)

func bump(cur *store.Target) (*store.Target, error) {
	if cur == nil {
		cur = &store.Target{}
	}
	cur.Spec.MaxReplicas++
	return cur, nil
}

// BenchmarkUpdateParallel measures group commit: concurrent Updates, each goroutine on its own
// key, fsync on. With 2 CPUs, SetParallelism(32) gives 64 writers, one full batch.
func BenchmarkUpdateParallel(b *testing.B) {
	for _, par := range []int{1, 8, 32} {
		b.Run(fmt.Sprintf("writers=%dxGOMAXPROCS", par), func(b *testing.B) {
			s, err := boltstore.Open(filepath.Join(b.TempDir(), "bench.db"), boltstore.Options{})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = s.Close() })
			var next atomic.Int64
			b.SetParallelism(par)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				k := store.Key{Cluster: "bench", Namespace: "ns", Name: fmt.Sprintf("t%d", next.Add(1))}
				for pb.Next() {
					if _, err := s.Update(b.Context(), k, bump); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
