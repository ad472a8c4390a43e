package recommender

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// explainFailure is the log sentence for a reconcile whose metrics could not be computed.
func explainFailure(current int32, ex *Explanation) string {
	var errs []string
	for _, m := range ex.Metrics {
		if m.Error != "" {
			errs = append(errs, m.Name+": "+m.Error)
		}
	}
	if len(errs) < len(ex.Metrics) {
		return fmt.Sprintf("no change at %d: a metric failed and the others propose a scale-down, which needs every metric (%s)", current, strings.Join(errs, "; "))
	}
	return fmt.Sprintf("no change at %d: no metric could be computed (%s)", current, strings.Join(errs, "; "))
}

// decisionFacts is what the rules did beyond the Explanation's public fields, gathered while
// deciding so the sentence can name every rule that held or moved the count.
type decisionFacts struct {
	// metric is the winning metric's facts.
	metric metricFacts
	// held is the recommendation the stabilization window kept (zero Time when none).
	held Recommendation
	// policy is the rate policy that bound, nil when none (or selectPolicy Disabled, or legacy).
	policy *ScalingPolicy
	// resumeFloor is set when a target scaled to zero resumed at minReplicas.
	resumeFloor bool
}

// heldBy returns the newest recommendation of value v that in accepts, or the zero one.
func heldBy(recs []Recommendation, v int32, in func(time.Time) bool) Recommendation {
	var out Recommendation
	for _, r := range recs {
		if r.Replicas == v && in(r.Time) && !r.Time.Before(out.Time) {
			out = r
		}
	}
	return out
}

// band renders a tolerance bound: two decimals at least, more when the tolerance needs them.
func band(v float64) string {
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if len(s) > 6 {
		s = strconv.FormatFloat(v, 'f', 4, 64)
	}
	if i := strings.IndexByte(s, '.'); i < 0 {
		s += ".00"
	} else if len(s)-i < 3 {
		s += "0"
	}
	return s
}

func (t tolerances) String() string {
	return "the tolerance " + band(1-t.down) + "–" + band(1+t.up)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

// explainRules renders the winning metric's tolerance and re-count rules and its proposal.
func explainRules(b *strings.Builder, f *metricFacts, ratio float64, proposal, cur int32) {
	proposes := func() {
		if proposal != cur {
			fmt.Fprintf(b, " proposes %d", proposal)
		} else {
			b.WriteString(" proposes no change")
		}
	}
	if f.recounted && f.missing+f.unready > 0 {
		dir := "scale-up"
		if ratio < 1 {
			dir = "scale-down"
		}
		var parts []string
		if f.missing > 0 {
			parts = append(parts, plural(f.missing, "pod without a sample", "pods without a sample")+" at "+f.missingFill)
		}
		if f.unready > 0 {
			parts = append(parts, plural(f.unready, "unready pod", "unready pods")+" at "+f.unreadyFill)
		}
		fmt.Fprintf(b, " (ratio %.3f); for a %s, re-counting %s gives ratio %.3f", ratio, dir, strings.Join(parts, " and "), f.ratio2)
		switch f.outcome {
		case factWithin:
			fmt.Fprintf(b, ", within %s, so it proposes no change", f.tol)
		case factReversed:
			b.WriteString(", which reverses the direction, so the proposal is dropped (no change)")
		case factCountFlip:
			rel := "fewer"
			if ratio < 1 {
				rel = "more"
			}
			fmt.Fprintf(b, ", or %d replicas: %s than the current %d for a %s, so the proposal is dropped (no change)", f.count, rel, cur, dir)
		default:
			b.WriteString(", and")
			proposes()
		}
		return
	}
	switch f.outcome {
	case factWithin:
		fmt.Fprintf(b, ", ratio %.3f within %s,", ratio, f.tol)
	case factNoTolerance:
		b.WriteString(", with no tolerance at 0 replicas,")
	}
	proposes()
}

// explainDecision is the log sentence for a decision that reached a replica count.
func explainDecision(spec *Spec, d Decision, reason string, ex *Explanation, facts *decisionFacts) string {
	var b strings.Builder
	cur, want := d.CurrentReplicas, d.DesiredReplicas
	switch {
	case want > cur:
		fmt.Fprintf(&b, "scale up %d -> %d", cur, want)
	case want < cur:
		fmt.Fprintf(&b, "scale down %d -> %d", cur, want)
	default:
		fmt.Fprintf(&b, "no change at %d", cur)
	}
	if ex.WinningMetric < 0 {
		// Out-of-range correction: no metrics were read.
		fmt.Fprintf(&b, ": %s (min %d, max %d)", strings.ToLower(reason[:1])+reason[1:], minReplicasOf(spec), spec.MaxReplicas)
		return b.String()
	}
	b.WriteString(": ")
	b.WriteString(describeMetric(spec, d, int(ex.WinningMetric)))
	ratio := math.NaN()
	if i := int(ex.WinningMetric); i < len(ex.Metrics) {
		ratio = ex.Metrics[i].UsageRatio
	}
	explainRules(&b, &facts.metric, ratio, ex.Proposal, cur)
	if ex.Stabilized != ex.Proposal {
		// A higher held value is the (legacy or behavior) scale-down window's maximum; a lower one
		// is the scale-up window's minimum.
		dir, pick := "scaleUp", "lowest"
		if ex.Stabilized > ex.Proposal {
			dir, pick = "scaleDown", "highest"
		}
		fmt.Fprintf(&b, "; held at %d by the %gs %s stabilization window (%s recent recommendation",
			ex.Stabilized, ex.StabilizationWindow.Seconds(), dir, pick)
		if h := facts.held; !h.Time.IsZero() {
			fmt.Fprintf(&b, ": %d from %s ago", h.Replicas, d.Time.Sub(h.Time))
			if h.Replicas != ex.Stabilized {
				fmt.Fprintf(&b, ", so it stays at the current %d", cur)
			}
		}
		b.WriteString(")")
	}
	if ex.Limited != ex.Stabilized {
		switch {
		case ex.LimitingPolicy != "" && facts.policy != nil:
			verb, left := "add", ex.Limited-cur
			if ex.Stabilized < cur {
				verb, left = "remove", cur-ex.Limited
			}
			fmt.Fprintf(&b, "; limited to %d by %s, which had %s left to %s in its %ds period",
				ex.Limited, ex.LimitingPolicy, plural(int(left), "replica", "replicas"), verb, facts.policy.PeriodSeconds)
		case ex.LimitingPolicy != "":
			fmt.Fprintf(&b, "; limited to %d by %s", ex.Limited, ex.LimitingPolicy)
		case ex.LimitReason == reasonTooManyReplicas:
			fmt.Fprintf(&b, "; limited to maxReplicas %d", ex.Limited)
		case ex.LimitReason == reasonTooFewReplicas:
			fmt.Fprintf(&b, "; raised to minReplicas %d", ex.Limited)
		default:
			fmt.Fprintf(&b, "; limited to %d (%s)", ex.Limited, ex.LimitReason)
		}
	}
	if ex.Final != ex.Limited {
		fmt.Fprintf(&b, "; raised to minReplicas %d to leave zero", ex.Final)
	}
	if failed := countFailed(ex); failed > 0 {
		fmt.Fprintf(&b, " (%d metric(s) failed; scale-down blocked)", failed)
	}
	return b.String()
}

func countFailed(ex *Explanation) int {
	n := 0
	for _, m := range ex.Metrics {
		if m.Error != "" {
			n++
		}
	}
	return n
}

// describeMetric renders the winning metric's current value against its target.
func describeMetric(spec *Spec, d Decision, i int) string {
	if i >= len(spec.Metrics) || i >= len(d.CurrentMetrics) {
		return "metrics"
	}
	m, st := &spec.Metrics[i], &d.CurrentMetrics[i]
	ratio := d.Explanation.Metrics[i].UsageRatio
	name := d.Explanation.Metrics[i].Name
	var t MetricTarget
	var cur MetricValueStatus
	switch {
	case m.Resource != nil && st.Resource != nil:
		t, cur, name = m.Resource.Target, st.Resource.Current, m.Resource.Name
	case m.ContainerResource != nil && st.ContainerResource != nil:
		t, cur = m.ContainerResource.Target, st.ContainerResource.Current
		name = m.ContainerResource.Name + " of container " + m.ContainerResource.Container
	case m.Pods != nil && st.Pods != nil:
		t, cur = m.Pods.Target, st.Pods.Current
	case m.Object != nil && st.Object != nil:
		t, cur = m.Object.Target, st.Object.Current
		name = m.Object.DescribedObject.Kind + "/" + m.Object.DescribedObject.Name + " " + m.Object.Metric.Name
	case m.External != nil && st.External != nil:
		t, cur = m.External.Target, st.External.Current
		name = "external " + m.External.Metric.Name
	default:
		return name
	}
	switch {
	case cur.AverageUtilization != nil && t.AverageUtilization != nil:
		return fmt.Sprintf("%s utilization %d%% of %d%% target", name, *cur.AverageUtilization, *t.AverageUtilization)
	case cur.AverageValue != nil && t.AverageValue != nil && !finite(ratio):
		// At zero replicas the per-pod average divides by zero (its status shows 0).
		return fmt.Sprintf("%s vs %s target per pod, with no replicas to average over", name, t.AverageValue)
	case cur.AverageValue != nil && t.AverageValue != nil:
		return fmt.Sprintf("%s %s per pod vs %s target (ratio %.3f)", name, cur.AverageValue, t.AverageValue, ratio)
	case cur.Value != nil && t.Value != nil && !finite(ratio):
		return fmt.Sprintf("%s %s vs %s target", name, cur.Value, t.Value)
	case cur.Value != nil && t.Value != nil:
		return fmt.Sprintf("%s %s vs %s target (ratio %.3f)", name, cur.Value, t.Value, ratio)
	}
	return name
}

func finite(f float64) bool { return !math.IsInf(f, 0) && !math.IsNaN(f) }
