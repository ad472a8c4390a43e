package bench_test

import (
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/hpa-recommender/hpa-recommender/cmd/hpa-bench/internal/bench"
	"github.com/hpa-recommender/hpa-recommender/internal/workload"
	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
	"github.com/hpa-recommender/hpa-recommender/server"
	"github.com/hpa-recommender/hpa-recommender/server/servertest"
	"github.com/hpa-recommender/hpa-recommender/store/boltstore"
)

// TestSmoke runs the tool briefly against an in-process hpa-recommender (memory store) and its
// own baseline: every call succeeds and both outputs render.
func TestSmoke(t *testing.T) {
	addr := startServer(t)

	bc := briefConfig(addr)
	bc.Baseline = true
	bc.Rates = []float64{200}
	bc.ServerPIDs = []int{os.Getpid()}
	bc.LoopbackProbe = 50 * time.Millisecond
	rep, err := bench.Run(t.Context(), bc)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Loopback == nil || rep.Loopback.Count == 0 {
		t.Errorf("loopback probe = %+v, want round trips measured before the load", rep.Loopback)
	}
	if p := rep.Populated; p == nil || p.Targets != 20 || p.Errors != 0 {
		t.Errorf("populated = %+v, want 20 targets without errors", p)
	}
	if len(rep.Runs) != 4 || len(rep.Summary) != 4 {
		t.Fatalf("got %d runs and %d rows, want 4 and 4 (closed and open, baseline and service)", len(rep.Runs), len(rep.Summary))
	}
	for _, r := range rep.Runs {
		if r.Recommend.Errors+r.ReportScale.Errors != 0 || r.Recommend.Count == 0 {
			t.Errorf("%s %s: %d calls, %d+%d errors", r.Server, r.Mode, r.Recommend.Count, r.Recommend.Errors, r.ReportScale.Errors)
		}
	}
	for _, row := range rep.Summary {
		if row.Server == "service" && row.ThroughputRatio == 0 {
			t.Errorf("service row %+v has no ratio to the baseline", row)
		}
	}
	var table, js strings.Builder
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "targets 20 (a spec per target)") {
		t.Errorf("the table does not say which payload it measured:\n%s", table.String())
	}
	if !strings.Contains(table.String(), "\nloopback before the load: ") || !strings.Contains(js.String(), `"cpu_per_round_trip_ns"`) {
		t.Errorf("outputs miss the loopback probe:\n%s", table.String())
	}
	if !strings.Contains(table.String(), "rate=200") || !strings.Contains(js.String(), `"throughput_ratio"`) {
		t.Errorf("outputs miss the open-loop row or the ratios:\n%s", table.String())
	}
}

// TestHostileSmoke: with a hostile caller alongside (malformed, huge, oversized, abandoned and
// slow calls), every good call still succeeds and every hostile call gets the expected answer.
func TestHostileSmoke(t *testing.T) {
	bc := briefConfig(startServer(t))
	bc.Duration = 500 * time.Millisecond
	bc.Hostile = 1
	rep, err := bench.Run(t.Context(), bc)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Runs {
		if r.Recommend.Errors+r.ReportScale.Errors != 0 || r.Recommend.Count == 0 {
			t.Errorf("%s: %d good calls, %d+%d errors", r.Mode, r.Recommend.Count, r.Recommend.Errors, r.ReportScale.Errors)
		}
		if h := r.Hostile; h == nil || h.Sent[0] == 0 || h.Unexpected != 0 {
			t.Errorf("%s: hostile stats %+v, want malformed calls sent and every outcome as expected", r.Mode, h)
		}
	}
}

// briefConfig is a short run against addr: 20 targets, one closed-loop run of 4 callers for
// 300 ms after 50 ms of warm-up, once, without the loopback probe.
func briefConfig(addr string) bench.Config {
	bc := bench.DefaultConfig()
	bc.Addr = addr
	bc.Targets = 20
	bc.Concurrency = []int{4}
	bc.Warmup = 50 * time.Millisecond
	bc.Duration = 300 * time.Millisecond
	bc.Repeat = 1
	bc.LoopbackProbe = 0
	return bc
}

// startServer runs hpa-recommender (memory store) in process on a loopback port.
func startServer(t *testing.T) string {
	t.Helper()
	addr, _ := servertest.Start(t, server.DefaultConfig(), server.Deps{})
	return addr
}

// dialServer starts a server (startServer) and returns a client of it.
func dialServer(t *testing.T) pb.RecommenderServiceClient {
	t.Helper()
	conn, err := grpc.NewClient(startServer(t), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return pb.NewRecommenderServiceClient(conn)
}

// TestWorkloadScales: one target called through one load cycle scales up and down (so
// ReportScale is exercised), and every scale it is told about becomes its replica count.
func TestWorkloadScales(t *testing.T) {
	cl := dialServer(t)
	wl := workload.NewWorkload("c", "ns", 1)
	ups, downs := 0, 0
	for range 48 {
		req := wl.Request(0, time.Now())
		resp, err := cl.Recommend(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		if !resp.GetScale() {
			continue
		}
		if resp.GetDesiredReplicas() > req.GetCurrentReplicas() {
			ups++
		} else {
			downs++
		}
		if _, err := cl.ReportScale(t.Context(), &pb.ReportScaleRequest{Target: req.Target, RecommendationId: resp.GetRecommendationId(), Succeeded: true}); err != nil {
			t.Fatal(err)
		}
		wl.Applied(0, resp.GetDesiredReplicas())
		if next := wl.Request(0, time.Now()); next.GetCurrentReplicas() != resp.GetDesiredReplicas() || int32(len(next.GetPods())) != resp.GetDesiredReplicas() {
			t.Fatalf("after a scale to %d the next request has %d replicas and %d pods", resp.GetDesiredReplicas(), next.GetCurrentReplicas(), len(next.GetPods()))
		}
	}
	if ups == 0 {
		t.Errorf("%d scale-ups and %d scale-downs over a load cycle, want some scale-ups", ups, downs)
	}
}

// TestSteadyWorkloadNeverScales: with no load swing, every target's demand stays at what its 20
// replicas serve at the target utilization, so over a whole load cycle nothing scales and every
// decision proposes the current count (rows with different target counts then differ only in
// the store). With the default swing the same calls do propose other counts.
func TestSteadyWorkloadNeverScales(t *testing.T) {
	cl := dialServer(t)
	for _, swing := range []float64{0, workload.DefaultLoadSwing} {
		wl := workload.NewWorkload("c", fmt.Sprintf("swing-%g", swing), 3)
		wl.SetLoadSwing(swing)
		moved := 0
		for call := range 48 {
			for i := range 3 {
				resp, err := cl.Recommend(t.Context(), wl.Request(i, time.Now()))
				if err != nil {
					t.Fatal(err)
				}
				if p := resp.GetExplanation().GetProposal(); p != 20 {
					moved++
					if swing == 0 {
						t.Errorf("steady load, call %d of target %d: proposal %d, want 20 (scale %v)", call, i, p, resp.GetScale())
					}
				}
			}
		}
		if swing != 0 && moved == 0 {
			t.Errorf("load swing %g: no decision proposed anything but 20", swing)
		}
	}
}

// TestStoreMetricsRead: with --server-metrics the tool reads the service's store metrics (a
// real bbolt store behind a real server, its registry served over HTTP) around each run and
// reports the writes per commit, what a commit's write and sync took, that time per write and
// how busy the writing kept the file, and the server's own handling time of Recommend; a page
// without store metrics (the memory store's) reports no store figures but the handling time,
// and a page that does not answer is an error naming the flag.
func TestStoreMetricsRead(t *testing.T) {
	db := filepath.Join(t.TempDir(), "db")
	st, err := boltstore.Open(db, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	addr, stop := servertest.Start(t, server.DefaultConfig(), server.Deps{Store: st, Registry: reg})
	t.Cleanup(func() { stop(); _ = st.Close() })
	page := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(page.Close)

	bc := briefConfig(addr)
	bc.ServerMetrics = page.URL + "/metrics"
	bc.StoreFile, bc.DiskProbe = db, 0
	rep, err := bench.Run(t.Context(), bc)
	if err != nil {
		t.Fatal(err)
	}
	if p := rep.Populated; p == nil || p.FileBytes <= 0 || p.FilePerTgt <= 0 {
		t.Errorf("populated %+v: want the store file's size", p)
	}
	run := rep.Runs[0]
	s := run.Store
	if s == nil {
		t.Fatal("no store figures with --server-metrics")
	}
	calls := float64(run.Recommend.Count + run.ReportScale.Count)
	// Every acknowledged call wrote once (the warm-up's writes count too); DB.Batch gathers
	// at most the 4 callers' writes into a commit.
	if s.Writes < calls || s.Commits < 1 || s.WritesPerCommit < 1 || s.WritesPerCommit > 4 {
		t.Errorf("store figures %+v for %v acknowledged calls by 4 callers on 20 targets", s, calls)
	}
	// Writing and syncing take time (fsync on); a write's share is at most its commit's; bbolt
	// commits one transaction at a time, so the writing takes part of the time between the
	// readings, never more than all of it.
	if s.CommitWrite <= 0 || s.WritePerWrite <= 0 || s.WritePerWrite > s.CommitWrite || s.WriteBusy <= 0 || s.WriteBusy > 1 {
		t.Errorf("a commit's write and sync %v, per write %v, busy %.3f of the run", s.CommitWrite, s.WritePerWrite, s.WriteBusy)
	}
	// The server's own handling time: every Recommend of the run (and of the warm-up) is in
	// its histogram, and the quantiles are ordered.
	if sl := run.ServerLatency; sl == nil || sl.Count < float64(run.Recommend.Count) || sl.P50 <= 0 || sl.P50 > sl.P99 ||
		sl.Within5ms < 0 || sl.Within5ms > 1 {
		t.Errorf("server-side latency %+v for %d Recommends", sl, run.Recommend.Count)
	}
	var table strings.Builder
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "; store file ") {
		t.Errorf("the table's populate line lacks the store file's size:\n%s", table.String())
	}
	if !strings.Contains(table.String(), "server during service c=4: Recommend handled in p50 ") {
		t.Errorf("the table lacks the server's handling time:\n%s", table.String())
	}
	if !strings.Contains(table.String(), "store during service c=4: ") || !strings.Contains(table.String(), " writes per commit, a commit's write and sync ") ||
		!strings.Contains(table.String(), "% of the time") {
		t.Errorf("the table lacks the store line:\n%s", table.String())
	}

	mem := prometheus.NewRegistry()
	bc.Addr, _ = servertest.Start(t, server.DefaultConfig(), server.Deps{Registry: mem})
	memPage := httptest.NewServer(promhttp.HandlerFor(mem, promhttp.HandlerOpts{}))
	t.Cleanup(memPage.Close)
	bc.ServerMetrics = memPage.URL + "/metrics"
	if rep, err := bench.Run(t.Context(), bc); err != nil || rep.Runs[0].Store != nil || rep.Runs[0].ServerLatency == nil {
		t.Errorf("memory store: %v, %+v; want no store figures, and the server's handling time", err, rep)
	}

	gone := httptest.NewServer(promhttp.HandlerFor(mem, promhttp.HandlerOpts{}))
	gone.Close()
	bc.ServerMetrics = gone.URL + "/metrics"
	if _, err := bench.Run(t.Context(), bc); err == nil || !strings.Contains(err.Error(), "--server-metrics") {
		t.Errorf("a page that does not answer: %v, want an error naming --server-metrics", err)
	}
}

// startProcess starts argv as a child process that the test kills at its end, and returns its pid.
func startProcess(t *testing.T, argv ...string) int {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd.Process.Pid
}

// TestStoreProcesses: the store's processes (--store-pid) are sampled around each service run,
// summed, and reported beside the server's; a baseline run has none. A spinning process shows
// its CPU, and the RSS is the sum of the processes'.
func TestStoreProcesses(t *testing.T) {
	spinner := startProcess(t, "sh", "-c", "while :; do :; done")
	idle := startProcess(t, "sleep", "60")

	bc := briefConfig(startServer(t))
	bc.Baseline = true
	bc.NoopCommand = nil // in this process: its runs have no store
	bc.Duration = 400 * time.Millisecond
	bc.ServerPIDs = []int{os.Getpid()}
	bc.StorePIDs = []int{spinner, idle}
	rep, err := bench.Run(t.Context(), bc)
	if err != nil {
		t.Fatal(err)
	}
	var rss int64
	for _, pid := range bc.StorePIDs {
		s, err := bench.ReadProc(pid)
		if err != nil {
			t.Fatal(err)
		}
		rss += s.RSS
	}
	for _, r := range rep.Runs {
		if r.Server == "baseline" {
			if r.StoreUsage != nil {
				t.Errorf("baseline run has store usage %+v", r.StoreUsage)
			}
			continue
		}
		u := r.StoreUsage
		if u == nil {
			t.Fatal("service run without the store's usage")
		}
		// sh and sleep hold their memory still, so the sum is exact.
		if u.RSS != rss || u.Cores <= 0 || u.CPUPerCall <= 0 {
			t.Errorf("store usage %+v: want the spinner's CPU (a sleeping process has none) and RSS %d, the two processes' sum", u, rss)
		}
	}
	var table strings.Builder
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("store processes (pids %d, %d) during service c=4: ", spinner, idle)
	if !strings.Contains(table.String(), want) || !strings.Contains(table.String(), "; with the service's, ") ||
		strings.Contains(table.String(), "during baseline") {
		t.Errorf("the table lacks the store's line %q (with the service's sum), or has a baseline one:\n%s", want, table.String())
	}
}

// TestStorePIDsRefused: a pid that is not one, or store pids without a service, are refused
// before any load, naming the flag; a store process that is gone fails the run, naming it.
func TestStorePIDsRefused(t *testing.T) {
	for _, tc := range []struct {
		addr string
		pids []int
		want string
	}{{"127.0.0.1:1", []int{0}, "--store-pid 0"}, {"127.0.0.1:1", []int{1, -3}, "--store-pid -3"}, {"", []int{1}, "--store-pid needs --addr"}} {
		bc := bench.DefaultConfig()
		bc.Addr, bc.Baseline, bc.StorePIDs = tc.addr, true, tc.pids
		if err := bc.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("addr %q, store pids %v: error %v, want %q", tc.addr, tc.pids, err, tc.want)
		}
	}
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	bc := bench.DefaultConfig()
	bc.Addr = startServer(t)
	bc.Targets = 5
	bc.Concurrency = []int{1}
	bc.Warmup, bc.Duration, bc.Repeat, bc.LoopbackProbe = 0, 50*time.Millisecond, 1, 0
	bc.StorePIDs = []int{gone.ProcessState.Pid()}
	_, err := bench.Run(t.Context(), bc)
	if want := fmt.Sprintf("store: process %d", gone.ProcessState.Pid()); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a store process that is gone: error %v, want one saying %q", err, want)
	}
}

// TestSeveralReplicas: with two addresses, each target's calls all go to one replica (target i
// to replica i mod 2), or with Spread to both in turn; each replica here has a store of its
// own, so its targets show where the calls went.
func TestSeveralReplicas(t *testing.T) {
	for _, spread := range []bool{false, true} {
		t.Run(fmt.Sprintf("spread=%v", spread), func(t *testing.T) {
			addrs := []string{startServer(t), startServer(t)}
			bc := briefConfig(strings.Join(addrs, ","))
			// Long enough for two rounds of the 20 targets at 4 callers under -race on a busy
			// machine (300 ms made 14-16 calls there, at main too).
			bc.Duration = 3 * time.Second
			bc.Spread = spread
			bc.ServerPIDs = []int{os.Getpid(), os.Getpid()}
			rep, err := bench.Run(t.Context(), bc)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rep.Runs {
				if r.Recommend.Errors+r.ReportScale.Errors != 0 || r.Recommend.Count < 2*bc.Targets || r.ServerUsage == nil {
					t.Fatalf("%d calls, %d+%d errors, server usage %v; want over two rounds of the targets, no errors, the usage",
						r.Recommend.Count, r.Recommend.Errors, r.ReportScale.Errors, r.ServerUsage)
				}
			}
			for a, addr := range addrs {
				conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				resp, err := pb.NewRecommenderServiceClient(conn).ListTargets(t.Context(), &pb.ListTargetsRequest{Cluster: bc.Cluster, PageSize: 100})
				if err != nil {
					t.Fatal(err)
				}
				var held []int
				for _, s := range resp.GetTargets() {
					i, err := strconv.Atoi(strings.TrimPrefix(s.GetTarget().GetName(), "bench-"))
					if err != nil {
						t.Fatal(err)
					}
					held = append(held, i)
				}
				slices.Sort(held)
				var want []int
				for i := range bc.Targets {
					if spread || i%2 == a {
						want = append(want, i)
					}
				}
				if !slices.Equal(held, want) {
					t.Errorf("replica %d holds targets %v, want %v", a, held, want)
				}
			}
			var table strings.Builder
			if err := rep.WriteTable(&table); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(table.String(), "2 replicas (each target's calls") {
				t.Errorf("the table does not say it loaded two replicas:\n%s", table.String())
			}
		})
	}
}

// TestSeveralReplicasRefused: a bad server pid, an empty address in the list, and --spread
// with one address are refused, naming the flag.
func TestSeveralReplicasRefused(t *testing.T) {
	for _, tc := range []struct {
		addr   string
		pids   []int
		spread bool
		want   string
	}{
		{"127.0.0.1:1", []int{1, 0}, false, "--server-pid 0"},
		{"127.0.0.1:1,", nil, false, `--addr "127.0.0.1:1,": an empty address`},
		{"127.0.0.1:1", nil, true, "--spread needs several addresses"},
	} {
		bc := bench.DefaultConfig()
		bc.Addr, bc.ServerPIDs, bc.Spread = tc.addr, tc.pids, tc.spread
		if err := bc.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("addr %q, server pids %v, spread %v: error %v, want %q", tc.addr, tc.pids, tc.spread, err, tc.want)
		}
	}
}
