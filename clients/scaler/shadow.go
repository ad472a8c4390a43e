package scaler

// The shadow comparison with the in-tree HPA controller: for an HPA object whose status another
// manager writes (safety.go), the service's dry-run decision is compared with the in-tree
// controller's status.desiredReplicas, but only when both decided from the same inputs. What
// "the same inputs" means is in docs/hpa-scaler.md ("Shadow comparison").

import (
	"fmt"
	"log/slog"
	"math"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

// ReasonShadowDisagreement is the Warning event on an in-tree-controlled HPA whose
// status.desiredReplicas differs from the service's decision from the same inputs.
const ReasonShadowDisagreement = "ShadowDisagreement"

// Results of one shadow comparison (the result label of hpa_scaler_shadow_comparisons_total).
const (
	shadowAgree         = "agree"
	shadowDisagree      = "disagree"
	shadowNotComparable = "not_comparable"
)

// Condition reasons by which the in-tree controller (and the service) say that a count was
// shaped by history: recommendations kept for a stabilization window, or scale events within a
// policy's period. The service asked with dryRun for an HPA it does not control has no such
// history, so these decisions are not comparable.
const (
	reasonScaleUpStabilized   = "ScaleUpStabilized"
	reasonScaleDownStabilized = "ScaleDownStabilized"
	reasonScaleUpLimit        = "ScaleUpLimit"
	reasonScaleDownLimit      = "ScaleDownLimit"
)

// shadowInputs is what one comparison reads: the HPA as last seen (its status is the in-tree
// controller's last write), the scale and the request of this sync, the service's answer, and
// the clock.
type shadowInputs struct {
	hpa    *autoscalingv2.HorizontalPodAutoscaler
	scale  *autoscalingv1.Scale
	req    *pb.RecommendRequest
	resp   *pb.RecommendResponse
	now    time.Time
	settle time.Duration
	// cpuInit and readinessDelay are the periods of the CPU rules sent to the service (zero:
	// unknown, only the pods' own transitions count).
	cpuInit, readinessDelay time.Duration
}

// compareShadow returns the comparison's result and, unless it agrees, why: the reason it is
// not comparable, or the two counts.
func compareShadow(in shadowInputs) (result, why string) {
	h, st := in.hpa, in.hpa.Status
	if why := specUnobserved(h); why != "" {
		return shadowNotComparable, why
	}
	if st.CurrentReplicas != in.scale.Spec.Replicas {
		return shadowNotComparable, fmt.Sprintf("the in-tree controller decided at %d current replicas, the target now has %d", st.CurrentReplicas, in.scale.Spec.Replicas)
	}
	if t := st.LastScaleTime; t != nil && in.now.Sub(t.Time) < in.settle {
		return shadowNotComparable, fmt.Sprintf("the target was scaled at %s, within the settle time %s", t.UTC().Format(time.RFC3339), in.settle)
	}
	if why := historyShaped(st.Conditions, h.Spec.Behavior != nil); why != "" {
		return shadowNotComparable, "the in-tree controller's count was " + why
	}
	for _, c := range in.resp.GetConditions() {
		if why := historyReason(c.GetReason(), h.Spec.Behavior != nil); why != "" {
			return shadowNotComparable, "the service's count was " + why
		}
	}
	if metricsFailed(in.resp) {
		return shadowNotComparable, "no metric of the service's decision could be used"
	}
	for _, c := range st.Conditions {
		if c.Type == autoscalingv2.ScalingActive && c.Status != corev1.ConditionTrue {
			return shadowNotComparable, fmt.Sprintf("the in-tree controller's ScalingActive is %s (%s)", c.Status, c.Reason)
		}
		// A failed scale update (FailedUpdateScale, e.g. a conflict with the target's own
		// writes) leaves the status with this sync's metrics but the previous desiredReplicas.
		if c.Type == autoscalingv2.AbleToScale && c.Status != corev1.ConditionTrue {
			return shadowNotComparable, fmt.Sprintf("the in-tree controller's AbleToScale is %s (%s): its desiredReplicas may be from an earlier sync", c.Status, c.Reason)
		}
	}
	if why := podsUnsettled(in); why != "" {
		return shadowNotComparable, why
	}
	if why := readyCountChangedSinceStatus(in); why != "" {
		return shadowNotComparable, why
	}
	if why := inTreeCountedOtherReadyPods(in.hpa); why != "" {
		return shadowNotComparable, why
	}
	ours, err := metricStatuses(in.resp.GetCurrentMetrics())
	if err != nil {
		return shadowNotComparable, "the service's currentMetrics: " + err.Error()
	}
	if why := sameMetrics(st.CurrentMetrics, ours); why != "" {
		return shadowNotComparable, "the metrics differ from the in-tree controller's last status: " + why
	}
	if got, want := in.resp.GetDesiredReplicas(), st.DesiredReplicas; got != want {
		return shadowDisagree, fmt.Sprintf("the service decided %d replicas, the in-tree controller %d (current %d)", got, want, st.CurrentReplicas)
	}
	return shadowAgree, ""
}

// specUnobserved returns why the in-tree controller's status may not be for h's current spec
// ("" when it is). The in-tree controller does not set status.observedGeneration (upstream's
// setStatus leaves it out); when it is set it must equal metadata.generation. Otherwise the
// managedFields times tell: the status subresource's last write by the other manager must be
// later than every write of the object itself (whole seconds, so the same second does not
// count as later).
func specUnobserved(h *autoscalingv2.HorizontalPodAutoscaler) string {
	if g := h.Status.ObservedGeneration; g != nil {
		if *g != h.Generation {
			return "the in-tree controller has not decided for the current spec yet (status.observedGeneration differs from metadata.generation)"
		}
		return ""
	}
	statusAt, haveStatus := inTreeStatusTime(h)
	if !haveStatus {
		return "no status write of the in-tree controller with a time in managedFields"
	}
	var specAt time.Time
	for _, e := range h.ManagedFields {
		if e.Time != nil && e.Subresource == "" && e.Time.After(specAt) {
			specAt = e.Time.Time
		}
	}
	if !statusAt.After(specAt) {
		return fmt.Sprintf("the in-tree controller's last status write (%s) is not later than the object's last change (%s)", statusAt.UTC().Format(time.RFC3339), specAt.UTC().Format(time.RFC3339))
	}
	return ""
}

// inTreeStatusTime is the time of the other manager's (the in-tree controller's) last write of
// h's status subresource, from managedFields (whole seconds), and whether there is one.
func inTreeStatusTime(h *autoscalingv2.HorizontalPodAutoscaler) (time.Time, bool) {
	var at time.Time
	found := false
	for _, e := range h.ManagedFields {
		if e.Time != nil && e.Subresource == "status" && e.Manager != fieldManager && (!found || e.Time.After(at)) {
			at, found = e.Time.Time, true
		}
	}
	return at, found
}

// readyCountChangedSinceStatus returns why the in-tree controller's count may be from another
// number of ready pods than this sync's ("" when it cannot be). An Object or External metric
// with a Value target proposes from the ready pods' count (R-CALC); the in-tree controller
// writes its status only when it changes, so a sync of it that saw the pods as they are now and
// came to the same status left no trace. A pod that changed readiness or was deleted at or after
// the in-tree controller's last status write (whole seconds: the same second counts) makes the
// decision not comparable, whatever the settle time.
func readyCountChangedSinceStatus(in shadowInputs) string {
	if !proposesFromReadyCount(in.hpa.Spec.Metrics) {
		return ""
	}
	at, ok := inTreeStatusTime(in.hpa)
	if !ok {
		return ""
	}
	for _, p := range in.req.GetPods() {
		for _, tr := range []struct {
			what string
			ts   *timestamppb.Timestamp
		}{{"changed readiness", p.GetReadyTransitionTime()}, {"was deleted", p.GetDeletionTimestamp()}} {
			if tr.ts != nil && !tr.ts.AsTime().Before(at) {
				return fmt.Sprintf("pod %s %s at %s, not before the in-tree controller's last status write (%s)",
					p.GetName(), tr.what, tr.ts.AsTime().UTC().Format(time.RFC3339), at.UTC().Format(time.RFC3339))
			}
		}
	}
	return ""
}

// inTreeCountedOtherReadyPods returns why the in-tree controller's count of an HPA whose one
// metric is an Object or External metric with a Value target was not its status's ratio times
// its status's current replicas ("" when it was, or cannot be told): such a proposal is the
// ratio times the ready pods, so the in-tree controller counted fewer ready pods than it had
// replicas, pods the service may now see ready. A count a bound or a limit shaped
// (ScalingLimited True) is left to the other rules.
func inTreeCountedOtherReadyPods(h *autoscalingv2.HorizontalPodAutoscaler) string {
	st := h.Status
	if len(h.Spec.Metrics) != 1 || !proposesFromReadyCount(h.Spec.Metrics) || len(st.CurrentMetrics) != 1 || st.CurrentReplicas <= 0 {
		return ""
	}
	for _, c := range st.Conditions {
		if c.Type == autoscalingv2.ScalingLimited && c.Status == corev1.ConditionTrue {
			return ""
		}
	}
	var want *resource.Quantity
	switch m := h.Spec.Metrics[0]; {
	case m.Object != nil:
		want = m.Object.Target.Value
	case m.External != nil:
		want = m.External.Target.Value
	}
	cur := currentOf(st.CurrentMetrics[0])
	if cur == nil || cur.Value == nil || want == nil || want.MilliValue() <= 0 {
		return ""
	}
	ratio := float64(cur.Value.MilliValue()) / float64(want.MilliValue())
	if math.Abs(ratio-1) <= 0.1 { // within the default tolerance: the count stays
		return ""
	}
	if full := int32(math.Ceil(ratio * float64(st.CurrentReplicas))); st.DesiredReplicas != full {
		return fmt.Sprintf("the in-tree controller's count %d is not its ratio %.3f times its %d replicas: it counted other ready pods",
			st.DesiredReplicas, ratio, st.CurrentReplicas)
	}
	return ""
}

// proposesFromReadyCount reports whether a metric's proposal is its ratio times the ready pods:
// an Object or External metric with a Value target.
func proposesFromReadyCount(metrics []autoscalingv2.MetricSpec) bool {
	for _, m := range metrics {
		if (m.Object != nil && m.Object.Target.Type == autoscalingv2.ValueMetricType) ||
			(m.External != nil && m.External.Target.Type == autoscalingv2.ValueMetricType) {
			return true
		}
	}
	return false
}

// usesCPU reports whether metrics decide by CPU (a Resource or ContainerResource cpu metric,
// or none: upstream's default is 80% CPU), where upstream's CPU initialization period and
// initial readiness delay apply.
func usesCPU(metrics []autoscalingv2.MetricSpec) bool {
	if len(metrics) == 0 {
		return true
	}
	for _, m := range metrics {
		if (m.Resource != nil && m.Resource.Name == corev1.ResourceCPU) || (m.ContainerResource != nil && m.ContainerResource.Name == corev1.ResourceCPU) {
			return true
		}
	}
	return false
}

// historyShaped says how conditions show a count shaped by history ("" when they do not).
func historyShaped(conds []autoscalingv2.HorizontalPodAutoscalerCondition, behavior bool) string {
	for _, c := range conds {
		if why := historyReason(c.Reason, behavior); why != "" {
			return why
		}
	}
	return ""
}

// historyReason: stabilization always depends on the recommendations kept; a rate limit only
// with behavior (the legacy path's scale-up limit is a function of the current count alone).
func historyReason(reason string, behavior bool) string {
	switch reason {
	case reasonScaleUpStabilized, reasonScaleDownStabilized:
		return "stabilized (" + reason + "): it depends on the recommendations of the stabilization window"
	case reasonScaleUpLimit, reasonScaleDownLimit:
		if behavior {
			return "rate-limited by a scaling policy (" + reason + "): it depends on the scale events of the policy's period"
		}
	}
	return ""
}

// podsUnsettled returns why the pods may differ from those the in-tree controller last saw: a
// pod still starting, or a pod whose readiness, deletion or CPU-rule classification changed
// within the settle time.
func podsUnsettled(in shadowInputs) string {
	since := in.now.Add(-in.settle)
	for _, p := range in.req.GetPods() {
		if p.GetStartTime() == nil {
			return fmt.Sprintf("pod %s has not started (%s)", p.GetName(), p.GetPhase())
		}
		start := p.GetStartTime().AsTime()
		times := map[string]time.Time{"started": start}
		if t := p.GetReadyTransitionTime(); t != nil {
			times["changed readiness"] = t.AsTime()
		}
		if t := p.GetDeletionTimestamp(); t != nil {
			times["was deleted"] = t.AsTime()
		}
		if in.cpuInit > 0 {
			times["left the CPU initialization period"] = start.Add(in.cpuInit)
		}
		if in.readinessDelay > 0 {
			times["left the initial readiness delay"] = start.Add(in.readinessDelay)
		}
		for what, t := range times {
			if t.After(since) && !t.After(in.now) {
				return fmt.Sprintf("pod %s %s at %s, within the settle time %s", p.GetName(), what, t.UTC().Format(time.RFC3339), in.settle)
			}
		}
	}
	return ""
}

// sameMetrics compares the in-tree controller's currentMetrics with the service's, within the
// rounding both apply (whole percent, milli-units): "" when they match.
func sameMetrics(inTree, ours []autoscalingv2.MetricStatus) string {
	if len(inTree) != len(ours) {
		return fmt.Sprintf("%d metrics in the in-tree status, %d in the service's decision", len(inTree), len(ours))
	}
	for i := range inTree {
		a, b := inTree[i], ours[i]
		if a.Type != b.Type {
			return fmt.Sprintf("metric %d is %s in the in-tree status, %s in the service's", i, a.Type, b.Type)
		}
		x, y := currentOf(a), currentOf(b)
		if x == nil || y == nil {
			return fmt.Sprintf("metric %d (%s) has no current value on one side", i, a.Type)
		}
		if !closeQuantity(x.Value, y.Value) || !closeQuantity(x.AverageValue, y.AverageValue) {
			return fmt.Sprintf("metric %d (%s): in-tree %s, service %s", i, a.Type, describeValue(x), describeValue(y))
		}
		if (x.AverageUtilization == nil) != (y.AverageUtilization == nil) ||
			(x.AverageUtilization != nil && *x.AverageUtilization != *y.AverageUtilization) {
			return fmt.Sprintf("metric %d (%s): in-tree %s, service %s", i, a.Type, describeValue(x), describeValue(y))
		}
	}
	return ""
}

func currentOf(m autoscalingv2.MetricStatus) *autoscalingv2.MetricValueStatus {
	switch m.Type {
	case autoscalingv2.ResourceMetricSourceType:
		if m.Resource != nil {
			return &m.Resource.Current
		}
	case autoscalingv2.ContainerResourceMetricSourceType:
		if m.ContainerResource != nil {
			return &m.ContainerResource.Current
		}
	case autoscalingv2.PodsMetricSourceType:
		if m.Pods != nil {
			return &m.Pods.Current
		}
	case autoscalingv2.ObjectMetricSourceType:
		if m.Object != nil {
			return &m.Object.Current
		}
	case autoscalingv2.ExternalMetricSourceType:
		if m.External != nil {
			return &m.External.Current
		}
	}
	return nil
}

// closeQuantity: both absent, or both present and equal within one milli-unit or 0.1 %.
func closeQuantity(a, b *resource.Quantity) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	x, y := a.AsApproximateFloat64(), b.AsApproximateFloat64()
	return math.Abs(x-y) <= math.Max(0.001, 0.001*math.Max(math.Abs(x), math.Abs(y)))
}

func describeValue(v *autoscalingv2.MetricValueStatus) string {
	out := ""
	if v.Value != nil {
		out += " value " + v.Value.String()
	}
	if v.AverageValue != nil {
		out += " averageValue " + v.AverageValue.String()
	}
	if v.AverageUtilization != nil {
		out += fmt.Sprintf(" averageUtilization %d%%", *v.AverageUtilization)
	}
	if out == "" {
		return "(none)"
	}
	return out[1:]
}

// compareWithInTree compares one shadow decision of an in-tree-controlled HPA and records the
// result: the counter, the per-HPA gauge, and on a disagreement a log line and a Warning event
// on the HPA (the only thing written for it).
func (s *Scaler) compareWithInTree(log *slog.Logger, a *Autoscaler, g *gathered, resp *pb.RecommendResponse) {
	h := a.HPA
	if latest, ok := s.Autoscaler(a.Key()); ok && latest.HPA != nil && latest.HPA.UID == h.UID {
		h = latest.HPA // the in-tree controller's newest status write is the closest to this sync
	}
	in := shadowInputs{hpa: h, scale: g.scale, req: g.req, resp: resp, now: s.now(), settle: s.cfg.ShadowSettle}
	if usesCPU(h.Spec.Metrics) { // the CPU rules classify pods by time for CPU only
		in.cpuInit, in.readinessDelay = 5*time.Minute, 30*time.Second // upstream's and the service's defaults
		if d := s.cfg.Options.CPUInitializationPeriod; d != nil {
			in.cpuInit = *d
		}
		if d := s.cfg.Options.InitialReadinessDelay; d != nil {
			in.readinessDelay = *d
		}
	}
	result, why := compareShadow(in)
	s.tel.shadowComparisons.WithLabelValues(result).Inc()
	switch result {
	case shadowAgree:
		s.tel.shadowDisagreement.WithLabelValues(a.Namespace, a.Name).Set(0)
		log.Debug("shadow: agrees with the in-tree controller", "replicas", resp.GetDesiredReplicas())
	case shadowNotComparable:
		log.Debug("shadow: not comparable with the in-tree controller", "why", why)
	case shadowDisagree:
		service, inTree := resp.GetDesiredReplicas(), h.Status.DesiredReplicas
		s.tel.shadowDisagreement.WithLabelValues(a.Namespace, a.Name).Set(float64(service - inTree))
		expl := resp.GetExplanation().GetMessage()
		log.Warn("shadow: disagrees with the in-tree controller", "service", service, "inTree", inTree,
			"current", h.Status.CurrentReplicas, "explanation", expl)
		// The event is written even though the autoscaler is in shadow (it is the point of the
		// comparison), but not under --dry-run or the shadow annotation: those write nothing.
		annotated := strings.EqualFold(a.HPA.Annotations[ModeAnnotation], ModeShadow)
		if s.kube != nil && s.kube.Events != nil && !s.cfg.DryRun && !annotated {
			s.kube.Events.Event(eventTarget(a, g.scale), corev1.EventTypeWarning, ReasonShadowDisagreement,
				fmt.Sprintf("the hpa-recommender service decides %d replicas, the in-tree controller %d (current %d, same inputs); the service's explanation: %s",
					service, inTree, h.Status.CurrentReplicas, expl))
		}
	}
}
