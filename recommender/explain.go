package recommender

import (
	"fmt"
	"math"
	"strings"
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

// explainDecision is the log sentence for a decision that reached a replica count.
func explainDecision(spec *Spec, d Decision, reason string, ex *Explanation) string {
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
	if ex.Proposal != cur {
		fmt.Fprintf(&b, " proposes %d", ex.Proposal)
	} else {
		b.WriteString(" proposes no change")
	}
	if ex.Stabilized != ex.Proposal {
		// A higher held value is the (legacy or behavior) scale-down window's maximum; a lower one
		// is the scale-up window's minimum.
		dir, pick := "scaleUp", "lowest"
		if ex.Stabilized > ex.Proposal {
			dir, pick = "scaleDown", "highest"
		}
		fmt.Fprintf(&b, "; held at %d by the %gs %s stabilization window (%s recent recommendation)",
			ex.Stabilized, ex.StabilizationWindow.Seconds(), dir, pick)
	}
	if ex.Limited != ex.Stabilized {
		switch {
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
