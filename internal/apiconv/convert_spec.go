package apiconv

import (
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/api/resource"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
	"github.com/hpa-recommender/hpa-recommender/recommender"
)

// SpecFromProto converts an autoscaler spec; field is its path ("spec"). A nil spec is nil.
// Empty policies lists, selectors' empty maps and lists become nil.
func SpecFromProto(field string, s *pb.HorizontalPodAutoscalerSpec) (*recommender.Spec, []FieldViolation) {
	if s == nil {
		return nil, nil
	}
	c := newConverter(field)
	out := c.spec(s)
	return out, c.violations
}

func (c *converter) spec(s *pb.HorizontalPodAutoscalerSpec) *recommender.Spec {
	out := &recommender.Spec{
		ScaleTargetRef: objectRefFromProto(s.GetScaleTargetRef()),
		MinReplicas:    copyPtr(s.MinReplicas),
		MaxReplicas:    s.GetMaxReplicas(),
	}
	if ms := s.GetMetrics(); len(ms) > 0 {
		out.Metrics = make([]recommender.MetricSpec, len(ms))
		for i, m := range ms {
			c.pushIndex("metrics", i)
			out.Metrics[i] = c.metricSpec(m)
			c.pop()
		}
	}
	if b := s.GetBehavior(); b != nil {
		c.push("behavior")
		out.Behavior = &recommender.Behavior{
			ScaleUp:   c.scalingRules("scaleUp", b.GetScaleUp()),
			ScaleDown: c.scalingRules("scaleDown", b.GetScaleDown()),
		}
		c.pop()
	}
	return out
}

// metricSpec converts every source that is set, whatever the type says: validation reports a
// source that disagrees with the type.
func (c *converter) metricSpec(m *pb.MetricSpec) recommender.MetricSpec {
	out := recommender.MetricSpec{Type: m.GetType()}
	if r := m.GetResource(); r != nil {
		c.push("resource")
		out.Resource = &recommender.ResourceMetricSource{Name: r.GetName(), Target: c.target(r.GetTarget())}
		c.pop()
	}
	if r := m.GetContainerResource(); r != nil {
		c.push("containerResource")
		out.ContainerResource = &recommender.ContainerResourceMetricSource{
			Name:      r.GetName(),
			Container: r.GetContainer(),
			Target:    c.target(r.GetTarget()),
		}
		c.pop()
	}
	if p := m.GetPods(); p != nil {
		c.push("pods")
		out.Pods = &recommender.PodsMetricSource{Metric: metricIDFromProto(p.GetMetric()), Target: c.target(p.GetTarget())}
		c.pop()
	}
	if o := m.GetObject(); o != nil {
		c.push("object")
		out.Object = &recommender.ObjectMetricSource{
			DescribedObject: objectRefFromProto(o.GetDescribedObject()),
			Metric:          metricIDFromProto(o.GetMetric()),
			Target:          c.target(o.GetTarget()),
		}
		c.pop()
	}
	if e := m.GetExternal(); e != nil {
		c.push("external")
		out.External = &recommender.ExternalMetricSource{Metric: metricIDFromProto(e.GetMetric()), Target: c.target(e.GetTarget())}
		c.pop()
	}
	return out
}

func (c *converter) target(t *pb.MetricTarget) recommender.MetricTarget {
	if t == nil {
		return recommender.MetricTarget{}
	}
	c.push("target")
	out := recommender.MetricTarget{
		Type:               t.GetType(),
		Value:              c.optQuantity("value", t.Value),
		AverageValue:       c.optQuantity("averageValue", t.AverageValue),
		AverageUtilization: copyPtr(t.AverageUtilization),
	}
	c.pop()
	return out
}

func (c *converter) scalingRules(name string, r *pb.HPAScalingRules) *recommender.ScalingRules {
	if r == nil {
		return nil
	}
	c.push(name)
	out := &recommender.ScalingRules{
		StabilizationWindowSeconds: copyPtr(r.StabilizationWindowSeconds),
		SelectPolicy:               copyPtr(r.SelectPolicy),
		Tolerance:                  c.optQuantity("tolerance", r.Tolerance),
	}
	if ps := r.GetPolicies(); len(ps) > 0 {
		out.Policies = make([]recommender.ScalingPolicy, len(ps))
		for i, p := range ps {
			out.Policies[i] = recommender.ScalingPolicy{Type: p.GetType(), Value: p.GetValue(), PeriodSeconds: p.GetPeriodSeconds()}
		}
	}
	c.pop()
	return out
}

// objectRefFromProto converts a scaleTargetRef or describedObject; nil is the zero reference.
func objectRefFromProto(r *pb.CrossVersionObjectReference) recommender.ObjectReference {
	return recommender.ObjectReference{APIVersion: r.GetApiVersion(), Kind: r.GetKind(), Name: r.GetName()}
}

func metricIDFromProto(m *pb.MetricIdentifier) recommender.MetricIdentifier {
	return recommender.MetricIdentifier{Name: m.GetName(), Selector: selectorFromProto(m.GetSelector())}
}

func selectorFromProto(s *pb.LabelSelector) *recommender.LabelSelector {
	if s == nil {
		return nil
	}
	out := &recommender.LabelSelector{}
	if ml := s.GetMatchLabels(); len(ml) > 0 {
		out.MatchLabels = maps.Clone(ml)
	}
	if es := s.GetMatchExpressions(); len(es) > 0 {
		out.MatchExpressions = make([]recommender.LabelSelectorRequirement, len(es))
		for i, e := range es {
			out.MatchExpressions[i] = recommender.LabelSelectorRequirement{
				Key:      e.GetKey(),
				Operator: e.GetOperator(),
				Values:   cloneNonEmpty(e.GetValues()),
			}
		}
	}
	return out
}

// SpecToProto writes a spec; quantities are in canonical form. A nil spec is nil.
func SpecToProto(s *recommender.Spec) *pb.HorizontalPodAutoscalerSpec {
	if s == nil {
		return nil
	}
	out := &pb.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: objectRefToProto(s.ScaleTargetRef),
		MinReplicas:    copyPtr(s.MinReplicas),
		MaxReplicas:    s.MaxReplicas,
	}
	if len(s.Metrics) > 0 {
		out.Metrics = make([]*pb.MetricSpec, len(s.Metrics))
		for i := range s.Metrics {
			out.Metrics[i] = metricSpecToProto(&s.Metrics[i])
		}
	}
	if b := s.Behavior; b != nil {
		out.Behavior = &pb.HorizontalPodAutoscalerBehavior{
			ScaleUp:   scalingRulesToProto(b.ScaleUp),
			ScaleDown: scalingRulesToProto(b.ScaleDown),
		}
	}
	return out
}

func metricSpecToProto(m *recommender.MetricSpec) *pb.MetricSpec {
	out := &pb.MetricSpec{Type: m.Type}
	if r := m.Resource; r != nil {
		out.Resource = &pb.ResourceMetricSource{Name: r.Name, Target: targetToProto(&r.Target)}
	}
	if r := m.ContainerResource; r != nil {
		out.ContainerResource = &pb.ContainerResourceMetricSource{Name: r.Name, Container: r.Container, Target: targetToProto(&r.Target)}
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

func targetToProto(t *recommender.MetricTarget) *pb.MetricTarget {
	return &pb.MetricTarget{
		Type:               t.Type,
		Value:              quantityToProto(t.Value),
		AverageValue:       quantityToProto(t.AverageValue),
		AverageUtilization: copyPtr(t.AverageUtilization),
	}
}

func scalingRulesToProto(r *recommender.ScalingRules) *pb.HPAScalingRules {
	if r == nil {
		return nil
	}
	out := &pb.HPAScalingRules{
		StabilizationWindowSeconds: copyPtr(r.StabilizationWindowSeconds),
		SelectPolicy:               copyPtr(r.SelectPolicy),
		Tolerance:                  quantityToProto(r.Tolerance),
	}
	if len(r.Policies) > 0 {
		out.Policies = make([]*pb.HPAScalingPolicy, len(r.Policies))
		for i, p := range r.Policies {
			out.Policies[i] = &pb.HPAScalingPolicy{Type: p.Type, Value: p.Value, PeriodSeconds: p.PeriodSeconds}
		}
	}
	return out
}

// objectRefToProto writes a reference; the empty reference is nil (absent).
func objectRefToProto(r recommender.ObjectReference) *pb.CrossVersionObjectReference {
	if r == (recommender.ObjectReference{}) {
		return nil
	}
	return &pb.CrossVersionObjectReference{ApiVersion: r.APIVersion, Kind: r.Kind, Name: r.Name}
}

func metricIDToProto(m *recommender.MetricIdentifier) *pb.MetricIdentifier {
	out := &pb.MetricIdentifier{Name: m.Name}
	if s := m.Selector; s != nil {
		out.Selector = &pb.LabelSelector{}
		if len(s.MatchLabels) > 0 {
			out.Selector.MatchLabels = maps.Clone(s.MatchLabels)
		}
		if len(s.MatchExpressions) > 0 {
			out.Selector.MatchExpressions = make([]*pb.LabelSelectorRequirement, len(s.MatchExpressions))
			for i, e := range s.MatchExpressions {
				out.Selector.MatchExpressions[i] = &pb.LabelSelectorRequirement{
					Key:      e.Key,
					Operator: e.Operator,
					Values:   cloneNonEmpty(e.Values),
				}
			}
		}
	}
	return out
}

// quantityToProto writes a quantity in canonical form (Quantity.String); nil is nil.
func quantityToProto(q *resource.Quantity) *string {
	if q == nil {
		return nil
	}
	s := canonical(*q)
	return &s
}

// canonical formats a copy of q: Quantity.String caches its result in the receiver, which would
// be a data race on domain values shared between goroutines.
func canonical(q resource.Quantity) string { return q.String() }

// cloneNonEmpty copies s; an empty slice is nil.
func cloneNonEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return slices.Clone(s)
}
