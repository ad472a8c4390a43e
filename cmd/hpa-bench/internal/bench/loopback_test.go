package bench

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestProbeLoopback(t *testing.T) {
	rt, err := ProbeLoopback(100 * time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if rt.Count == 0 || rt.P50 <= 0 || rt.P50 > rt.P99 || rt.P99 > rt.Max {
		t.Errorf("probe summary %+v: want samples with 0 < p50 <= p99 <= max", rt)
	}
	// Each round trip is four system calls and two wake-ups: some CPU. (No upper bound:
	// other tests of this package may run in the same process meanwhile.)
	if runtime.GOOS == "linux" && rt.CPU <= 0 {
		t.Errorf("CPU per round trip %s: want it measured", rt.CPU)
	}
	line := rt.String()
	if !strings.Contains(line, "round trips of 64 B over loopback TCP, p50 ") {
		t.Errorf("report line %q does not say what was measured", line)
	}
	if runtime.GOOS == "linux" && !strings.Contains(line, "µs CPU each") {
		t.Errorf("report line %q does not give the CPU per round trip", line)
	}
}
