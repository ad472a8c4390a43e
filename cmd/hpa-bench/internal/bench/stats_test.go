package bench

import (
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = i + 1
	}
	tests := []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{name: "empty", sorted: nil, p: 50, want: 0},
		{name: "one sample is every percentile", sorted: ms(7), p: 99.9, want: 7 * time.Millisecond},
		{name: "median of four is the second (nearest rank)", sorted: ms(1, 2, 3, 4), p: 50, want: 2 * time.Millisecond},
		{name: "p50 of 1..100", sorted: ms(hundred...), p: 50, want: 50 * time.Millisecond},
		{name: "p90 of 1..100", sorted: ms(hundred...), p: 90, want: 90 * time.Millisecond},
		{name: "p99 of 1..100", sorted: ms(hundred...), p: 99, want: 99 * time.Millisecond},
		{name: "p99.9 of 1..100 is the max", sorted: ms(hundred...), p: 99.9, want: 100 * time.Millisecond},
		{name: "p100 is the max", sorted: ms(1, 5, 9), p: 100, want: 9 * time.Millisecond},
		{name: "tiny p is the min", sorted: ms(1, 5, 9), p: 0.001, want: 1 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Percentile(tt.sorted, tt.p); got != tt.want {
				t.Errorf("Percentile(%v, %g) = %v, want %v", tt.sorted, tt.p, got, tt.want)
			}
		})
	}
}

func TestRecorderSummary(t *testing.T) {
	var a, b Recorder
	for i := 1000; i >= 1; i-- { // unsorted on purpose
		if i%2 == 0 {
			a.Record(time.Duration(i) * time.Microsecond)
		} else {
			b.Record(time.Duration(i) * time.Microsecond)
		}
	}
	a.Error()
	b.Error()
	b.Error()
	a.Merge(&b)
	got := a.Summary()
	want := Latency{
		Count: 1000, Errors: 3, Mean: 500500 * time.Nanosecond,
		P50: 500 * time.Microsecond, P90: 900 * time.Microsecond, P99: 990 * time.Microsecond,
		P999: 999 * time.Microsecond, Max: 1000 * time.Microsecond,
	}
	if got != want {
		t.Errorf("Summary() = %+v, want %+v", got, want)
	}
}

func TestSummarizeRatiosAndMedians(t *testing.T) {
	run := func(server string, rps float64, p99ms int) Result {
		return Result{Server: server, Mode: "closed", Concurrency: 64, Throughput: rps,
			Recommend: Latency{Count: 10, P99: time.Duration(p99ms) * time.Millisecond}}
	}
	rows := summarize([]Result{
		run("baseline", 1000, 2), run("service", 400, 6),
		run("baseline", 3000, 1), run("service", 900, 9),
		run("baseline", 2000, 4), run("service", 500, 4),
	})
	if len(rows) != 2 {
		t.Fatalf("got %d rows, want 2", len(rows))
	}
	b, s := rows[0], rows[1]
	if b.Throughput != 2000 || b.P99 != 2*time.Millisecond || b.Repeats != 3 {
		t.Errorf("baseline row = %+v, want medians 2000/s and p99 2ms over 3 repeats", b)
	}
	if s.Throughput != 500 || s.P99 != 6*time.Millisecond {
		t.Errorf("service row = %+v, want medians 500/s and p99 6ms", s)
	}
	if s.ThroughputRatio != 0.25 || s.P99Ratio != 3 {
		t.Errorf("ratios = %g, %g; want 0.25 and 3", s.ThroughputRatio, s.P99Ratio)
	}
}
