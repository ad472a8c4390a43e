package hpactl_test

import (
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestSimulateSyncPeriod: the controller decides every --sync-period between the trace's rows,
// on the demand of the latest row, and the time column takes durations.
func TestSimulateSyncPeriod(t *testing.T) {
	addr := startServer(t)
	// Rows at 0, 30s and 2m: the decisions in between (45s ... 105s) see the demand of 30s.
	trace := writeFile(t, "load.csv", "time,demand\n0,1\n30s,5\n2m,5\n")
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	offsets := func(t *testing.T, args ...string) ([]time.Duration, map[time.Duration][2]int32) {
		t.Helper()
		args = append([]string{"simulate", "-f", hpaYAML, "--trace", trace, "-o", "json"}, args...)
		resp := simulateJSON(t, run(t, addr, args...))
		var got []time.Duration
		replicas := map[time.Duration][2]int32{}
		prev := int32(2) // minReplicas: the initial count
		for _, s := range resp.GetSteps() {
			off := s.GetTime().AsTime().Sub(start)
			got = append(got, off)
			replicas[off] = [2]int32{prev, s.GetDesiredReplicas()}
			prev = s.GetDesiredReplicas()
		}
		return got, replicas
	}

	var want []time.Duration
	for s := time.Duration(0); s <= 2*time.Minute; s += 15 * time.Second {
		want = append(want, s)
	}
	got, replicas := offsets(t)
	if diff := cmp.Diff(got, want); diff != "" {
		t.Fatalf("decision times with the default 15s (-got +want):\n%s", diff)
	}
	// The scale-up at the 30s row (2 -> 6 by the Pods policy) is followed by another one once
	// the new pods are ready (30s of --startup later), at a time no row has.
	if r := replicas[30*time.Second]; r != [2]int32{2, 6} {
		t.Errorf("at 30s: %d -> %d, want 2 -> 6", r[0], r[1])
	}
	between := 0
	for _, off := range want {
		if r := replicas[off]; off != 0 && off != 30*time.Second && off != 2*time.Minute && r[0] != r[1] {
			between++
		}
	}
	if between == 0 {
		t.Errorf("no decision between the rows changed the replicas: %v", replicas)
	}

	got, _ = offsets(t, "--sync-period", "40s")
	if diff := cmp.Diff(got, []time.Duration{0, 40 * time.Second, 80 * time.Second, 120 * time.Second}); diff != "" {
		t.Errorf("decision times with --sync-period 40s (-got +want):\n%s", diff)
	}

	// The table has one line per decision, the held demand included.
	r := run(t, addr, "simulate", "-f", hpaYAML, "--trace", trace, "--local")
	mustOK(t, r)
	if got := strings.Count(r.stdout, "\n"); got != 1+len(want) {
		t.Errorf("table has %d lines, want a header and %d decisions:\n%s", got, len(want), r.stdout)
	}
	if l := lineWith(t, r.stdout, "1m45s"); !strings.HasPrefix(l, "1m45s 5 ") {
		t.Errorf("the decision at 1m45s: %q, want the demand 5 of the row at 30s", l)
	}
}

func TestSimulateSyncPeriodErrors(t *testing.T) {
	tests := []struct {
		name  string
		trace string
		args  []string
		want  string
	}{
		{name: "zero period", trace: "time,demand\n0,1\n", args: []string{"--sync-period", "0s"}, want: "--sync-period must be positive, not 0s"},
		{name: "negative period", trace: "time,demand\n0,1\n", args: []string{"--sync-period", "-15s"}, want: "--sync-period must be positive, not -15s"},
		{name: "too many decisions", trace: "time,demand\n0,1\n100h,1\n", args: []string{"--sync-period", "1s"},
			want: "the trace spans 100h0m0s: at --sync-period 1s that is 360001 decisions, more than 20000"},
		{name: "negative duration", trace: "time,demand\n-5s,1\n", want: `line 2: time "-5s": a duration from the start must be within [0s, 1e9s]`},
		{name: "mixed kinds", trace: "time,demand\n0,1\n2026-06-01T00:00:00Z,1\n", want: `line 3: time "2026-06-01T00:00:00Z" mixes RFC 3339 times and offsets from the start`},
		{name: "not a time", trace: "time,demand\n1 minute,1\n", want: `line 2: time "1 minute": neither seconds from the start`},
		{name: "durations go back", trace: "time,demand\n1m,1\n59s,1\n", want: `line 3: time "59s" does not come after the previous row's`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"simulate", "-f", hpaYAML, "--trace", writeFile(t, "load.csv", tt.trace), "--local"}, tt.args...)
			r := run(t, "", args...)
			if r.code != 1 || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want 1 and %q", r.code, r.stderr, tt.want)
			}
		})
	}
}

// TestSimulatePlotMarksHeldSteps: the chart's x axis is labelled in durations, the replica
// lines are drawn each with its own dash pattern, and every step a stabilization window or a
// policy held is named on the chart with what the decision's explanation says held it.
func TestSimulatePlotMarksHeldSteps(t *testing.T) {
	svgPath := filepath.Join(t.TempDir(), "out.svg")
	args := []string{"simulate", "-f", hpaYAML, "--trace", loadCSV, "--request", "cpu=1", "--local"}
	resp := simulateJSON(t, run(t, "", append(args, "-o", "json")...))
	mustOK(t, run(t, "", append(args, "--plot", svgPath)...))
	b, err := os.ReadFile(svgPath)
	if err != nil {
		t.Fatal(err)
	}
	svg := string(b)
	texts := map[string]bool{}
	for _, m := range regexp.MustCompile(`>([^<>]*)</text>`).FindAllStringSubmatch(svg, -1) {
		texts[html.UnescapeString(m[1])] = true
	}

	// load.csv spans 20 minutes: labels every 2 minutes.
	for _, want := range []string{"0s", "2m", "10m", "20m", "time since the first decision"} {
		if !texts[want] {
			t.Errorf("the chart has no text %q", want)
		}
	}
	if texts["minutes"] {
		t.Error("the x axis is still labelled in bare minutes")
	}

	// What held the decisions, from their explanations: the chart must name each.
	var windows, policies int
	for _, s := range resp.GetSteps() {
		ex := s.GetExplanation()
		if ex.GetFinal() == ex.GetProposal() {
			continue
		}
		if ex.GetStabilized() != ex.GetProposal() {
			windows++
			want := "stabilization window " + shortDuration(ex.GetStabilizationWindow().AsDuration())
			if !containsText(texts, want) {
				t.Errorf("step at %s held by %q: the chart does not name it", s.GetTime().AsTime().Format(time.TimeOnly), want)
			}
		}
		if ex.GetFinal() != ex.GetStabilized() {
			policies++
			if p := ex.GetLimitingPolicy(); !containsText(texts, p) {
				t.Errorf("step at %s limited by %q: the chart does not name it", s.GetTime().AsTime().Format(time.TimeOnly), p)
			}
		}
	}
	if windows == 0 || policies == 0 {
		t.Fatalf("the trace should have steps held by a window (%d) and by a policy (%d)", windows, policies)
	}

	// current, ready, desired and the proposal each have their own dash pattern.
	dashes := map[string]bool{}
	for _, m := range regexp.MustCompile(`stroke-dasharray:([0-9.,]+)`).FindAllStringSubmatch(svg, -1) {
		dashes[m[1]] = true
	}
	if len(dashes) < 4 {
		t.Errorf("the chart has %d dash patterns %v, want the replica lines told apart", len(dashes), dashes)
	}
}

// containsText reports whether any text of the chart contains s.
func containsText(texts map[string]bool, s string) bool {
	for t := range texts {
		if strings.Contains(t, s) {
			return true
		}
	}
	return false
}

// shortDuration is d.String() without zero minutes or seconds: "2m", "1h", "1m30s".
func shortDuration(d time.Duration) string {
	s := d.String()
	zero := regexp.MustCompile(`([hm])0[ms]`)
	for range 2 {
		s = zero.ReplaceAllString(s, "$1")
	}
	return s
}
