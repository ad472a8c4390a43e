package hpactl

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

// simulate --history replays a target's decision log under a candidate spec.
//
// The log becomes a demand trace, one row per logged decision (a run of count identical
// decisions from time to until is count rows at its cadence, (until-time)/(count-1)). Each
// metric's demand is what its logged value says was measured:
//   - a Utilization target (Resource, ContainerResource): the logged utilization in percent
//     times the pods measured (readyPods), in percent-of-request units: every replayed pod
//     requests 100 of that resource, so the replay's utilization is the logged one when its
//     pods are the pods measured;
//   - an AverageValue target of a per-pod metric: the average times the pods measured;
//   - Object and External: the value; an AverageValue target logs the value over the
//     current replicas, so it is that average times the current replicas.
//
// The logged values mean what the target's own spec (GetTarget, the spec last seen) made
// them mean, so each metric of the candidate must be the logged metric of the same index,
// of the same kind (a Utilization target stays one); its target, tolerance, windows,
// policies, selectPolicy and bounds may change. The rows then take the path a --trace takes
// (runSimulation): pods created at a scale-up are ready after --startup, every ready pod
// reports an equal share, every scale write succeeds at once.
//
// Under the target's own spec the replay makes the logged decisions wherever pod readiness
// did not shape them. A step is compared when neither the log nor the replay counted a
// missing, unready or ignored pod in any metric; it matched when its current and desired
// counts are the logged ones.

// replayOptions are the flags of simulate --history.
type replayOptions struct {
	file, name, target, cluster string
	since                       historyFlags
	startup                     time.Duration
	plot                        string
	json, local                 bool
	options                     *pb.Options
}

// loggedStep is one logged decision: an entry, or one decision of a run.
type loggedStep struct {
	time  time.Time
	entry *pb.DecisionLogEntry
}

// expandEntries turns entries (oldest first) into one step per decision.
func expandEntries(entries []*pb.DecisionLogEntry) []loggedStep {
	var steps []loggedStep
	for _, e := range entries {
		start := e.GetTime().AsTime()
		n := max(e.GetCount(), 1)
		var cadence time.Duration
		if n > 1 && e.GetUntil() != nil {
			cadence = e.GetUntil().AsTime().Sub(start) / time.Duration(n-1)
		}
		for k := range n {
			steps = append(steps, loggedStep{time: start.Add(time.Duration(k) * cadence), entry: e})
		}
	}
	return steps
}

func parseNamespacedName(s string) (namespace, name string, err error) {
	ns, n, ok := strings.Cut(s, "/")
	if !ok || ns == "" || n == "" || strings.Contains(n, "/") {
		return "", "", fmt.Errorf("--history %q: want NAMESPACE/NAME", s)
	}
	return ns, n, nil
}

func (a *App) simulateHistory(ctx context.Context, fs *flag.FlagSet, conn *connFlags, o replayOptions) error {
	if o.file == "" {
		return errors.New("simulate --history needs -f candidate.yaml, the spec to replay the log under")
	}
	if o.since.since < 0 {
		return errors.New("--since must not be negative")
	}
	if o.startup < 0 {
		return errors.New("--startup must not be negative")
	}
	if o.plot != "" {
		if _, err := plotFormat(o.plot); err != nil {
			return err
		}
	}
	ns, name, err := parseNamespacedName(o.target)
	if err != nil {
		return err
	}
	ms, err := loadManifests(o.file, o.name, a.Stderr)
	if err != nil {
		return err
	}
	if len(ms) != 1 {
		return fmt.Errorf("--history replays one candidate and manifest %s holds %d: pick one with --name", o.file, len(ms))
	}
	candidate := ms[0]
	c, err := conn.dial(fs)
	if err != nil {
		return err
	}
	defer c.Close()
	ref := &pb.TargetRef{Cluster: o.cluster, Namespace: ns, Name: name}
	own, err := c.GetTarget(ctx, &pb.GetTargetRequest{Target: ref})
	if err != nil {
		return err
	}
	entries, err := a.fetchHistory(ctx, c, ref, o.since)
	if err != nil {
		return err
	}
	if len(entries) == 0 {
		return fmt.Errorf("%s has no decisions in the range", targetString(ref))
	}
	cfg, err := replayConfig(own.GetSpec(), candidate.spec)
	if err != nil {
		return err
	}
	logged := expandEntries(entries)
	rows, err := replayRows(own.GetSpec(), logged)
	if err != nil {
		return err
	}
	if len(rows) > maxDecisions {
		return fmt.Errorf("the log holds %d decisions, more than %d: narrow it with --since", len(rows), maxDecisions)
	}
	cfg.startup, cfg.options = o.startup, o.options
	cfg.initialReplicas = logged[0].entry.GetCurrentReplicas()
	sim := simulateFunc(a.Local.Simulate)
	if !o.local {
		sim = func(ctx context.Context, req *pb.SimulateRequest) (*pb.SimulateResponse, error) {
			return c.Simulate(ctx, req)
		}
	}
	steps, history, err := runSimulation(ctx, sim, cfg, rows)
	if err != nil {
		return err
	}
	if o.plot != "" {
		if err := writePlot(o.plot, candidate, steps); err != nil {
			return err
		}
	}
	if o.json {
		resp := &pb.SimulateResponse{History: history}
		for _, s := range steps {
			resp.Steps = append(resp.Steps, s.result)
		}
		return writeJSON(a.Stdout, resp)
	}
	fmt.Fprintf(a.Stdout, "Replay of the decision log of %s, %s to %s (%d decisions), under %s/%s of %s.\n",
		targetString(ref), logged[0].time.UTC().Format(time.RFC3339), logged[len(logged)-1].time.UTC().Format(time.RFC3339),
		len(logged), candidate.namespace, candidate.name, o.file)
	fmt.Fprintf(a.Stdout, "This is a model: each metric's demand (its logged per-pod value times the pods measured) is spread evenly over\n"+
		"the replay's ready pods, new pods are ready --startup (%s) after they are created, and every scale write succeeds at once.\n\n", o.startup)
	writeReplay(a.Stdout, own.GetSpec(), logged, steps)
	if o.plot != "" {
		fmt.Fprintf(a.Stdout, "\nwrote %s\n", o.plot)
	}
	return nil
}

// replayConfig checks that the candidate's metrics are the logged ones and builds the pods'
// requests: 100 of each resource a Utilization target measures (percent-of-request units).
func replayConfig(own, candidate *pb.HorizontalPodAutoscalerSpec) (simConfig, error) {
	cfg := simConfig{spec: candidate, requests: map[string]resource.Quantity{}}
	ownMetrics, candMetrics := specMetrics(own), specMetrics(candidate)
	if len(candMetrics) > len(ownMetrics) {
		return cfg, fmt.Errorf("the candidate has %d metrics and the log %d: the replay has no demand for the others", len(candMetrics), len(ownMetrics))
	}
	for i, cm := range candMetrics {
		om := ownMetrics[i]
		if metricKey(cm) != metricKey(om) || isUtilization(cm) != isUtilization(om) {
			return cfg, fmt.Errorf("candidate metric %d (%s) is not the logged metric %d (%s): keep each metric and its target type, change its target, the behavior or the bounds",
				i, metricKey(cm)+" "+metricTarget(cm).GetType(), i, metricKey(om)+" "+metricTarget(om).GetType())
		}
		res, container, ok := resourceOf(cm)
		if !ok {
			continue
		}
		if cm.GetType() == "ContainerResource" {
			if cfg.container != "" && cfg.container != container {
				return cfg, fmt.Errorf("the candidate's metrics name containers %s and %s: the replay's pods have one", cfg.container, container)
			}
			cfg.container = container
		}
		if isUtilization(cm) {
			cfg.requests[res] = resource.MustParse("100")
		}
	}
	return cfg, nil
}

// metricKey names what a metric measures: its type, and its resource, container or metric.
func metricKey(m *pb.MetricSpec) string {
	if res, container, ok := resourceOf(m); ok {
		if m.GetType() == "ContainerResource" {
			return fmt.Sprintf("%s %s/%s", m.GetType(), container, res)
		}
		return m.GetType() + " " + res
	}
	for _, id := range []*pb.MetricIdentifier{m.GetPods().GetMetric(), m.GetObject().GetMetric(), m.GetExternal().GetMetric()} {
		if id.GetName() != "" {
			return m.GetType() + " " + id.GetName()
		}
	}
	return m.GetType()
}

func isUtilization(m *pb.MetricSpec) bool { return metricTarget(m).GetType() == "Utilization" }

// replayRows is the demand trace of the logged steps under the own spec's meaning of their
// values.
func replayRows(own *pb.HorizontalPodAutoscalerSpec, steps []loggedStep) ([]traceRow, error) {
	ms := specMetrics(own)
	rows := make([]traceRow, 0, len(steps))
	for _, s := range steps {
		row := traceRow{time: s.time, metrics: make([]metricDemand, len(ms))}
		for i := range row.metrics {
			row.metrics[i].err = "not in the decision log"
		}
		for _, m := range s.entry.GetMetrics() {
			i := int(m.GetIndex())
			if i < 0 || i >= len(ms) {
				continue
			}
			d, err := loggedDemand(ms[i], m, s.entry.GetCurrentReplicas())
			if err != nil {
				return nil, fmt.Errorf("the decision at %s: metric %d: %w", s.time.UTC().Format(time.RFC3339), i, err)
			}
			row.metrics[i] = d
		}
		if len(row.metrics) > 0 {
			row.demand = row.metrics[0].milli
		}
		if n := len(rows); n > 0 && !row.time.After(rows[n-1].time) {
			row.time = rows[n-1].time.Add(time.Millisecond) // decisions in one millisecond keep their order
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// loggedDemand is the demand a logged metric value stands for (see the comment at the top).
func loggedDemand(m *pb.MetricSpec, lm *pb.DecisionLogMetric, currentReplicas int32) (metricDemand, error) {
	if lm.GetError() != "" {
		return metricDemand{err: lm.GetError()}, nil
	}
	q, err := resource.ParseQuantity(lm.GetValue())
	if err != nil {
		return metricDemand{}, fmt.Errorf("value %q: %w", lm.GetValue(), err)
	}
	v := q.MilliValue()
	switch {
	case m.GetType() == "Object" || m.GetType() == "External":
		if metricTarget(m).GetType() == "AverageValue" {
			v *= int64(currentReplicas)
		}
	default: // per pod: a utilization in percent (100 = the request) or an average value
		v *= int64(lm.GetReadyPods())
	}
	return metricDemand{milli: v}, nil
}

// shapedByReadiness reports whether a step's decision counted a missing, unready or ignored
// pod in some metric.
func shapedByReadiness(e *pb.DecisionLogEntry, ex *pb.Explanation) bool {
	for _, m := range e.GetMetrics() {
		if m.GetMissingPods()+m.GetUnreadyPods()+m.GetIgnoredPods() > 0 {
			return true
		}
	}
	for _, m := range ex.GetMetrics() {
		if m.GetMissingPods()+m.GetUnreadyPods()+m.GetIgnoredPods() > 0 {
			return true
		}
	}
	return false
}

// replayTotals are one side's totals over the replayed span.
type replayTotals struct {
	scales                    int
	replicaMinutes, belowProp float64
}

// writeReplay prints the logged and the replayed decisions side by side, step by step, then
// the totals of each side and the share of compared steps that matched.
func writeReplay(w io.Writer, own *pb.HorizontalPodAutoscalerSpec, logged []loggedStep, steps []simStep) {
	start := logged[0].time
	n := len(logged)
	// interval is how long a step's outcome lasted: until the next decision (the last lasts
	// as long as the one before it).
	interval := func(i int) time.Duration {
		switch {
		case i+1 < n:
			return logged[i+1].time.Sub(logged[i].time)
		case n > 1:
			return logged[n-1].time.Sub(logged[n-2].time)
		}
		return 0
	}
	var logTotals, replay replayTotals
	compared, matched, shaped := 0, 0, 0
	tw := newTable(w)
	fmt.Fprintln(tw, "TIME\tDEMAND\tLOGGED\tREPLAY\tMATCH\tREPLAY EXPLANATION")
	for i, l := range logged {
		e, s := l.entry, steps[i]
		d := interval(i).Minutes()
		// What ran after the logged decision: the count the next one started from.
		running := e.GetDesiredReplicas()
		if i+1 < n {
			running = logged[i+1].entry.GetCurrentReplicas()
		} else if e.GetOutcome() == outcomeFailed {
			running = e.GetCurrentReplicas()
		}
		logTotals.replicaMinutes += float64(running) * d
		if running < e.GetProposal() {
			logTotals.belowProp += d
		}
		if e.GetDesiredReplicas() != e.GetCurrentReplicas() && e.GetOutcome() != outcomeFailed {
			logTotals.scales++
		}
		ex := s.result.GetExplanation()
		replay.replicaMinutes += float64(s.desired) * d
		if s.desired < ex.GetProposal() {
			replay.belowProp += d
		}
		if s.desired != s.current {
			replay.scales++
		}
		match := "-"
		if shapedByReadiness(e, ex) {
			shaped++
		} else {
			compared++
			match = "no"
			if s.current == e.GetCurrentReplicas() && s.desired == e.GetDesiredReplicas() {
				matched++
				match = "yes"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%d -> %d\t%d -> %d\t%s\t%s\n", offsetString(l.time.Sub(start)), demandString(own, e),
			e.GetCurrentReplicas(), e.GetDesiredReplicas(), s.current, s.desired, match, ex.GetMessage())
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = newTable(w)
	fmt.Fprintln(tw, "TOTAL\tLOGGED\tREPLAY")
	fmt.Fprintf(tw, "scale events\t%d\t%d\n", logTotals.scales, replay.scales)
	fmt.Fprintf(tw, "replica-minutes\t%.1f\t%.1f\n", logTotals.replicaMinutes, replay.replicaMinutes)
	fmt.Fprintf(tw, "minutes below the metrics' proposal\t%.1f\t%.1f\n", logTotals.belowProp, replay.belowProp)
	tw.Flush()
	share := "-"
	if compared > 0 {
		share = fmt.Sprintf("%.1f%%", 100*float64(matched)/float64(compared))
	}
	fmt.Fprintf(w, "\nMatched the logged decision at %d of %d compared steps (%s); %d of %d steps not compared: pod readiness shaped them\n"+
		"(a missing, unready or ignored pod in the log or the replay).\n", matched, compared, share, shaped, n)
}

// demandString is the DEMAND column: each metric's logged value, times the pods measured for
// a per-pod metric ("90% x3", "450m x3", "300").
func demandString(own *pb.HorizontalPodAutoscalerSpec, e *pb.DecisionLogEntry) string {
	ms := specMetrics(own)
	var parts []string
	for _, m := range e.GetMetrics() {
		i := int(m.GetIndex())
		switch {
		case m.GetError() != "":
			parts = append(parts, "<unknown>")
		case i < len(ms) && (ms[i].GetType() == "Object" || ms[i].GetType() == "External"):
			parts = append(parts, m.GetValue())
		case i < len(ms) && isUtilization(ms[i]):
			parts = append(parts, fmt.Sprintf("%s%% x%d", m.GetValue(), m.GetReadyPods()))
		default:
			parts = append(parts, fmt.Sprintf("%s x%d", m.GetValue(), m.GetReadyPods()))
		}
	}
	return dash(strings.Join(parts, ", "))
}
