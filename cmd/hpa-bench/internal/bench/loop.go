package bench

import (
	"context"
	"sync"
	"time"
)

// stats are one caller goroutine's records.
type stats struct {
	recommend Recorder // Recommend latency: from the intended send time in open loop
	report    Recorder // ReportScale latency, from its own send
	// lag is, in open loop, how late each call started after it was due: the generator's own
	// share of the Recommend latency (a busy machine wakes its dispatcher late).
	lag    Recorder
	scaled int // Recommend answers that asked for a scale
}

func (s *stats) merge(o *stats) {
	s.recommend.Merge(&o.recommend)
	s.report.Merge(&o.report)
	s.lag.Merge(&o.lag)
	s.scaled += o.scaled
}

// callFunc does one unit of work and records it in st, with Recommend's latency measured from
// start. record is false during warm-up: the call is made, not recorded.
type callFunc func(ctx context.Context, worker int, st *stats, start time.Time, record bool)

// closedLoop runs conc callers back to back for warmup+d and returns the merged records of the
// calls started after the warm-up, and how long the measured part lasted (until the last
// recorded call ended).
func closedLoop(ctx context.Context, conc int, warmup, d time.Duration, call callFunc) (*stats, time.Duration) {
	t0 := time.Now()
	measureFrom, end := t0.Add(warmup), t0.Add(warmup+d)
	per := make([]stats, conc)
	var wg sync.WaitGroup
	for w := range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				start := time.Now()
				if !start.Before(end) {
					return
				}
				call(ctx, w, &per[w], start, !start.Before(measureFrom))
			}
		}()
	}
	wg.Wait()
	return mergeAll(per), time.Since(measureFrom)
}

// openLoop starts calls at a fixed rate for warmup+d, whatever the answers: call i is due at
// t0 + i/rate, and its latency counts from then, not from when a free caller got to it, so a
// server stall shows as the latency every due call suffered (no coordinated omission). At most
// maxInflight calls run at once; further due calls queue (their wait counts).
func openLoop(ctx context.Context, rate float64, maxInflight int, warmup, d time.Duration, call callFunc) (*stats, time.Duration) {
	interval := time.Duration(float64(time.Second) / rate)
	total := int((warmup + d).Seconds() * rate)
	warm := int(warmup.Seconds() * rate)
	type job struct {
		due    time.Time
		record bool
	}
	queue := make(chan job, total) // never blocks the schedule: lateness is the callers' to count
	per := make([]stats, maxInflight)
	var wg sync.WaitGroup
	for w := range maxInflight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range queue {
				if ctx.Err() != nil {
					continue // drain
				}
				if j.record {
					per[w].lag.Record(time.Since(j.due))
				}
				call(ctx, w, &per[w], j.due, j.record)
			}
		}()
	}
	t0 := time.Now()
	for i := 0; i < total && ctx.Err() == nil; i++ {
		due := t0.Add(time.Duration(i) * interval)
		if wait := time.Until(due); wait > 0 {
			time.Sleep(wait)
		}
		queue <- job{due: due, record: i >= warm}
	}
	close(queue)
	wg.Wait()
	return mergeAll(per), time.Since(t0.Add(time.Duration(warm) * interval))
}

func mergeAll(per []stats) *stats {
	out := &stats{}
	for i := range per {
		out.merge(&per[i])
	}
	return out
}
