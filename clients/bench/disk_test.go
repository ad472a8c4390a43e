package bench

import (
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
			if after := runtime.NumGoroutine(); after > goroutines {
				t.Errorf("%d goroutines before the probe, %d after it", goroutines, after)
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
