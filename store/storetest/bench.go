package storetest

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hpa-recommender/hpa-recommender/store"
)

// BenchTargets is how many targets BenchUpdate rewrites.
const BenchTargets = 1000

// BenchUpdate measures Update as the server's decisions write: 1, 8 and 64 concurrent writers,
// each rewriting a random one of BenchTargets targets that carry the suite's full target (a
// full spec, history, a decision; about 2 KB encoded), reading its state and writing a new
// LastSeen and recommendation. newStore returns a fresh, empty store and registers its Close
// with b.Cleanup.
func BenchUpdate(b *testing.B, newStore func(b *testing.B) store.Store) {
	for _, writers := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			s := newStore(b)
			keys := make([]store.Key, BenchTargets)
			var wg sync.WaitGroup
			for w := range 64 { // populate concurrently: a batching store commits together
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := w; i < len(keys); i += 64 {
						keys[i] = key("bench", "ns", fmt.Sprintf("target-%d", i))
						full := fullTarget(keys[i])
						if _, err := s.Update(b.Context(), keys[i], func(*store.Target) (*store.Target, error) { return full, nil }); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			var clock atomic.Int64
			decide := func(cur *store.Target) (*store.Target, error) {
				now := t0.Add(time.Duration(clock.Add(1)) * time.Millisecond)
				cur.LastSeen = now
				h := &cur.State.History
				h.Recommendations = append(h.Recommendations[1:], h.Recommendations[0])
				h.Recommendations[len(h.Recommendations)-1].Time = now
				return cur, nil
			}
			var left atomic.Int64
			left.Store(int64(b.N))
			b.ReportAllocs()
			b.ResetTimer()
			for range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for left.Add(-1) >= 0 {
						if _, err := s.Update(b.Context(), keys[rand.N(len(keys))], decide); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "writes/s")
		})
	}
}
