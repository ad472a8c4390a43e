package fleet

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The in-tree peer: kube-controller-manager's HPA controller keeps the same fleet, and its own
// metrics say how: horizontal_pod_autoscaler_controller_reconciliations_total, and the work
// queue's histograms for the "horizontalpodautoscaler" queue (how long a due HPA waited in the
// queue, how long its sync took).

// kcmSample is the controller manager's HPA figures at one moment.
type kcmSample struct {
	reconciliations, errors float64
	queue, work             map[float64]float64 // bucket upper bound -> cumulative count
}

const hpaQueue = `name="horizontalpodautoscaler"`

func (m *measurement) readKCM(ctx context.Context) (kcmSample, error) {
	s := kcmSample{queue: map[float64]float64{}, work: map[float64]float64{}}
	err := scrape(ctx, m.client, m.kcmURL, func(name, labels string, v float64) {
		switch name {
		case "horizontal_pod_autoscaler_controller_reconciliations_total":
			s.reconciliations += v
			if !strings.Contains(labels, `error="none"`) {
				s.errors += v
			}
		case "workqueue_queue_duration_seconds_bucket", "workqueue_work_duration_seconds_bucket":
			if !strings.Contains(labels, hpaQueue) {
				return
			}
			i := strings.Index(labels, `le="`)
			if i < 0 {
				return
			}
			le, err := strconv.ParseFloat(strings.TrimSuffix(labels[i+4:], `"`), 64)
			if err != nil {
				return
			}
			if name == "workqueue_queue_duration_seconds_bucket" {
				s.queue[le] = v
			} else {
				s.work[le] = v
			}
		}
	})
	if err != nil {
		return s, fmt.Errorf("scrape kube-controller-manager: %w", err)
	}
	return s, nil
}

// BucketQuantile says in which bucket quantile q of the observations between two readings of
// a histogram falls: "<= 0.1 s", or "> 10 s" past the last finite bound, or "none".
func BucketQuantile(before, after map[float64]float64, q float64) string {
	le, prev := bucketBound(before, after, q)
	switch {
	case math.IsNaN(le):
		return "none"
	case math.IsInf(le, 1):
		return fmt.Sprintf("> %g s", prev)
	case prev > 0:
		return fmt.Sprintf("(%g, %g] s", prev, le)
	default:
		return fmt.Sprintf("<= %g s", le)
	}
}

// bucketBound is the upper bound of the bucket holding quantile q, and the bound before it.
func bucketBound(before, after map[float64]float64, q float64) (le, prev float64) {
	les := make([]float64, 0, len(after))
	for le := range after {
		les = append(les, le)
	}
	slices.Sort(les)
	if len(les) == 0 {
		return math.NaN(), 0
	}
	total := after[les[len(les)-1]] - before[les[len(les)-1]]
	if total <= 0 {
		return math.NaN(), 0
	}
	for _, le := range les {
		if after[le]-before[le] >= q*total {
			return le, prev
		}
		if !math.IsInf(le, 1) {
			prev = le
		}
	}
	return math.Inf(1), prev
}

// runInTree waits until the controller manager reconciled every HPA once, then measures
// cfg.Periods periods.
func (m *measurement) runInTree(ctx, setupCtx context.Context) (*Report, error) {
	n := float64(m.cfg.HPAs)
	warm := time.Now()
	for {
		s, err := m.readKCM(setupCtx)
		if err == nil && s.reconciliations-s.errors >= n {
			break
		}
		select {
		case <-setupCtx.Done():
			return nil, fmt.Errorf("waiting for the in-tree controller's first %d reconciliations (%g, %g failed; last scrape error %v): %w", m.cfg.HPAs, s.reconciliations, s.errors, err, setupCtx.Err())
		case <-time.After(time.Second):
		}
	}
	// One more period, so that every HPA's first sync (and the status write that comes with
	// it) is behind us, as the scaler's run measures after every first sync.
	fmt.Fprintf(m.progress, "fleet: the in-tree controller reconciled %d HPAs after %s; one more period, then measuring %d periods of %s\n", m.cfg.HPAs, time.Since(warm).Round(time.Second), m.cfg.Periods, m.cfg.Period)
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(m.cfg.Period):
	}
	t0 := time.Now()
	k0, err := m.readKCM(ctx)
	if err != nil {
		return nil, err
	}
	o, err := m.openSamples(ctx)
	if err != nil {
		return nil, err
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(time.Duration(m.cfg.Periods) * m.cfg.Period):
	}
	k1, err := m.readKCM(ctx)
	if err != nil {
		return nil, err
	}
	rep, err := m.finishSamples(ctx, t0, o)
	if err != nil {
		return nil, err
	}
	rec := (k1.reconciliations - k0.reconciliations) / rep.Wall
	rep.SyncsPerSec = rec
	rep.SyncErrorsPerSec = (k1.errors - k0.errors) / rep.Wall
	rep.InTree = &InTreeReport{
		SyncsPerHPAPerPeriod: rec * m.cfg.Period.Seconds() / n,
		QueueP50:             BucketQuantile(k0.queue, k1.queue, 0.5),
		QueueP99:             BucketQuantile(k0.queue, k1.queue, 0.99),
		WorkP50:              BucketQuantile(k0.work, k1.work, 0.5),
		WorkP99:              BucketQuantile(k0.work, k1.work, 0.99),
	}
	if kcm, ok := rep.Processes["kube-controller-manager"]; ok && rec > 0 {
		rep.CPUPerSync = time.Duration(kcm.Cores / rec * float64(time.Second))
	}
	return rep, nil
}

// InTreeReport is what the in-tree controller's own metrics say of its syncs.
type InTreeReport struct {
	SyncsPerHPAPerPeriod float64 `json:"syncs_per_hpa_per_period"`
	// QueueP50 and QueueP99 are how long a due HPA waited in the work queue, WorkP50 and
	// WorkP99 how long its sync took: the histogram bucket each falls in.
	QueueP50 string `json:"queue_p50"`
	QueueP99 string `json:"queue_p99"`
	WorkP50  string `json:"work_p50"`
	WorkP99  string `json:"work_p99"`
}
