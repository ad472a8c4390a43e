package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hpa-recommender/hpa-recommender/clients/bench"
)

// TestRunWritesJSONAndProfile runs the tool against its own no-op baseline only: --json-out
// gets the full report and --cpuprofile a profile, next to the table on stdout.
func TestRunWritesJSONAndProfile(t *testing.T) {
	dir := t.TempDir()
	out, prof := filepath.Join(dir, "report.json"), filepath.Join(dir, "cpu.prof")
	err := run([]string{"--addr", "", "--baseline", "--targets", "10", "--concurrency", "2", "--rate", "200",
		"--duration", "300ms", "--warmup", "0s", "--repeat", "1", "--quiet", "--json-out", out, "--cpuprofile", prof})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rep bench.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("--json-out is not a report: %v", err)
	}
	if len(rep.Summary) != 2 || rep.Summary[0].Throughput <= 0 || rep.Summary[1].Mode != "open" || rep.Summary[1].LagP99 <= 0 {
		t.Errorf("summary %+v: want a closed and an open baseline row with throughput and lag", rep.Summary)
	}
	if fi, err := os.Stat(prof); err != nil || fi.Size() == 0 {
		t.Errorf("--cpuprofile: %v, %v", fi, err)
	}
}

// TestBadLoadSwing: a load swing outside [0, 1) is refused before any load, naming the flag.
func TestBadLoadSwing(t *testing.T) {
	for _, v := range []string{"-0.1", "1", "NaN"} {
		err := run([]string{"--addr", "", "--baseline", "--concurrency", "1", "--duration", "10ms", "--load-swing", v})
		if err == nil || !strings.Contains(err.Error(), "--load-swing") {
			t.Errorf("--load-swing %s: error %v, want one naming --load-swing", v, err)
		}
	}
}
