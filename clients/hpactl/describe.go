package hpactl

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/duration"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

// The describe and list commands print a stored target the way kubectl prints a
// HorizontalPodAutoscaler (`kubectl describe hpa`, `kubectl get hpa`), from what GetTarget
// returns: the spec last seen, the stored conditions and scale events, and the last decision.
//
// Two things the service does not keep, and what is shown instead:
//   - the autoscaler's creation time: AGE is the time since the service first stored the
//     target (firstSeen; <unknown> for a target stored by a release that did not keep it);
//   - status.currentReplicas: the current count of the last decision, or its desired count once
//     its scale write was reported successful (see replicasOf).

// eventSource is the From column of the Events table.
const eventSource = "hpa-recommender"

// unknownValue stands for a metric value the service does not have, as kubectl prints it.
const unknownValue = "<unknown>"

func (a *App) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

func (a *App) describe(ctx context.Context, args []string) error {
	return a.showTargets(ctx, "describe", args, func(resp *pb.GetTargetResponse) {
		writeDescription(a.Stdout, resp, a.now())
	})
}

// writeDescription prints a target in the layout of `kubectl describe hpa`, then the last
// decision's explanation.
func writeDescription(w io.Writer, t *pb.GetTargetResponse, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	sp := t.GetSpec()
	ref := t.GetTarget()
	fmt.Fprintf(tw, "Name:\t%s\n", ref.GetName())
	fmt.Fprintf(tw, "Namespace:\t%s\n", ref.GetNamespace())
	fmt.Fprintf(tw, "Cluster:\t%s\n", ref.GetCluster())
	if fs := t.GetFirstSeen(); fs != nil {
		fmt.Fprintf(tw, "First seen:\t%s (%s ago)\n", timeString(fs), age(fs, now))
	}
	fmt.Fprintf(tw, "Last seen:\t%s (%s ago)\n", timeString(t.GetLastSeen()), age(t.GetLastSeen(), now))
	fmt.Fprintf(tw, "Reference:\t%s\n", referenceString(sp))
	fmt.Fprintf(tw, "Metrics:\t( current / target )\n")
	var current []*pb.MetricStatus
	if ld := t.GetLastDecision(); ld != nil {
		current = ld.GetResponse().GetCurrentMetrics()
	}
	for i, m := range specMetrics(sp) {
		label, value := describeMetric(m, metricStatusAt(current, i))
		fmt.Fprintf(tw, "  %s:\t%s\n", label, value)
	}
	fmt.Fprintf(tw, "Min replicas:\t%s\n", minPodsString(sp))
	fmt.Fprintf(tw, "Max replicas:\t%d\n", sp.GetMaxReplicas())
	if b := sp.GetBehavior(); b != nil {
		fmt.Fprintln(tw, "Behavior:")
		writeRules(tw, "Scale Up", b.GetScaleUp())
		writeRules(tw, "Scale Down", b.GetScaleDown())
	}
	cur, desired := replicasOf(t)
	fmt.Fprintf(tw, "%s pods:\t%d current / %d desired\n", cmp.Or(sp.GetScaleTargetRef().GetKind(), "Target"), cur, desired)
	if cs := t.GetConditions(); len(cs) > 0 {
		fmt.Fprintln(tw, "Conditions:")
		fmt.Fprintln(tw, "  Type\tStatus\tReason\tMessage")
		fmt.Fprintln(tw, "  ----\t------\t------\t-------")
		for _, c := range cs {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", c.GetType(), c.GetStatus(), c.GetReason(), c.GetMessage())
		}
	}
	writeEvents(tw, t, now)
	tw.Flush()

	ld := t.GetLastDecision()
	if ld == nil {
		fmt.Fprintln(w, "Last decision:  <none>")
		return
	}
	r := ld.GetResponse()
	tw = tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "Last decision:\t%s (%s ago): %d -> %d\n", timeString(ld.GetTime()), age(ld.GetTime(), now), r.GetCurrentReplicas(), r.GetDesiredReplicas())
	fmt.Fprintf(tw, "  Explanation:\t%s\n", r.GetExplanation().GetMessage())
	fmt.Fprintf(tw, "  Stages:\t%s\n", stagesString(r.GetExplanation()))
	tw.Flush()
}

// writeRules prints one direction of spec.behavior as kubectl does.
func writeRules(w io.Writer, direction string, r *pb.HPAScalingRules) {
	if r == nil {
		return
	}
	fmt.Fprintf(w, "  %s:\n", direction)
	if s := r.StabilizationWindowSeconds; s != nil {
		fmt.Fprintf(w, "    Stabilization Window: %d seconds\n", *s)
	}
	if len(r.GetPolicies()) == 0 {
		return
	}
	fmt.Fprintf(w, "    Select Policy: %s\n", cmp.Or(r.GetSelectPolicy(), "Max"))
	fmt.Fprintln(w, "    Policies:")
	for _, p := range r.GetPolicies() {
		fmt.Fprintf(w, "      - Type: %s\tValue: %d\tPeriod: %d seconds\n", p.GetType(), p.GetValue(), p.GetPeriodSeconds())
	}
}

// writeEvents prints the stored scale events as kubectl prints an object's events, oldest
// first. The service stores a scale event only for a reported successful scale of a spec with
// behavior, and keeps the last 30 minutes of them.
func writeEvents(tw *tabwriter.Writer, t *pb.GetTargetResponse, now time.Time) {
	type event struct {
		at     *timestamppb.Timestamp
		up     bool
		change int32
	}
	var evs []event
	for _, e := range t.GetHistory().GetScaleUpEvents() {
		evs = append(evs, event{e.GetTime(), true, e.GetChange()})
	}
	for _, e := range t.GetHistory().GetScaleDownEvents() {
		evs = append(evs, event{e.GetTime(), false, e.GetChange()})
	}
	if len(evs) == 0 {
		fmt.Fprintln(tw, "Events:\t<none>")
		return
	}
	tw.Flush() // the events table aligns on its own
	slices.SortStableFunc(evs, func(a, b event) int { return a.at.AsTime().Compare(b.at.AsTime()) })
	// A scale event is stored at the time of the decision it applied: the last decision's
	// event can name the new size.
	var last *pb.RecommendResponse
	var lastAt time.Time
	if ld := t.GetLastDecision(); ld != nil {
		last, lastAt = ld.GetResponse(), ld.GetTime().AsTime()
	}
	fmt.Fprintln(tw, "Events:")
	fmt.Fprintln(tw, "  Type\tReason\tAge\tFrom\tMessage")
	fmt.Fprintln(tw, "  ----\t------\t----\t----\t-------")
	for _, e := range evs {
		dir := "down"
		if e.up {
			dir = "up"
		}
		msg := fmt.Sprintf("scaled %s by %d", dir, e.change)
		if last != nil && e.at.AsTime().Equal(lastAt) && (last.GetDesiredReplicas() > last.GetCurrentReplicas()) == e.up &&
			abs32(last.GetDesiredReplicas()-last.GetCurrentReplicas()) == e.change {
			msg = fmt.Sprintf("New size: %d; %s (from %d)", last.GetDesiredReplicas(), msg, last.GetCurrentReplicas())
		}
		fmt.Fprintf(tw, "  Normal\tSuccessfulRescale\t%s\t%s\t%s\n", age(e.at, now), eventSource, msg)
	}
}

func abs32(v int32) int32 {
	if v < 0 {
		return -v
	}
	return v
}

// replicasOf is the target's current and desired replica counts as the HPA's status would
// show them: the last decision's counts, except that once the scale write of the last
// decision was reported successful (it is no longer pending and AbleToScale says
// SucceededRescale) the current count is the count it scaled to. Nothing but a Recommend or
// that ReportScale changes the last decision or AbleToScale after it, so this follows a
// successful ReportScale and ignores a failed one.
func replicasOf(t *pb.GetTargetResponse) (current, desired int32) {
	ld := t.GetLastDecision().GetResponse()
	if ld == nil {
		return 0, 0
	}
	current, desired = ld.GetCurrentReplicas(), ld.GetDesiredReplicas()
	id := ld.GetRecommendationId()
	if id == "" || current == desired {
		return current, desired
	}
	if slices.ContainsFunc(t.GetPendingDecisions(), func(p *pb.PendingDecision) bool { return p.GetRecommendationId() == id }) {
		return current, desired
	}
	for _, c := range t.GetConditions() {
		if c.GetType() == "AbleToScale" && c.GetStatus() == "True" && c.GetReason() == "SucceededRescale" {
			return desired, desired
		}
	}
	return current, desired
}

// age is the time from ts to now as kubectl prints ages ("90s", "5m", "3h").
func age(ts *timestamppb.Timestamp, now time.Time) string {
	if ts == nil {
		return unknownValue
	}
	return duration.HumanDuration(now.Sub(ts.AsTime()))
}

// referenceString is Kind/name of the scale target, as kubectl's REFERENCE column.
func referenceString(sp *pb.HorizontalPodAutoscalerSpec) string {
	r := sp.GetScaleTargetRef()
	if r == nil {
		return "<none>"
	}
	return r.GetKind() + "/" + r.GetName()
}

func minPodsString(sp *pb.HorizontalPodAutoscalerSpec) string {
	if sp.MinReplicas == nil {
		return "<unset>"
	}
	return fmt.Sprint(*sp.MinReplicas)
}

// specMetrics are the spec's metrics, or the API server's default for a spec without any
// (80% average CPU utilization), which is what the service decides on.
func specMetrics(sp *pb.HorizontalPodAutoscalerSpec) []*pb.MetricSpec {
	if ms := sp.GetMetrics(); len(ms) > 0 {
		return ms
	}
	return []*pb.MetricSpec{{Type: "Resource", Resource: &pb.ResourceMetricSource{
		Name: "cpu", Target: &pb.MetricTarget{Type: "Utilization", AverageUtilization: proto.Int32(80)},
	}}}
}

func metricStatusAt(ms []*pb.MetricStatus, i int) *pb.MetricStatus {
	if i < len(ms) {
		return ms[i]
	}
	return nil
}

// statusValue is the current value in st for a metric of type typ: nil when the status is of
// another type or absent (a failed metric's status is empty).
func statusValue(st *pb.MetricStatus, typ string) *pb.MetricValueStatus {
	switch typ {
	case "Resource":
		return st.GetResource().GetCurrent()
	case "ContainerResource":
		return st.GetContainerResource().GetCurrent()
	case "Pods":
		return st.GetPods().GetCurrent()
	case "Object":
		return st.GetObject().GetCurrent()
	case "External":
		return st.GetExternal().GetCurrent()
	}
	return nil
}

// quantityString prints a quantity in Kubernetes' canonical form, as kubectl prints the
// parsed value; what does not parse is printed as it is, and an absent one as <unknown>.
func quantityString(s *string) string {
	if s == nil {
		return unknownValue
	}
	q, err := resource.ParseQuantity(*s)
	if err != nil {
		return *s
	}
	return q.String()
}

func percentString(p *int32, absent string) string {
	if p == nil {
		return absent
	}
	return fmt.Sprintf("%d%%", *p)
}

// describeMetric is one metric's line of `kubectl describe hpa`: its label and
// "current / target".
func describeMetric(m *pb.MetricSpec, st *pb.MetricStatus) (label, value string) {
	t := metricTarget(m)
	cur := statusValue(st, m.GetType())
	if cur == nil {
		cur = &pb.MetricValueStatus{}
	}
	avgOrValue := func() string {
		if t.GetType() == "AverageValue" {
			return "(target average value)"
		}
		return "(target value)"
	}
	pick := func() (string, string) {
		if t.GetType() == "AverageValue" {
			return quantityOrUnknown(cur, true), quantityString(t.AverageValue)
		}
		return quantityOrUnknown(cur, false), quantityString(t.Value)
	}
	switch m.GetType() {
	case "External":
		c, tv := pick()
		return fmt.Sprintf("%q %s", m.GetExternal().GetMetric().GetName(), avgOrValue()), c + " / " + tv
	case "Object":
		o := m.GetObject().GetDescribedObject()
		c, tv := pick()
		return fmt.Sprintf("%q on %s/%s %s", m.GetObject().GetMetric().GetName(), o.GetKind(), o.GetName(), avgOrValue()), c + " / " + tv
	case "Pods":
		return fmt.Sprintf("%q on pods", m.GetPods().GetMetric().GetName()), quantityOrUnknown(cur, true) + " / " + quantityString(t.AverageValue)
	case "Resource", "ContainerResource":
		name, container, _ := resourceOf(m)
		label = "resource " + name + " on pods"
		if m.GetType() == "ContainerResource" {
			label = fmt.Sprintf("resource %s of container %q on pods", name, container)
		}
		if t.GetType() == "AverageValue" {
			return label, quantityOrUnknown(cur, true) + " / " + quantityString(t.AverageValue)
		}
		c := unknownValue
		if cur.AverageUtilization != nil {
			c = fmt.Sprintf("%d%% (%s)", *cur.AverageUtilization, quantityString(cur.AverageValue))
		}
		return label + "  (as a percentage of request)", c + " / " + percentString(t.AverageUtilization, "<auto>")
	}
	return fmt.Sprintf("<unknown metric type %q>", m.GetType()), ""
}

// quantityOrUnknown is cur's averageValue (avg) or value, or <unknown>.
func quantityOrUnknown(cur *pb.MetricValueStatus, avg bool) string {
	if avg {
		return quantityString(cur.AverageValue)
	}
	return quantityString(cur.Value)
}

// targetsString is the TARGETS column of `kubectl get hpa`: each metric's current/target,
// comma-separated, the first two and "+ N more..." after them.
func targetsString(sp *pb.HorizontalPodAutoscalerSpec, current []*pb.MetricStatus) string {
	const shown = 2
	ms := specMetrics(sp)
	var parts []string
	for i, m := range ms[:min(len(ms), shown)] {
		parts = append(parts, metricTargetCell(m, metricStatusAt(current, i)))
	}
	s := strings.Join(parts, ", ")
	if n := len(ms) - shown; n > 0 {
		s += fmt.Sprintf(" + %d more...", n)
	}
	return s
}

// metricTargetCell is one metric's "current/target" in the TARGETS column.
func metricTargetCell(m *pb.MetricSpec, st *pb.MetricStatus) string {
	t := metricTarget(m)
	cur := statusValue(st, m.GetType())
	if cur == nil {
		cur = &pb.MetricValueStatus{}
	}
	switch m.GetType() {
	case "External", "Object":
		if t.GetType() == "AverageValue" {
			return quantityOrUnknown(cur, true) + "/" + quantityString(t.AverageValue) + " (avg)"
		}
		return quantityOrUnknown(cur, false) + "/" + quantityString(t.Value)
	case "Pods":
		return quantityOrUnknown(cur, true) + "/" + quantityString(t.AverageValue)
	case "Resource", "ContainerResource":
		name, _, _ := resourceOf(m)
		if t.GetType() == "AverageValue" {
			return name + ": " + quantityOrUnknown(cur, true) + "/" + quantityString(t.AverageValue)
		}
		return name + ": " + percentString(cur.AverageUtilization, unknownValue) + "/" + percentString(t.AverageUtilization, "<auto>")
	}
	return "<unknown type>"
}
