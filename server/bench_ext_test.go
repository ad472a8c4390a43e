package server_test

import (
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	"github.com/hpa-recommender/hpa-recommender/internal/workload"
	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
	"github.com/hpa-recommender/hpa-recommender/server"
	"github.com/hpa-recommender/hpa-recommender/store"
	"github.com/hpa-recommender/hpa-recommender/store/boltstore"
	"github.com/hpa-recommender/hpa-recommender/store/memstore"
)

// benchTargets is how many targets the benchmarks spread their calls over, unless they say.
const benchTargets = 1000

// benchServer is a server on store name ("memory", or "bolt": durable, fsync on commit, group
// commit) that has already decided once for each of the hpa-bench workload's benchTargets
// targets, and those targets' requests.
func benchServer(b *testing.B, name string) (*server.Server, []*pb.RecommendRequest) {
	return benchServerOf(b, name, workload.NewWorkload("bench", "bench", benchTargets))
}

// benchServerOf is benchServer for the targets of wl.
func benchServerOf(b *testing.B, name string, wl *workload.Workload) (*server.Server, []*pb.RecommendRequest) {
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
	reqs := make([]*pb.RecommendRequest, wl.Targets())
	for i := range reqs {
		reqs[i] = wl.Request(i, time.Now())
		if _, err := srv.Recommend(b.Context(), reqs[i]); err != nil {
			b.Fatal(err)
		}
	}
	return srv, reqs
}

// BenchmarkRecommend is the handler's cost per decision without the transport: the hpa-bench
// payload (20 pods, CPU utilization and an External metric, a behavior) over 1000 targets
// already stored, 64 concurrent callers, against each store. cmd/hpa-bench measures the whole
// service over gRPC.
func BenchmarkRecommend(b *testing.B) {
	for _, name := range []string{"memory", "bolt"} {
		b.Run("store="+name, func(b *testing.B) {
			srv, reqs := benchServer(b, name)
			var next atomic.Int64
			b.SetParallelism(32) // 64 callers on 2 cores
			b.ReportAllocs()
			b.ResetTimer()
			cpu := startCPU()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := int(next.Add(1) % benchTargets)
					if _, err := srv.Recommend(b.Context(), reqs[i]); err != nil {
						panic(fmt.Sprint(err))
					}
				}
			})
			cpu.report(b)
		})
	}
}

// BenchmarkRecommendWire is BenchmarkRecommend from the request's wire bytes to the response's:
// the server's codec decodes each request (as grpc-go hands it the bytes) and encodes the
// answer, so the figure is the service's CPU per call less grpc-go's transport. On the memory
// store the figure is the request path's alone.
func BenchmarkRecommendWire(b *testing.B) {
	for _, name := range []string{"memory", "bolt"} {
		b.Run("store="+name, func(b *testing.B) {
			srv, reqs := benchServer(b, name)
			benchRecommendWire(b, srv, reqs)
		})
	}
}

// BenchmarkRecommendWireManySpecs is BenchmarkRecommendWire over 10,000 targets, each with a
// spec of its own: from one template (specs that differ only in scaleTargetRef), as hpa-bench
// sends by default, or distinct (SetDistinctSpecs).
func BenchmarkRecommendWireManySpecs(b *testing.B) {
	for _, distinct := range []bool{false, true} {
		b.Run(fmt.Sprintf("distinct=%t", distinct), func(b *testing.B) {
			wl := workload.NewWorkload("bench", "bench", 10*benchTargets)
			wl.SetDistinctSpecs(distinct)
			srv, reqs := benchServerOf(b, "bolt", wl)
			benchRecommendWire(b, srv, reqs)
		})
	}
}

// benchRecommendWire is BenchmarkRecommendWire's measure, the calls of srv about reqs.
func benchRecommendWire(b *testing.B, srv *server.Server, reqs []*pb.RecommendRequest) {
	wire := make([][]byte, len(reqs))
	for i, req := range reqs {
		var err error
		if wire[i], err = proto.Marshal(req); err != nil {
			b.Fatal(err)
		}
	}
	codec := server.NewCodec()
	var next atomic.Int64
	b.SetParallelism(32)
	b.ReportAllocs()
	b.ResetTimer()
	cpu := startCPU()
	b.RunParallel(func(p *testing.PB) {
		for p.Next() {
			i := int(next.Add(1) % int64(len(wire)))
			req := new(pb.RecommendRequest)
			if err := codec.Unmarshal(mem.BufferSlice{mem.SliceBuffer(wire[i])}, req); err != nil {
				panic(err)
			}
			resp, err := srv.Recommend(b.Context(), req)
			if err != nil {
				panic(fmt.Sprint(err))
			}
			out, err := codec.Marshal(resp)
			if err != nil {
				panic(err)
			}
			out.Free()
		}
	})
	cpu.report(b)
}

// cpuClock is the process's CPU time (user and system) at the start of a benchmark's timed
// loop. The benchmarks run 64 callers on 2 cores, and each call waits for a durable commit:
// ns/op is the wall time per call at that concurrency, bounded by the disk's syncs as much as
// by the CPU, while cpu-ns/op is what a call costs the machine, the commits' and the
// collector's shares included: the figure to compare builds by.
type cpuClock time.Duration

func startCPU() cpuClock { return cpuClock(processCPU()) }

// report adds cpu-ns/op to b's results; nothing where the process's CPU time is not measured.
func (c cpuClock) report(b *testing.B) {
	if c == 0 || b.N == 0 {
		return
	}
	used := processCPU() - time.Duration(c)
	b.ReportMetric(float64(used.Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// BenchmarkUnmarshalRecommend is the codec's decoding of one hpa-bench request (20 pods, two
// metrics).
func BenchmarkUnmarshalRecommend(b *testing.B) {
	wire, err := proto.Marshal(workload.NewWorkload("bench", "bench", 1).Request(0, time.Now()))
	if err != nil {
		b.Fatal(err)
	}
	codec := server.NewCodec()
	b.ReportAllocs()
	for b.Loop() {
		req := new(pb.RecommendRequest)
		if err := codec.Unmarshal(mem.BufferSlice{mem.SliceBuffer(wire)}, req); err != nil {
			b.Fatal(err)
		}
	}
}
