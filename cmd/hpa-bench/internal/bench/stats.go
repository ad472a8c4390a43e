package bench

import (
	"math"
	"slices"
	"time"
)

// Recorder collects latencies. It is not safe for concurrent use: give each caller goroutine
// its own and Merge them.
type Recorder struct {
	samples []time.Duration
	errors  int
}

// Record adds one successful call's latency.
func (r *Recorder) Record(d time.Duration) { r.samples = append(r.samples, d) }

// Error counts one failed call; failed calls do not enter the latency distribution.
func (r *Recorder) Error() { r.errors++ }

// Merge adds every sample and error of o.
func (r *Recorder) Merge(o *Recorder) {
	r.samples = append(r.samples, o.samples...)
	r.errors += o.errors
}

// Count is the number of successful calls recorded.
func (r *Recorder) Count() int { return len(r.samples) }

// Latency summarizes a latency distribution. Percentiles are exact (nearest rank over every
// sample), not bucketed.
type Latency struct {
	Count  int           `json:"count"`
	Errors int           `json:"errors"`
	Mean   time.Duration `json:"mean_ns"`
	P50    time.Duration `json:"p50_ns"`
	P90    time.Duration `json:"p90_ns"`
	P99    time.Duration `json:"p99_ns"`
	P999   time.Duration `json:"p999_ns"`
	Max    time.Duration `json:"max_ns"`
}

// Summary sorts the samples (in place) and returns their distribution.
func (r *Recorder) Summary() Latency {
	s := r.samples
	slices.Sort(s)
	out := Latency{Count: len(s), Errors: r.errors}
	if len(s) == 0 {
		return out
	}
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	out.Mean = sum / time.Duration(len(s))
	out.P50 = Percentile(s, 50)
	out.P90 = Percentile(s, 90)
	out.P99 = Percentile(s, 99)
	out.P999 = Percentile(s, 99.9)
	out.Max = s[len(s)-1]
	return out
}

// Percentile returns the nearest-rank p-th percentile (0 < p <= 100) of sorted: the smallest
// sample such that at least p% of the samples are less than or equal to it. It returns 0 for
// no samples.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	// The epsilon keeps float error (99.9/100*1000 = 999.0000000000001) from skipping a rank.
	rank := int(math.Ceil(p/100*float64(n) - 1e-9))
	rank = min(max(rank, 1), n)
	return sorted[rank-1]
}
