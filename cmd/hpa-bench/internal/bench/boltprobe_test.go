package bench_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hpa-recommender/hpa-recommender/cmd/hpa-bench/internal/bench"
)

// TestProbeBolt: a short probe commits writes, and its counts add up: every write it reports
// is a latency sample and a counter bump read back from the file, no batch holds more writes
// than there are writers, and the scratch file is gone afterwards.
func TestProbeBolt(t *testing.T) {
	dir := t.TempDir()
	p := bench.BoltProbe{Dir: dir, Writers: 8, Keys: 100, Size: 2200, Duration: 300 * time.Millisecond}
	c, err := bench.ProbeBolt(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	if c.Writes == 0 {
		t.Fatal("no write committed")
	}
	if c.Latency.Count != c.Writes || c.Counted != uint64(c.Writes) {
		t.Errorf("%d writes, %d latency samples, %d counted in the file: want all equal", c.Writes, c.Latency.Count, c.Counted)
	}
	if c.Commits < 1 || c.Commits > c.Writes || c.Commits*p.Writers < c.Writes {
		t.Errorf("%d writes in %d commits of at most %d each", c.Writes, c.Commits, p.Writers)
	}
	if c.Writers != 8 || c.Keys != 100 || c.Size != 2200 || c.PerSec <= 0 || c.Latency.P50 <= 0 || c.Latency.Max < c.Latency.P99 {
		t.Errorf("report %+v", c)
	}
	if left, err := os.ReadDir(dir); err != nil || len(left) != 0 {
		t.Errorf("the directory holds %v (%v) after the probe, want nothing", left, err)
	}
	var b strings.Builder
	if err := c.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "writes/s") || !strings.Contains(b.String(), "p99") {
		t.Errorf("text report:\n%s", b.String())
	}
}

func TestProbeBoltRefusesBadSettings(t *testing.T) {
	good := bench.BoltProbe{Dir: t.TempDir(), Writers: 1, Keys: 1, Size: 8, Duration: time.Millisecond}
	for _, tc := range []struct {
		want string
		set  func(*bench.BoltProbe)
	}{
		{"writers", func(p *bench.BoltProbe) { p.Writers = 0 }},
		{"keys", func(p *bench.BoltProbe) { p.Keys = 0 }},
		{"bytes", func(p *bench.BoltProbe) { p.Size = 7 }},
		{"duration", func(p *bench.BoltProbe) { p.Duration = 0 }},
	} {
		p := good
		tc.set(&p)
		if _, err := bench.ProbeBolt(t.Context(), p); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s out of range: %v, want an error naming it", tc.want, err)
		}
	}
}
