package server_test

import (
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hpa-recommender/hpa-recommender/clients/bench"
	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
	"github.com/hpa-recommender/hpa-recommender/server"
	"github.com/hpa-recommender/hpa-recommender/store"
	"github.com/hpa-recommender/hpa-recommender/store/boltstore"
	"github.com/hpa-recommender/hpa-recommender/store/memstore"
)

// BenchmarkRecommend is the handler's cost per decision without the transport: the hpa-bench
// payload (20 pods, CPU utilization and an External metric, a behavior) over 1000 targets
// already stored, 64 concurrent callers, against each store. bolt is durable (fsync on commit,
// group commit). cmd/hpa-bench measures the whole service over gRPC.
func BenchmarkRecommend(b *testing.B) {
	for _, name := range []string{"memory", "bolt"} {
		b.Run("store="+name, func(b *testing.B) {
			var st store.Store
			if name == "bolt" {
				bs, err := boltstore.Open(filepath.Join(b.TempDir(), "bench.db"), boltstore.Options{})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _ = bs.Close() })
				st = bs
			} else {
				st = memstore.New()
			}
			cfg := server.DefaultConfig()
			cfg.MetricsListen = ""
			srv, err := server.New(cfg, server.Deps{Store: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				b.Fatal(err)
			}
			const targets = 1000
			wl := bench.NewWorkload("bench", "bench", targets)
			reqs := make([]*pb.RecommendRequest, targets)
			for i := range reqs {
				reqs[i] = wl.Request(i, time.Now())
				if _, err := srv.Recommend(b.Context(), reqs[i]); err != nil {
					b.Fatal(err)
				}
			}
			var next atomic.Int64
			b.SetParallelism(32) // 64 callers on 2 cores
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := int(next.Add(1) % targets)
					if _, err := srv.Recommend(b.Context(), reqs[i]); err != nil {
						panic(fmt.Sprint(err))
					}
				}
			})
		})
	}
}
