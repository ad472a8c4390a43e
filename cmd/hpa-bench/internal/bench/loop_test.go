package bench

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// TestOpenLoopCountsStalls checks the coordinated-omission accounting: one caller, 1000 calls
// a second for 400ms, and the first call stalls 100ms. Every call due during the stall waits
// for it, and its latency must say so: about 100 calls see tens of milliseconds, not one. A
// closed loop (or an open loop timing from the actual send) would record a single slow call.
func TestOpenLoopCountsStalls(t *testing.T) {
	const stall = 100 * time.Millisecond
	var calls atomic.Int64
	call := func(_ context.Context, _ int, st *stats, start time.Time, record bool) {
		if calls.Add(1) == 1 {
			time.Sleep(stall)
		}
		if record {
			st.recommend.Record(time.Since(start))
		}
	}
	st, _ := openLoop(t.Context(), 1000, 1, 0, 400*time.Millisecond, call)
	sum := st.recommend.Summary()
	if sum.Count != 400 {
		t.Errorf("recorded %d calls, want 400 (every scheduled call)", sum.Count)
	}
	slow := 0
	for _, d := range st.recommend.samples {
		if d >= 20*time.Millisecond {
			slow++
		}
	}
	// Calls due in the first 80ms of the stall waited at least 20ms each.
	if slow < 60 {
		t.Errorf("%d calls recorded >= 20ms, want >= 60: latency must count from the due time", slow)
	}
	if sum.Max < stall {
		t.Errorf("max latency %v, want >= the %v stall", sum.Max, stall)
	}
	// The lone caller was busy during the stall, so the calls due then started late: that is
	// the lag, counted for every recorded call.
	lag := st.lag.Summary()
	if lag.Count != 400 || lag.Max < stall*8/10 || lag.P50 > lag.Max {
		t.Errorf("lag %+v, want 400 samples with a max near the %v stall", lag, stall)
	}
}

func TestOpenLoopWarmupNotRecorded(t *testing.T) {
	var made atomic.Int64
	call := func(_ context.Context, _ int, st *stats, start time.Time, record bool) {
		made.Add(1)
		if record {
			st.recommend.Record(time.Since(start))
		}
	}
	st, _ := openLoop(t.Context(), 500, 4, 100*time.Millisecond, 200*time.Millisecond, call)
	if got := made.Load(); got != 150 {
		t.Errorf("made %d calls, want 150 (500/s over 300ms)", got)
	}
	if got := st.recommend.Count(); got != 100 {
		t.Errorf("recorded %d calls, want the 100 after the warm-up", got)
	}
}

func TestClosedLoopKeepsConcurrency(t *testing.T) {
	var inflight, peak atomic.Int64
	call := func(_ context.Context, _ int, st *stats, start time.Time, record bool) {
		n := inflight.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(time.Millisecond)
		inflight.Add(-1)
		if record {
			st.recommend.Record(time.Since(start))
		}
	}
	st, elapsed := closedLoop(t.Context(), 8, 20*time.Millisecond, 100*time.Millisecond, call)
	if p := peak.Load(); p != 8 {
		t.Errorf("peak concurrency %d, want 8", p)
	}
	if st.recommend.Count() == 0 || elapsed < 100*time.Millisecond {
		t.Errorf("recorded %d calls over %v, want some over >= 100ms", st.recommend.Count(), elapsed)
	}
}
