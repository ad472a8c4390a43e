package bench

import (
	"math"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestProbeDisk: both probes measure write-and-syncs, remove their file, and fail on a missing
// directory. The idle one reports the CPU each took; the busy one does not (its spinning
// goroutines' CPU is the process's too), and it stops them before it returns.
func TestProbeDisk(t *testing.T) {
	for _, tc := range []struct {
		name  string
		probe func(string, time.Duration) (DiskSync, error)
		busy  bool
	}{{"idle", ProbeDisk, false}, {"busy", ProbeDiskBusy, true}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			goroutines := runtime.NumGoroutine()
			lat, err := tc.probe(dir, 100*time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			if lat.Count == 0 || lat.P50 <= 0 || lat.P50 > lat.P99 || lat.P99 > lat.Max {
				t.Errorf("probe summary %+v: want samples with 0 < p50 <= p99 <= max", lat)
			}
			line := lat.String()
			switch {
			case tc.busy && (lat.CPU != 0 || strings.Contains(line, "CPU each")):
				t.Errorf("CPU per sync %s reported (%q), though the spinning goroutines' CPU is in it", lat.CPU, line)
			// A write and a sync are system calls: each costs some CPU. (No upper bound: other
			// tests of this package may run in the same process meanwhile.)
			case !tc.busy && runtime.GOOS == "linux" && (lat.CPU <= 0 || !strings.Contains(line, "µs CPU each")):
				t.Errorf("CPU per sync %s, report line %q: want it measured and given", lat.CPU, line)
			}
			switch st := lat.Stalls; {
			case !tc.busy && (st != nil || strings.Contains(line, "stood still")):
				t.Errorf("stalls %+v reported by the idle probe (%q): only the busy one measures them", st, line)
			case tc.busy && st == nil:
				t.Errorf("the busy probe reports no stalls (%q)", line)
			case tc.busy && (st.Share < 0 || st.Share > 1 || st.Count < 0 || st.Longest < 0 || !strings.Contains(line, "every CPU stood still")):
				t.Errorf("stalls %+v, line %q: want a share within [0, 1] and the line to give it", st, line)
			case tc.busy && st.Count > 0 && !strings.Contains(line, "µs per sync"):
				t.Errorf("line %q: %d stalls, but no time per sync", line, st.Count)
			}
			// A goroutine that has signalled its end may still be counted for a moment.
			after := runtime.NumGoroutine()
			for deadline := time.Now().Add(time.Second); after > goroutines && time.Now().Before(deadline); after = runtime.NumGoroutine() {
				time.Sleep(time.Millisecond)
			}
			if after > goroutines {
				t.Errorf("%d goroutines before the probe, %d a second after it", goroutines, after)
			}
			if left, err := os.ReadDir(dir); err != nil || len(left) != 0 {
				t.Errorf("the probe left %d file(s) behind (%v)", len(left), err)
			}
			if _, err := tc.probe(dir+"/missing", 10*time.Millisecond); err == nil {
				t.Error("probing a missing directory succeeded")
			}
		})
	}
}

// TestStallsOf: a stall is where every spinning goroutine's pauses overlap, for at least
// minStall; its share is of the whole probe, and its period the median interval between starts.
func TestStallsOf(t *testing.T) {
	m := func(a, b float64) span {
		return span{time.Duration(a * float64(time.Millisecond)), time.Duration(b * float64(time.Millisecond))}
	}
	gaps := [][]span{
		{m(0, 3), m(10, 12), m(50, 52), m(100, 112), m(200, 210), m(300, 305)},
		{m(1, 4), m(11, 11.5), m(101, 113), m(199, 209), m(300, 306)},
	}
	// Overlaps: 1-3 (2 ms), 11-11.5 (too short), 101-112 (11), 200-209 (9), 300-305 (5); the
	// pause at 50 ms is the first goroutine's alone.
	got := stallsOf(gaps, time.Second, 600)
	want := Stalls{Share: 0.027, Count: 4, Longest: 11 * time.Millisecond, Every: 100 * time.Millisecond, Total: 27 * time.Millisecond, PerSync: 45 * time.Microsecond}
	share := got.Share
	got.Share = want.Share
	if got != want || math.Abs(share-want.Share) > 1e-9 {
		t.Errorf("stallsOf = %+v, want %+v", got, want)
	}
	// No syncs: no time per sync.
	if got := stallsOf(gaps, time.Second, 0); got.PerSync != 0 || got.Total != want.Total {
		t.Errorf("without syncs: %+v, want the total and no time per sync", got)
	}
	// A third goroutine that never paused at 200 ms removes that stall.
	gaps = append(gaps, []span{m(0, 5), m(100, 120), m(290, 310)})
	if got := stallsOf(gaps, time.Second, 0); got.Count != 3 || got.Every != 199*time.Millisecond || math.Abs(got.Share-0.018) > 1e-9 {
		t.Errorf("with a third goroutine: %+v, want 3 stalls (2 + 11 + 5 ms, 1.8%%), the median of 100 and 199 ms between them", got)
	}
	// And a fourth that ran at 1-3 ms leaves two stalls: too few for a period.
	gaps = append(gaps, []span{m(90, 130), m(250, 320)})
	if got := stallsOf(gaps, time.Second, 0); got.Count != 2 || got.Every != 0 {
		t.Errorf("with a fourth goroutine: %+v, want 2 stalls and no period", got)
	}
	if got := stallsOf(nil, time.Second, 10); got != (Stalls{}) {
		t.Errorf("no goroutines: %+v", got)
	}
}

// TestProbeStops: the paced probe writes blocks of the size asked at about the rate asked
// (never more syncs than the rate allows), runs no syncs at rate 0, reports stalls in either
// case, and refuses a size that is not positive.
func TestProbeStops(t *testing.T) {
	dir := t.TempDir()
	st, err := ProbeStops(dir, 200*time.Millisecond, StopProbe{Rate: 50, Size: 8192, Spinners: 1, Duty: 0.5, Period: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	// 50 a second for 0.2 s: the first at once, then one every 20 ms.
	if st.Count < 2 || st.Count > 11 || st.Size != 8192 || st.Stalls == nil {
		t.Errorf("%+v: want 2-11 syncs of 8192 B and the stalls", st)
	}
	if line := st.String(); !strings.Contains(line, "write+fdatasync of 8 KiB") || !strings.Contains(line, "stood still") {
		t.Errorf("line %q: want the size and the stalls", line)
	}
	none, err := ProbeStops(dir, 50*time.Millisecond, StopProbe{Size: 4096, Spinners: 1})
	if err != nil {
		t.Fatal(err)
	}
	if none.Count != 0 || none.Stalls == nil || none.Stalls.PerSync != 0 {
		t.Errorf("rate 0: %+v, want no syncs, stalls measured, no time per sync", none)
	}
	if _, err := ProbeStops(dir, 10*time.Millisecond, StopProbe{Rate: 10, Spinners: 1}); err == nil || !strings.Contains(err.Error(), "0 bytes") {
		t.Errorf("size 0: error %v, want one naming the size", err)
	}
	if _, err := ProbeStops(dir, 10*time.Millisecond, StopProbe{Rate: 10, Size: 4096, Duty: 0.5}); err == nil || !strings.Contains(err.Error(), "period") {
		t.Errorf("a duty without a period: error %v, want one naming the period", err)
	}
	if left, err := os.ReadDir(dir); err != nil || len(left) != 0 {
		t.Errorf("the probe left %d file(s) behind (%v)", len(left), err)
	}
}
