package bench_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hpa-recommender/hpa-recommender/clients/bench"
	"github.com/hpa-recommender/hpa-recommender/server"
	"github.com/hpa-recommender/hpa-recommender/store/memstore"
)

// TestSmoke runs the tool briefly against an in-process hpa-recommender (memory store) and its
// own baseline, with a hostile caller alongside the service runs: every good call succeeds,
// some decisions scale and are reported, every hostile call gets the expected answer, and both
// outputs render.
func TestSmoke(t *testing.T) {
	cfg := server.DefaultConfig()
	cfg.Store = server.StoreMemory
	cfg.MetricsListen = ""
	srv, err := server.New(cfg, server.Deps{Store: memstore.New(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { _ = srv.Serve(ctx, lis); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	bc := bench.DefaultConfig()
	bc.Addr = lis.Addr().String()
	bc.Baseline = true
	bc.Targets = 20
	bc.Concurrency = []int{4}
	bc.Rates = []float64{200}
	bc.Warmup = 50 * time.Millisecond
	bc.Duration = 300 * time.Millisecond
	bc.Repeat = 1
	bc.ServerPID = os.Getpid()
	bc.Hostile = 1
	rep, err := bench.Run(t.Context(), bc)
	if err != nil {
		t.Fatal(err)
	}
	if p := rep.Populated; p == nil || p.Targets != 20 || p.Errors != 0 {
		t.Errorf("populated = %+v, want 20 targets without errors", p)
	}
	if len(rep.Runs) != 4 || len(rep.Summary) != 4 {
		t.Fatalf("got %d runs and %d rows, want 4 and 4 (closed and open, baseline and service)", len(rep.Runs), len(rep.Summary))
	}
	scaled := 0
	for _, r := range rep.Runs {
		if r.Recommend.Errors+r.ReportScale.Errors != 0 || r.Recommend.Count == 0 {
			t.Errorf("%s %s: %d calls, %d+%d errors", r.Server, r.Mode, r.Recommend.Count, r.Recommend.Errors, r.ReportScale.Errors)
		}
		if r.Server == "service" {
			scaled += r.ReportScale.Count
			if h := r.Hostile; h == nil || h.Sent[0] == 0 || h.Unexpected != 0 {
				t.Errorf("%s service run: hostile stats %+v, want malformed calls sent and every outcome as expected", r.Mode, h)
			}
		}
	}
	if scaled == 0 {
		t.Error("no decision scaled and was reported; the payload should make some scale")
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
	if !strings.Contains(table.String(), "rate=200") || !strings.Contains(js.String(), `"throughput_ratio"`) {
		t.Errorf("outputs miss the open-loop row or the ratios:\n%s", table.String())
	}
}
