package server_test

import (
	"context"
	"fmt"
	"io"
	"net"
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

// benchServerOf is benchServer for the targets of wl, with the default configuration changed
// by mutate.
func benchServerOf(b *testing.B, name string, wl *workload.Workload, mutate ...func(*server.Config)) (*server.Server, []*pb.RecommendRequest) {
	cfg := server.DefaultConfig()
	cfg.MetricsListen = ""
	for _, m := range mutate {
		m(&cfg)
	}
	_, limits := cfg.DecisionLog()
	var st store.Store
	if name == "bolt" {
		bs, err := boltstore.Open(filepath.Join(b.TempDir(), "bench.db"), boltstore.Options{DecisionLog: limits})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = bs.Close() })
		st = bs
	} else {
		st = memstore.NewWithOptions(memstore.Options{DecisionLog: limits})
	}
	srv, err := server.New(cfg, server.Deps{Store: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	stopAtCleanup(b, srv)
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
			benchRecommend(b, srv, reqs)
		})
	}
}

// BenchmarkRecommendDecisionLog is BenchmarkRecommend on bbolt with the decision log on (the
// default bounds) and off (--decision-log-bytes 0): the log's cost per decision. Each target's
// calls alternate between two loads, so that no decision repeats the one before (a repeat
// only extends the newest entry): every decision retires an entry, the log's dearest case.
func BenchmarkRecommendDecisionLog(b *testing.B) {
	for _, on := range []bool{true, false} {
		b.Run(fmt.Sprintf("log=%t", on), func(b *testing.B) {
			wl := workload.NewWorkload("bench", "bench", benchTargets)
			srv, reqs := benchServerOf(b, "bolt", wl, func(c *server.Config) {
				if !on {
					c.DecisionLogBytes = 0
				}
			})
			other := make([]*pb.RecommendRequest, len(reqs))
			for i := range other {
				for range 6 { // a quarter of the load cycle on
					other[i] = wl.Request(i, time.Now())
				}
			}
			benchRecommend(b, srv, reqs, other)
		})
	}
}

// benchRecommend is BenchmarkRecommend's measure: 64 callers over the targets, round after
// round, each round sending the next of the request sets.
func benchRecommend(b *testing.B, srv *server.Server, sets ...[]*pb.RecommendRequest) {
	var next atomic.Int64
	b.SetParallelism(32) // 64 callers on 2 cores
	b.ReportAllocs()
	b.ResetTimer()
	cpu := startCPU()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			n := int(next.Add(1))
			reqs := sets[n/benchTargets%len(sets)]
			if _, err := srv.Recommend(b.Context(), reqs[n%benchTargets]); err != nil {
				panic(fmt.Sprint(err))
			}
		}
	})
	cpu.report(b)
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

// BenchmarkDecisionLogDay measures what one target's decision log holds after a day of
// decisions 15 s apart (5,760), unbounded, for a steady load (swing 0) and the hpa-bench load
// cycle (±40 % over 24 decisions, so the target keeps scaling), every scale reported applied:
// log-bytes/target-day is the entries' size as ListDecisions encodes them (the store's
// encoding has the same fields), entries/target-day their count.
func BenchmarkDecisionLogDay(b *testing.B) {
	const decisions = 24 * 60 * 60 / 15
	for _, swing := range []float64{0, workload.DefaultLoadSwing} {
		b.Run(fmt.Sprintf("swing=%g", swing), func(b *testing.B) {
			var bytes, entries int64
			for b.Loop() {
				now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
				st := memstore.New() // unbounded
				cfg := server.DefaultConfig()
				cfg.MetricsListen = ""
				srv, err := server.New(cfg, server.Deps{Store: st, Now: func() time.Time { return now },
					Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
				if err != nil {
					b.Fatal(err)
				}
				stopAtCleanup(b, srv)
				wl := workload.NewWorkload("bench", "bench", 1)
				wl.SetLoadSwing(swing)
				for range decisions {
					req := wl.Request(0, now)
					resp, err := srv.Recommend(b.Context(), req)
					if err != nil {
						b.Fatal(err)
					}
					if resp.Scale {
						if _, err := srv.ReportScale(b.Context(), &pb.ReportScaleRequest{Target: req.Target, RecommendationId: resp.RecommendationId, Succeeded: true}); err != nil {
							b.Fatal(err)
						}
						wl.Applied(0, resp.DesiredReplicas)
					}
					now = now.Add(15 * time.Second)
				}
				bytes, entries = 0, 0
				list := &pb.ListDecisionsRequest{Target: wl.Ref(0), PageSize: 1000}
				for {
					page, err := srv.ListDecisions(b.Context(), list)
					if err != nil {
						b.Fatal(err)
					}
					for _, e := range page.Decisions {
						bytes += int64(proto.Size(e))
					}
					entries += int64(len(page.Decisions))
					if list.PageToken = page.NextPageToken; list.PageToken == "" {
						break
					}
				}
			}
			b.ReportMetric(float64(bytes), "log-bytes/target-day")
			b.ReportMetric(float64(entries), "entries/target-day")
		})
	}
}

// stopAtCleanup serves srv on a loopback port until the benchmark ends, so that its gRPC
// server's workers stop with it (the handlers are called directly).
func stopAtCleanup(b *testing.B, srv *server.Server) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, lis) }()
	b.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
	})
}
