package fleet_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/hpa-recommender/hpa-recommender/cmd/hpa-bench/internal/fleet"
)

func TestAnalyseSyncs(t *testing.T) {
	t0 := time.Unix(1000, 0)
	start := 1000.0
	cfg := fleet.Config{HPAs: 3, Period: 10 * time.Second, Periods: 2, Slack: time.Second}
	got := fleet.AnalyseSyncs(cfg, map[string][]float64{
		// On time: every 10.5 s.
		"a": {start - 2, start + 8.5, start + 19},
		// 3.5 s late in the second period: stale 13.5 s > 10 + 1 (tick) + 1 (slack).
		"b": {start - 1, start + 6, start + 19.5},
		// No sync before the first period: never counted as synced then.
		"c": {start + 5, start + 15},
	}, t0, t0.Add(20*time.Second))
	if want := []float64{2.0 / 3, 2.0 / 3}; !sameFloats(got.SyncedShare, want) {
		t.Errorf("synced share = %v, want %v", got.SyncedShare, want)
	}
	if got.StaleLimit != 12 {
		t.Errorf("stale limit %g s, want 12 (period 10 + tick 1 + slack 1)", got.StaleLimit)
	}
	// Lags: a 0.5, 0.5; b 0 (7 s after the last), 3.5; c 0.
	if got.Syncs != 5 || math.Abs(got.LagMax-3.5) > 1e-9 || math.Abs(got.LagP50-0.5) > 1e-9 {
		t.Errorf("syncs %d, lag p50 %g, max %g; want 5, 0.5, 3.5", got.Syncs, got.LagP50, got.LagMax)
	}
}

func TestAnalyseSyncsNone(t *testing.T) {
	t0 := time.Unix(1000, 0)
	got := fleet.AnalyseSyncs(fleet.Config{HPAs: 2, Period: 10 * time.Second, Periods: 3}, nil, t0, t0.Add(30*time.Second))
	if !sameFloats(got.SyncedShare, []float64{0, 0, 0}) || got.Syncs != 0 || got.LagMax != 0 {
		t.Errorf("no syncs: %+v, want shares 0 and no lag", got)
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

func TestParseMetrics(t *testing.T) {
	page := `# HELP x y
hpa_scaler_last_sync_timestamp_seconds{autoscaler="a",namespace="n"} 1.7e+09
hpa_scaler_syncs_total{result="ok"} 12
bad line
`
	var got []string
	if err := fleet.ParseMetrics(strings.NewReader(page), func(name, labels string, v float64) {
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
			if got := fleet.BucketQuantile(before, after, tc.q); got != tc.want {
				t.Errorf("BucketQuantile(%g) = %q, want %q", tc.q, got, tc.want)
			}
		})
	}
	if got := fleet.BucketQuantile(before, before, 0.5); got != "none" {
		t.Errorf("no observations: %q, want none", got)
	}
}

// TestValidate: the defaults pass, and each setting out of range is refused by its flag's name.
func TestValidate(t *testing.T) {
	if err := fleet.DefaultConfig().Validate(); err != nil {
		t.Fatalf("the defaults: %v", err)
	}
	inTree := fleet.DefaultConfig()
	inTree.Controller, inTree.ServiceBin, inTree.ScalerBin = fleet.ControllerInTree, "", ""
	if err := inTree.Validate(); err != nil {
		t.Errorf("in-tree needs no binaries: %v", err)
	}
	for _, tc := range []struct {
		flag string
		set  func(*fleet.Config)
	}{
		{"-controller", func(c *fleet.Config) { c.Controller = "kcm" }},
		{"-hpas", func(c *fleet.Config) { c.HPAs = 0 }},
		{"-per-namespace", func(c *fleet.Config) { c.PerNamespace = 0 }},
		{"-period", func(c *fleet.Config) { c.Period = 500 * time.Millisecond }},
		{"-slack", func(c *fleet.Config) { c.Slack = -time.Second }},
		{"-periods", func(c *fleet.Config) { c.Periods = 0 }},
		{"-sync-jitter", func(c *fleet.Config) { c.Jitter = 1 }},
		{"-service-bin", func(c *fleet.Config) { c.ServiceBin = "" }},
	} {
		c := fleet.DefaultConfig()
		tc.set(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.flag) {
			t.Errorf("%s out of range: %v, want an error naming it", tc.flag, err)
		}
	}
}

// TestReportWrite: the text report carries the sync figures and every process.
func TestReportWrite(t *testing.T) {
	rep := &fleet.Report{
		Controller: fleet.ControllerScaler, HPAs: 10, PerNamespace: 5, Period: "15s", Periods: 2,
		SyncFigures: fleet.SyncFigures{StaleLimit: 17, SyncedShare: []float64{1, 0.9}, Syncs: 19, LagP99: 0.25},
		Processes:   map[string]fleet.ProcUsage{"hpa-scaler": {Cores: 0.125, RSSMiB: 40}},
		APIRequests: []fleet.APIRate{{Verb: "GET", Resource: "pods", PerSec: 3}},
	}
	var b strings.Builder
	if err := rep.Write(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"10 HPAs (5 per namespace) kept by hpa-scaler", "100.0% 90.0%", "p99 0.25 s", "over 19 syncs", "hpa-scaler", "0.125", "GET 3.0"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, b.String())
		}
	}
}
