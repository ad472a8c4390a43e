package pbconv

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

// SpecToProto converts an autoscaling/v2 HorizontalPodAutoscalerSpec field for field;
// quantities are written in canonical form (Quantity.String). The result may share label maps
// and value slices with s.
func SpecToProto(s *autoscalingv2.HorizontalPodAutoscalerSpec) *pb.HorizontalPodAutoscalerSpec {
	out := &pb.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: objectRefToProto(s.ScaleTargetRef),
		MinReplicas:    s.MinReplicas,
		MaxReplicas:    s.MaxReplicas,
	}
	for i := range s.Metrics {
		out.Metrics = append(out.Metrics, metricToProto(&s.Metrics[i]))
	}
	if b := s.Behavior; b != nil {
		out.Behavior = &pb.HorizontalPodAutoscalerBehavior{ScaleUp: rulesToProto(b.ScaleUp), ScaleDown: rulesToProto(b.ScaleDown)}
	}
	return out
}

func objectRefToProto(r autoscalingv2.CrossVersionObjectReference) *pb.CrossVersionObjectReference {
	if r == (autoscalingv2.CrossVersionObjectReference{}) {
		return nil
	}
	return &pb.CrossVersionObjectReference{ApiVersion: r.APIVersion, Kind: r.Kind, Name: r.Name}
}

func metricToProto(m *autoscalingv2.MetricSpec) *pb.MetricSpec {
	out := &pb.MetricSpec{Type: string(m.Type)}
	if r := m.Resource; r != nil {
		out.Resource = &pb.ResourceMetricSource{Name: string(r.Name), Target: targetToProto(&r.Target)}
	}
	if r := m.ContainerResource; r != nil {
		out.ContainerResource = &pb.ContainerResourceMetricSource{Name: string(r.Name), Container: r.Container, Target: targetToProto(&r.Target)}
	}
	if p := m.Pods; p != nil {
		out.Pods = &pb.PodsMetricSource{Metric: metricIDToProto(&p.Metric), Target: targetToProto(&p.Target)}
	}
	if o := m.Object; o != nil {
		out.Object = &pb.ObjectMetricSource{
			DescribedObject: objectRefToProto(o.DescribedObject),
			Metric:          metricIDToProto(&o.Metric),
			Target:          targetToProto(&o.Target),
		}
	}
	if e := m.External; e != nil {
		out.External = &pb.ExternalMetricSource{Metric: metricIDToProto(&e.Metric), Target: targetToProto(&e.Target)}
	}
	return out
}

func metricIDToProto(m *autoscalingv2.MetricIdentifier) *pb.MetricIdentifier {
	return &pb.MetricIdentifier{Name: m.Name, Selector: selectorToProto(m.Selector)}
}

func selectorToProto(s *metav1.LabelSelector) *pb.LabelSelector {
	if s == nil {
		return nil
	}
	out := &pb.LabelSelector{MatchLabels: s.MatchLabels}
	for _, e := range s.MatchExpressions {
		out.MatchExpressions = append(out.MatchExpressions, &pb.LabelSelectorRequirement{Key: e.Key, Operator: string(e.Operator), Values: e.Values})
	}
	return out
}

func targetToProto(t *autoscalingv2.MetricTarget) *pb.MetricTarget {
	return &pb.MetricTarget{
		Type:               string(t.Type),
		Value:              quantityToProto(t.Value),
		AverageValue:       quantityToProto(t.AverageValue),
		AverageUtilization: t.AverageUtilization,
	}
}

func rulesToProto(r *autoscalingv2.HPAScalingRules) *pb.HPAScalingRules {
	if r == nil {
		return nil
	}
	out := &pb.HPAScalingRules{
		StabilizationWindowSeconds: r.StabilizationWindowSeconds,
		Tolerance:                  quantityToProto(r.Tolerance),
	}
	if r.SelectPolicy != nil {
		sp := string(*r.SelectPolicy)
		out.SelectPolicy = &sp
	}
	for _, p := range r.Policies {
		out.Policies = append(out.Policies, &pb.HPAScalingPolicy{Type: string(p.Type), Value: p.Value, PeriodSeconds: p.PeriodSeconds})
	}
	return out
}

func quantityToProto(q *resource.Quantity) *string {
	if q == nil {
		return nil
	}
	s := q.String()
	return &s
}
