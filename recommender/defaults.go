package recommender

import "k8s.io/apimachinery/pkg/api/resource"

// SetDefaults returns a defaulted deep copy of spec, as the API server defaults an
// autoscaling/v2 HorizontalPodAutoscalerSpec (§9); spec itself is never modified and shares no
// memory with the result. A nil spec gives nil.
//
//   - minReplicas: 1 when unset.
//   - metrics: when empty, one Resource cpu metric with a Utilization target of 80.
//   - behavior: only when set. Each direction is merged per field, so a user's policies list
//     replaces the default list whole; an unset direction gets all its defaults.
//     scaleUp: stabilizationWindowSeconds 0, selectPolicy Max, policies [Pods 4/15s, Percent 100/15s].
//     scaleDown: stabilizationWindowSeconds stays unset (the controller substitutes
//     Options.DownscaleStabilizationWindow), selectPolicy Max, policies [Percent 100/15s].
//     tolerance stays unset in both (Options.Tolerance applies).
//
// An empty (non-nil) policies list counts as unset, as "policies: []" does in the API.
func SetDefaults(spec *Spec) *Spec {
	if spec == nil {
		return nil
	}
	out := deepCopySpec(spec)
	if out.MinReplicas == nil {
		out.MinReplicas = defaultsPtr[int32](1)
	}
	if len(out.Metrics) == 0 {
		out.Metrics = []MetricSpec{{
			Type: MetricResource,
			Resource: &ResourceMetricSource{
				Name: "cpu",
				Target: MetricTarget{
					Type:               TargetUtilization,
					AverageUtilization: defaultsPtr[int32](80),
				},
			},
		}}
	}
	if out.Behavior != nil {
		out.Behavior.ScaleUp = mergeScalingRules(out.Behavior.ScaleUp, ScalingRules{
			StabilizationWindowSeconds: defaultsPtr[int32](0),
			SelectPolicy:               defaultsPtr(SelectMax),
			Policies: []ScalingPolicy{
				{Type: PolicyPods, Value: 4, PeriodSeconds: 15},
				{Type: PolicyPercent, Value: 100, PeriodSeconds: 15},
			},
		})
		out.Behavior.ScaleDown = mergeScalingRules(out.Behavior.ScaleDown, ScalingRules{
			SelectPolicy: defaultsPtr(SelectMax),
			Policies: []ScalingPolicy{
				{Type: PolicyPercent, Value: 100, PeriodSeconds: 15},
			},
		})
	}
	return out
}

// mergeScalingRules is upstream's copyHPAScalingRules: every field set in from (already a
// private copy) wins over the default.
func mergeScalingRules(from *ScalingRules, def ScalingRules) *ScalingRules {
	if from == nil {
		return &def
	}
	if from.StabilizationWindowSeconds != nil {
		def.StabilizationWindowSeconds = from.StabilizationWindowSeconds
	}
	if from.SelectPolicy != nil {
		def.SelectPolicy = from.SelectPolicy
	}
	if len(from.Policies) > 0 {
		def.Policies = from.Policies
	}
	def.Tolerance = from.Tolerance
	return &def
}

func defaultsPtr[T any](v T) *T { return &v }

func deepCopySpec(in *Spec) *Spec {
	out := *in
	out.MinReplicas = deepCopyPtr(in.MinReplicas)
	if in.Metrics != nil {
		out.Metrics = make([]MetricSpec, len(in.Metrics))
		for i := range in.Metrics {
			out.Metrics[i] = deepCopyMetricSpec(&in.Metrics[i])
		}
	}
	if in.Behavior != nil {
		out.Behavior = &Behavior{
			ScaleUp:   deepCopyScalingRules(in.Behavior.ScaleUp),
			ScaleDown: deepCopyScalingRules(in.Behavior.ScaleDown),
		}
	}
	return &out
}

func deepCopyMetricSpec(in *MetricSpec) MetricSpec {
	out := MetricSpec{Type: in.Type}
	if in.Resource != nil {
		out.Resource = &ResourceMetricSource{Name: in.Resource.Name, Target: deepCopyTarget(in.Resource.Target)}
	}
	if c := in.ContainerResource; c != nil {
		out.ContainerResource = &ContainerResourceMetricSource{
			Name: c.Name, Container: c.Container, Target: deepCopyTarget(c.Target),
		}
	}
	if in.Pods != nil {
		out.Pods = &PodsMetricSource{Metric: deepCopyIdentifier(in.Pods.Metric), Target: deepCopyTarget(in.Pods.Target)}
	}
	if o := in.Object; o != nil {
		out.Object = &ObjectMetricSource{
			DescribedObject: o.DescribedObject, Metric: deepCopyIdentifier(o.Metric), Target: deepCopyTarget(o.Target),
		}
	}
	if in.External != nil {
		out.External = &ExternalMetricSource{
			Metric: deepCopyIdentifier(in.External.Metric), Target: deepCopyTarget(in.External.Target),
		}
	}
	return out
}

func deepCopyIdentifier(in MetricIdentifier) MetricIdentifier {
	out := MetricIdentifier{Name: in.Name}
	if s := in.Selector; s != nil {
		sel := &LabelSelector{}
		if s.MatchLabels != nil {
			sel.MatchLabels = make(map[string]string, len(s.MatchLabels))
			for k, v := range s.MatchLabels {
				sel.MatchLabels[k] = v
			}
		}
		if s.MatchExpressions != nil {
			sel.MatchExpressions = make([]LabelSelectorRequirement, len(s.MatchExpressions))
			for i, r := range s.MatchExpressions {
				r.Values = deepCopySlice(r.Values)
				sel.MatchExpressions[i] = r
			}
		}
		out.Selector = sel
	}
	return out
}

func deepCopyTarget(in MetricTarget) MetricTarget {
	return MetricTarget{
		Type:               in.Type,
		Value:              deepCopyQuantity(in.Value),
		AverageValue:       deepCopyQuantity(in.AverageValue),
		AverageUtilization: deepCopyPtr(in.AverageUtilization),
	}
}

func deepCopyScalingRules(in *ScalingRules) *ScalingRules {
	if in == nil {
		return nil
	}
	return &ScalingRules{
		StabilizationWindowSeconds: deepCopyPtr(in.StabilizationWindowSeconds),
		SelectPolicy:               deepCopyPtr(in.SelectPolicy),
		Policies:                   deepCopySlice(in.Policies),
		Tolerance:                  deepCopyQuantity(in.Tolerance),
	}
}

func deepCopyQuantity(q *resource.Quantity) *resource.Quantity {
	if q == nil {
		return nil
	}
	c := q.DeepCopy()
	return &c
}

func deepCopyPtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// deepCopySlice copies a slice of values, keeping nil nil.
func deepCopySlice[T any](s []T) []T {
	if s == nil {
		return nil
	}
	return append(make([]T, 0, len(s)), s...)
}
