package boltstore_test

import (
	"cmp"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

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
// key, fsync on. With 2 CPUs, SetParallelism(32) gives 64 writers, one full batch; with few
// writers a batch commits only when MaxBatchDelay expires, which sets the per-write latency.
func BenchmarkUpdateParallel(b *testing.B) {
	for _, bc := range []struct {
		par   int
		delay time.Duration
	}{{1, 0}, {8, 0}, {32, 0}, {1, 500 * time.Microsecond}, {8, 500 * time.Microsecond}, {32, 500 * time.Microsecond}} {
		b.Run(fmt.Sprintf("writers=%dxGOMAXPROCS/delay=%s", bc.par, cmp.Or(bc.delay, boltstore.DefaultMaxBatchDelay)), func(b *testing.B) {
			s, err := boltstore.Open(filepath.Join(b.TempDir(), "bench.db"), boltstore.Options{MaxBatchDelay: bc.delay})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = s.Close() })
			var next atomic.Int64
			b.SetParallelism(bc.par)
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
