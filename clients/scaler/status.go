package scaler

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
	"github.com/hpa-recommender/hpa-recommender/recommender"
)

// Condition types, statuses and the reasons the scaler sets itself on an autoscaler object's
// status (the service's conditions carry the rest).
const (
	condAbleToScale    = autoscalingv2.AbleToScale
	condScalingActive  = autoscalingv2.ScalingActive
	condScaledToZero   = autoscalingv2.HorizontalPodAutoscalerConditionType("ScaledToZero")
	reasonFailedUpdate = "FailedUpdateScale"
	reasonSucceeded    = "SucceededRescale"
	// ReasonFailedUpdateStatus is upstream's event reason for a status write that failed.
	ReasonFailedUpdateStatus = "FailedUpdateStatus"
)

// statusChange is what one sync learned about an autoscaler, in the terms the in-tree
// controller writes status in. The zero value changes nothing.
type statusChange struct {
	// conditions are set in order; a condition keeps its lastTransitionTime while its status
	// stays the same.
	conditions []autoscalingv2.HorizontalPodAutoscalerCondition
	// recreate rebuilds currentReplicas, desiredReplicas, currentMetrics and
	// observedGeneration, as upstream's setStatus does once the target's scale was read. False:
	// only the conditions change (upstream's FailedGetScale path).
	recreate bool
	current  int32
	// desired is the new desiredReplicas; with keepDesired the previous one stays (no decision
	// was made, or its scale write failed: upstream's setCurrentReplicasAndMetricsInStatus).
	desired     int32
	keepDesired bool
	metrics     []autoscalingv2.MetricStatus
	// rescaled sets lastScaleTime to the sync's time.
	rescaled bool
	// explanation is the decision's message (the custom resource's status.explanation).
	explanation string
	// resolved are conditions set only when the status already has one of their type (a
	// problem that is over: said once, not added to every object).
	resolved []autoscalingv2.HorizontalPodAutoscalerCondition
}

// set records one condition, as upstream's setCondition does on the object's copy.
func (c *statusChange) set(t autoscalingv2.HorizontalPodAutoscalerConditionType, status corev1.ConditionStatus, reason, format string, args ...any) {
	c.conditions = append(c.conditions, autoscalingv2.HorizontalPodAutoscalerCondition{
		Type: t, Status: status, Reason: reason, Message: fmt.Sprintf(format, args...),
	})
}

// resolve records a condition set only when the status already has its type.
func (c *statusChange) resolve(t autoscalingv2.HorizontalPodAutoscalerConditionType, status corev1.ConditionStatus, reason, format string, args ...any) {
	c.resolved = append(c.resolved, autoscalingv2.HorizontalPodAutoscalerCondition{
		Type: t, Status: status, Reason: reason, Message: fmt.Sprintf(format, args...),
	})
}

// noDecision records a sync that read the scale (currentReplicas) but made no decision: the
// previous desiredReplicas stays, and there are no current metrics to show.
func (c *statusChange) noDecision(current int32) {
	c.recreate, c.current, c.keepDesired, c.metrics = true, current, true, nil
	c.set(condAbleToScale, corev1.ConditionTrue, "SucceededGetScale", "the HPA controller was able to get the target's current scale")
}

// empty reports whether c changes nothing.
func (c *statusChange) empty() bool {
	return c == nil || (!c.recreate && len(c.conditions) == 0 && len(c.resolved) == 0)
}

// fromResponse records a decision: the service's conditions, its currentMetrics and, unless
// keepDesired, its desiredReplicas (upstream writes desired = current when it does not scale;
// the caller sets desired and rescaled after a successful write).
func (c *statusChange) fromResponse(resp *pb.RecommendResponse) error {
	c.recreate = true
	c.current = resp.GetCurrentReplicas()
	c.desired = resp.GetCurrentReplicas()
	c.explanation = resp.GetExplanation().GetMessage()
	for _, pc := range resp.GetConditions() {
		c.set(autoscalingv2.HorizontalPodAutoscalerConditionType(pc.GetType()), corev1.ConditionStatus(pc.GetStatus()), pc.GetReason(), "%s", pc.GetMessage())
	}
	ms, err := metricStatuses(resp.GetCurrentMetrics())
	c.metrics = ms
	return err
}

// metricStatuses converts the service's currentMetrics to autoscaling/v2 MetricStatus. The API
// defines them as that type's JSON, so they go through it.
func metricStatuses(in []*pb.MetricStatus) ([]autoscalingv2.MetricStatus, error) {
	if len(in) == 0 {
		return nil, nil
	}
	out := make([]autoscalingv2.MetricStatus, len(in))
	for i, m := range in {
		b, err := protojson.Marshal(m)
		if err != nil {
			return nil, fmt.Errorf("currentMetrics[%d]: %w", i, err)
		}
		if err := json.Unmarshal(b, &out[i]); err != nil {
			return nil, fmt.Errorf("currentMetrics[%d]: %w", i, err)
		}
	}
	return out, nil
}

// nextStatus is old with c applied at now, for an object of the given generation: what the
// in-tree controller would write after the same sync. Times are whole seconds, as the API
// server stores them, so an unchanged status compares equal to what was read back.
func nextStatus(old autoscalingv2.HorizontalPodAutoscalerStatus, generation int64, c *statusChange, now time.Time) autoscalingv2.HorizontalPodAutoscalerStatus {
	st := *old.DeepCopy()
	if c.empty() {
		return st
	}
	ts := metav1.NewTime(now.Truncate(time.Second))
	if c.recreate {
		desired := c.desired
		if c.keepDesired {
			desired = old.DesiredReplicas
		}
		st = autoscalingv2.HorizontalPodAutoscalerStatus{
			CurrentReplicas: c.current,
			DesiredReplicas: desired,
			LastScaleTime:   st.LastScaleTime,
			CurrentMetrics:  c.metrics,
			Conditions:      st.Conditions,
		}
		gen := generation
		st.ObservedGeneration = &gen
		if c.rescaled {
			st.LastScaleTime = &ts
		}
	}
	for _, want := range c.conditions {
		st.Conditions = setCondition(st.Conditions, want, ts)
	}
	for _, want := range c.resolved {
		if slices.ContainsFunc(st.Conditions, func(h autoscalingv2.HorizontalPodAutoscalerCondition) bool { return h.Type == want.Type }) {
			st.Conditions = setCondition(st.Conditions, want, ts)
		}
	}
	return st
}

// setCondition sets want's status, reason and message on the condition of its type in list
// (appending it when missing); the transition time becomes now only when the status changes.
func setCondition(list []autoscalingv2.HorizontalPodAutoscalerCondition, want autoscalingv2.HorizontalPodAutoscalerCondition, now metav1.Time) []autoscalingv2.HorizontalPodAutoscalerCondition {
	i := 0
	for i < len(list) && list[i].Type != want.Type {
		i++
	}
	if i == len(list) {
		list = append(list, autoscalingv2.HorizontalPodAutoscalerCondition{Type: want.Type})
	}
	c := &list[i]
	if c.Status != want.Status || c.LastTransitionTime.IsZero() {
		c.LastTransitionTime = now
	}
	c.Status, c.Reason, c.Message = want.Status, want.Reason, want.Message
	return list
}

// rescaleOutcome records the outcome of the scale write a decision asked for, with the conditions
// the service stores for it when the outcome is reported (recommender.RecordRescale), so the
// object shows the same AbleToScale and ScaledToZero the service's next answer carries.
func (c *statusChange) rescaleOutcome(hpa *autoscalingv2.HorizontalPodAutoscaler, now time.Time, cur, desired int32, err error) {
	spec := &recommender.Spec{MinReplicas: hpa.Spec.MinReplicas, MaxReplicas: hpa.Spec.MaxReplicas}
	for _, m := range hpa.Spec.Metrics {
		spec.Metrics = append(spec.Metrics, recommender.MetricSpec{Type: string(m.Type)})
	}
	d := &recommender.Decision{Time: now, CurrentReplicas: cur, DesiredReplicas: desired}
	msg := ""
	if err != nil {
		msg = err.Error()
		c.keepDesired = true
	} else {
		c.desired, c.rescaled = desired, true
	}
	st := recommender.RecordRescale(now, spec, recommender.State{}, d, err == nil, msg)
	for _, rc := range st.Conditions {
		c.set(autoscalingv2.HorizontalPodAutoscalerConditionType(rc.Type), corev1.ConditionStatus(rc.Status), rc.Reason, "%s", rc.Message)
	}
}
