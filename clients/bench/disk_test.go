package bench

import (
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestProbeDisk(t *testing.T) {
	dir := t.TempDir()
	lat, err := ProbeDisk(dir, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if lat.Count == 0 || lat.P50 <= 0 || lat.P50 > lat.P99 || lat.P99 > lat.Max {
		t.Errorf("probe summary %+v: want samples with 0 < p50 <= p99 <= max", lat)
	}
	// A write and a sync are system calls: each costs some CPU. (No upper bound: other tests
	// of this package may run in the same process meanwhile.)
	if runtime.GOOS == "linux" && lat.CPU <= 0 {
		t.Errorf("CPU per sync %s: want it measured", lat.CPU)
	}
	if line := lat.String(); runtime.GOOS == "linux" && !strings.Contains(line, "µs CPU each") {
		t.Errorf("report line %q does not give the CPU per sync", line)
	}
	left, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("the probe left %d file(s) behind", len(left))
	}
	if _, err := ProbeDisk(dir+"/missing", 10*time.Millisecond); err == nil {
		t.Error("probing a missing directory succeeded")
	}
}

// TestProbeDiskBusy: the probe with every CPU busy measures syncs as the idle one does, and
// stops its spinning goroutines and removes its file when it returns.
func TestProbeDiskBusy(t *testing.T) {
	dir := t.TempDir()
	before := runtime.NumGoroutine()
	lat, err := ProbeDiskBusy(dir, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if lat.Count == 0 || lat.P50 <= 0 || lat.P50 > lat.P99 || lat.P99 > lat.Max {
		t.Errorf("probe summary %+v: want samples with 0 < p50 <= p99 <= max", lat)
	}
	if lat.CPU != 0 || strings.Contains(lat.String(), "CPU each") {
		t.Errorf("CPU per sync %s reported, though the spinning goroutines' CPU is in it", lat.CPU)
	}
	if after := runtime.NumGoroutine(); after > before {
		t.Errorf("%d goroutines before the probe, %d after it", before, after)
	}
	if left, err := os.ReadDir(dir); err != nil || len(left) != 0 {
		t.Errorf("the probe left %d file(s) behind (%v)", len(left), err)
	}
	if _, err := ProbeDiskBusy(dir+"/missing", 10*time.Millisecond); err == nil {
		t.Error("probing a missing directory succeeded")
	}
}
