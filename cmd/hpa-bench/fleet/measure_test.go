package main

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestAnalyse(t *testing.T) {
	t0 := time.Unix(1000, 0)
	start := 1000.0
	m := &measurement{cfg: config{HPAs: 3, Period: 10 * time.Second, Periods: 2, Slack: time.Second}, syncs: map[string][]float64{
		// On time: every 10.5 s.
		"a": {start - 2, start + 8.5, start + 19},
		// 3.5 s late in the second period: stale 13.5 s > 10 + 1 (tick) + 1 (slack).
		"b": {start - 1, start + 6, start + 19.5},
		// No sync before the first period: never counted as synced then.
		"c": {start + 5, start + 15},
	}}
	rep := &report{}
	m.analyse(rep, t0, t0.Add(20*time.Second))
	if got, want := rep.SyncedShare, []float64{2.0 / 3, 2.0 / 3}; !sameFloats(got, want) {
		t.Errorf("synced share = %v, want %v", got, want)
	}
	// Lags: a 0.5, 0.5; b 0 (7 s after the last), 3.5; c 0.
	if rep.Syncs != 5 || math.Abs(rep.LagMax-3.5) > 1e-9 || math.Abs(rep.LagP50-0.5) > 1e-9 {
		t.Errorf("syncs %d, lag p50 %g, max %g; want 5, 0.5, 3.5", rep.Syncs, rep.LagP50, rep.LagMax)
	}
}

func sameFloats(got, want []float64) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if math.Abs(got[i]-want[i]) > 1e-9 {
			return false
		}
	}
	return true
}

func TestParseProm(t *testing.T) {
	page := `# HELP x y
hpa_scaler_last_sync_timestamp_seconds{autoscaler="a",namespace="n"} 1.7e+09
hpa_scaler_syncs_total{result="ok"} 12
bad line
`
	var got []string
	if err := parseProm(strings.NewReader(page), func(name, labels string, v float64) {
		got = append(got, name+"|"+labels+"|"+time.Duration(v).String())
	}); err != nil {
		t.Fatal(err)
	}
	want := []string{`hpa_scaler_last_sync_timestamp_seconds|autoscaler="a",namespace="n"|1.7s`, `hpa_scaler_syncs_total|result="ok"|12ns`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestBucketQuantile(t *testing.T) {
	inf := math.Inf(1)
	before := map[float64]float64{0.1: 0, 1: 0, 10: 0, inf: 0}
	after := map[float64]float64{0.1: 50, 1: 98, 10: 99, inf: 100}
	for _, tc := range []struct {
		name string
		q    float64
		want string
	}{
		{name: "first bucket", q: 0.5, want: "<= 0.1 s"},
		{name: "middle bucket", q: 0.98, want: "(0.1, 1] s"},
		{name: "past the last bound", q: 1, want: "> 10 s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := bucketQuantile(before, after, tc.q); got != tc.want {
				t.Errorf("bucketQuantile(%g) = %q, want %q", tc.q, got, tc.want)
			}
		})
	}
	if got := bucketQuantile(before, before, 0.5); got != "none" {
		t.Errorf("no observations: %q, want none", got)
	}
}
