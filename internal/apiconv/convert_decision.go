package apiconv

import (
	"google.golang.org/protobuf/types/known/durationpb"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
	"github.com/hpa-recommender/hpa-recommender/recommender"
)

// DecisionToProto writes a decision as a RecommendResponse. The recommendation id is the
// caller's to set. A nil decision is nil.
func DecisionToProto(d *recommender.Decision) *pb.RecommendResponse {
	if d == nil {
		return nil
	}
	return &pb.RecommendResponse{
		DecisionTime:    timeToProto(d.Time),
		DesiredReplicas: d.DesiredReplicas,
		CurrentReplicas: d.CurrentReplicas,
		Scale:           d.Scale(),
		CurrentMetrics:  MetricStatusesToProto(d.CurrentMetrics),
		Conditions:      ConditionsToProto(d.Conditions),
		Explanation:     ExplanationToProto(&d.Explanation),
	}
}

// StepResultToProto writes one replayed decision as a SimulateResponse step.
func StepResultToProto(d *recommender.Decision) *pb.SimulateStepResult {
	if d == nil {
		return nil
	}
	return &pb.SimulateStepResult{
		Time:            timeToProto(d.Time),
		DesiredReplicas: d.DesiredReplicas,
		CurrentMetrics:  MetricStatusesToProto(d.CurrentMetrics),
		Conditions:      ConditionsToProto(d.Conditions),
		Explanation:     ExplanationToProto(&d.Explanation),
	}
}

// SimulateResponseToProto writes the result of recommender.Simulate.
func SimulateResponseToProto(decisions []recommender.Decision, final *recommender.State) *pb.SimulateResponse {
	out := &pb.SimulateResponse{History: HistoryToProto(final)}
	if len(decisions) > 0 {
		out.Steps = make([]*pb.SimulateStepResult, len(decisions))
		for i := range decisions {
			out.Steps[i] = StepResultToProto(&decisions[i])
		}
	}
	return out
}

// MetricStatusesToProto writes autoscaling/v2 currentMetrics. A failed metric (empty type and
// no source) is an empty message, which protojson prints as {}.
func MetricStatusesToProto(ms []recommender.MetricStatus) []*pb.MetricStatus {
	if len(ms) == 0 {
		return nil
	}
	out := make([]*pb.MetricStatus, len(ms))
	for i := range ms {
		out[i] = metricStatusToProto(&ms[i])
	}
	return out
}

func metricStatusToProto(m *recommender.MetricStatus) *pb.MetricStatus {
	out := &pb.MetricStatus{Type: m.Type}
	if r := m.Resource; r != nil {
		out.Resource = &pb.ResourceMetricStatus{Name: r.Name, Current: valueStatusToProto(&r.Current)}
	}
	if r := m.ContainerResource; r != nil {
		out.ContainerResource = &pb.ContainerResourceMetricStatus{Name: r.Name, Container: r.Container, Current: valueStatusToProto(&r.Current)}
	}
	if p := m.Pods; p != nil {
		out.Pods = &pb.PodsMetricStatus{Metric: metricIDToProto(&p.Metric), Current: valueStatusToProto(&p.Current)}
	}
	if o := m.Object; o != nil {
		out.Object = &pb.ObjectMetricStatus{
			Metric:          metricIDToProto(&o.Metric),
			Current:         valueStatusToProto(&o.Current),
			DescribedObject: objectRefToProto(o.DescribedObject),
		}
	}
	if e := m.External; e != nil {
		out.External = &pb.ExternalMetricStatus{Metric: metricIDToProto(&e.Metric), Current: valueStatusToProto(&e.Current)}
	}
	return out
}

func valueStatusToProto(v *recommender.MetricValueStatus) *pb.MetricValueStatus {
	return &pb.MetricValueStatus{
		Value:              quantityToProto(v.Value),
		AverageValue:       quantityToProto(v.AverageValue),
		AverageUtilization: copyPtr(v.AverageUtilization),
	}
}

// ConditionsToProto writes conditions; a zero transition time is absent.
func ConditionsToProto(cs []recommender.Condition) []*pb.Condition {
	if len(cs) == 0 {
		return nil
	}
	out := make([]*pb.Condition, len(cs))
	for i, c := range cs {
		out[i] = &pb.Condition{
			Type:               c.Type,
			Status:             c.Status,
			Reason:             c.Reason,
			Message:            c.Message,
			LastTransitionTime: timeToProto(c.LastTransitionTime),
		}
	}
	return out
}

// ExplanationToProto writes an explanation; a zero stabilization window is absent.
func ExplanationToProto(e *recommender.Explanation) *pb.Explanation {
	if e == nil {
		return nil
	}
	out := &pb.Explanation{
		Message:        e.Message,
		WinningMetric:  e.WinningMetric,
		Proposal:       e.Proposal,
		Stabilized:     e.Stabilized,
		Limited:        e.Limited,
		LimitingPolicy: e.LimitingPolicy,
		Final:          e.Final,
		LimitReason:    e.LimitReason,
	}
	if e.StabilizationWindow != 0 {
		out.StabilizationWindow = durationpb.New(e.StabilizationWindow)
	}
	if len(e.Metrics) > 0 {
		out.Metrics = make([]*pb.MetricExplanation, len(e.Metrics))
		for i, m := range e.Metrics {
			out.Metrics[i] = &pb.MetricExplanation{
				Index:       m.Index,
				Name:        m.Name,
				Proposal:    m.Proposal,
				UsageRatio:  m.UsageRatio,
				ReadyPods:   m.ReadyPods,
				IgnoredPods: m.IgnoredPods,
				MissingPods: m.MissingPods,
				UnreadyPods: m.UnreadyPods,
				Error:       m.Error,
			}
		}
	}
	return out
}
