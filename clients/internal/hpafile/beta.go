package hpafile

import (
	"encoding/json"
	"fmt"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	autoscalingv2beta1 "k8s.io/api/autoscaling/v2beta1"
	autoscalingv2beta2 "k8s.io/api/autoscaling/v2beta2"
)

// Why hand-written: the API server's conversions of the beta versions live in k8s.io/kubernetes
// (pkg/apis/autoscaling/v2beta1, v2beta2), which is not a library; k8s.io/api ships the types
// only. These functions give the same autoscaling/v2 as those conversions did.

// The releases that stopped serving the beta versions, for the warning of each document.
const (
	v2beta1Removed = "1.25"
	v2beta2Removed = "1.26"
)

// removedWarning is the warning of a document written in a version the API server no longer
// serves.
func removedWarning(version, release string) string {
	return fmt.Sprintf("%s HorizontalPodAutoscaler is no longer served since Kubernetes %s; read as autoscaling/v2 (hpactl convert -f prints it)", version, release)
}

// fromV2beta2 converts an autoscaling/v2beta2 HorizontalPodAutoscaler: its spec has the fields
// of autoscaling/v2, by the same names and meanings (ContainerResource and behavior included),
// so each is copied; the round-trip annotations of other versions are dropped, as the API
// server drops them. Status is not converted.
func fromV2beta2(in *autoscalingv2beta2.HorizontalPodAutoscaler) *autoscalingv2.HorizontalPodAutoscaler {
	out := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: *in.ObjectMeta.DeepCopy()}
	out.APIVersion, out.Kind = "autoscaling/v2", "HorizontalPodAutoscaler"
	s := in.Spec.DeepCopy()
	out.Spec = autoscalingv2.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: autoscalingv2.CrossVersionObjectReference(s.ScaleTargetRef),
		MinReplicas:    s.MinReplicas,
		MaxReplicas:    s.MaxReplicas,
	}
	for _, m := range s.Metrics {
		out.Spec.Metrics = append(out.Spec.Metrics, metricFromV2beta2(m))
	}
	if b := s.Behavior; b != nil {
		out.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: rulesFromV2beta2(b.ScaleUp), ScaleDown: rulesFromV2beta2(b.ScaleDown)}
	}
	dropRoundTripAnnotations(out)
	return out
}

func targetFromV2beta2(t autoscalingv2beta2.MetricTarget) autoscalingv2.MetricTarget {
	return autoscalingv2.MetricTarget{Type: autoscalingv2.MetricTargetType(t.Type), Value: t.Value, AverageValue: t.AverageValue, AverageUtilization: t.AverageUtilization}
}

func identifierFromV2beta2(m autoscalingv2beta2.MetricIdentifier) autoscalingv2.MetricIdentifier {
	return autoscalingv2.MetricIdentifier{Name: m.Name, Selector: m.Selector}
}

func metricFromV2beta2(in autoscalingv2beta2.MetricSpec) autoscalingv2.MetricSpec {
	out := autoscalingv2.MetricSpec{Type: autoscalingv2.MetricSourceType(in.Type)}
	if o := in.Object; o != nil {
		out.Object = &autoscalingv2.ObjectMetricSource{
			DescribedObject: autoscalingv2.CrossVersionObjectReference(o.DescribedObject),
			Metric:          identifierFromV2beta2(o.Metric),
			Target:          targetFromV2beta2(o.Target),
		}
	}
	if p := in.Pods; p != nil {
		out.Pods = &autoscalingv2.PodsMetricSource{Metric: identifierFromV2beta2(p.Metric), Target: targetFromV2beta2(p.Target)}
	}
	if r := in.Resource; r != nil {
		out.Resource = &autoscalingv2.ResourceMetricSource{Name: r.Name, Target: targetFromV2beta2(r.Target)}
	}
	if r := in.ContainerResource; r != nil {
		out.ContainerResource = &autoscalingv2.ContainerResourceMetricSource{Name: r.Name, Container: r.Container, Target: targetFromV2beta2(r.Target)}
	}
	if e := in.External; e != nil {
		out.External = &autoscalingv2.ExternalMetricSource{Metric: identifierFromV2beta2(e.Metric), Target: targetFromV2beta2(e.Target)}
	}
	return out
}

func rulesFromV2beta2(in *autoscalingv2beta2.HPAScalingRules) *autoscalingv2.HPAScalingRules {
	if in == nil {
		return nil
	}
	out := &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: in.StabilizationWindowSeconds}
	if in.SelectPolicy != nil {
		p := autoscalingv2.ScalingPolicySelect(*in.SelectPolicy)
		out.SelectPolicy = &p
	}
	for _, p := range in.Policies {
		out.Policies = append(out.Policies, autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.HPAScalingPolicyType(p.Type), Value: p.Value, PeriodSeconds: p.PeriodSeconds})
	}
	return out
}

// fromV2beta1 converts an autoscaling/v2beta1 HorizontalPodAutoscaler with the API server's
// rules (pkg/apis/autoscaling/v2beta1):
//   - Resource and ContainerResource: Utilization when targetAverageUtilization is set, else
//     AverageValue (targetAverageValue);
//   - Pods: AverageValue targetAverageValue, metricName and selector as the metric;
//   - Object: target becomes describedObject; Value (targetValue, kept even next to an
//     averageValue) unless averageValue is set, then AverageValue;
//   - External: Value when targetValue is set, else AverageValue; metricName and
//     metricSelector as the metric;
//   - the behavior annotation (v2beta1 has no behavior field) sets spec.behavior when it is not
//     empty, and the round-trip annotations are dropped.
//
// As for autoscaling/v1, a behavior annotation that does not parse is a problem here, where
// the API server ignored it. Status is not converted.
func fromV2beta1(in *autoscalingv2beta1.HorizontalPodAutoscaler, report func(field, msg string)) *autoscalingv2.HorizontalPodAutoscaler {
	out := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: *in.ObjectMeta.DeepCopy()}
	out.APIVersion, out.Kind = "autoscaling/v2", "HorizontalPodAutoscaler"
	s := in.Spec.DeepCopy()
	out.Spec = autoscalingv2.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: autoscalingv2.CrossVersionObjectReference(s.ScaleTargetRef),
		MinReplicas:    s.MinReplicas,
		MaxReplicas:    s.MaxReplicas,
	}
	for i := range s.Metrics {
		out.Spec.Metrics = append(out.Spec.Metrics, metricFromV2beta1(&s.Metrics[i]))
	}
	if enc, ok := in.Annotations[annotationBehavior]; ok {
		var b autoscalingv2.HorizontalPodAutoscalerBehavior
		if err := json.Unmarshal([]byte(enc), &b); err != nil {
			report(annotationField(annotationBehavior), fmt.Sprintf("not a JSON HorizontalPodAutoscalerBehavior: %v", err))
		} else if b.ScaleUp != nil || b.ScaleDown != nil {
			out.Spec.Behavior = &b
		}
	}
	dropRoundTripAnnotations(out)
	return out
}

func metricFromV2beta1(in *autoscalingv2beta1.MetricSpec) autoscalingv2.MetricSpec {
	out := autoscalingv2.MetricSpec{Type: autoscalingv2.MetricSourceType(in.Type)}
	if o := in.Object; o != nil {
		t := autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: quantity(o.TargetValue), AverageValue: o.AverageValue}
		if o.AverageValue != nil {
			t.Type = autoscalingv2.AverageValueMetricType
		}
		out.Object = &autoscalingv2.ObjectMetricSource{
			DescribedObject: autoscalingv2.CrossVersionObjectReference(o.Target),
			Metric:          autoscalingv2.MetricIdentifier{Name: o.MetricName, Selector: o.Selector},
			Target:          t,
		}
	}
	if p := in.Pods; p != nil {
		out.Pods = &autoscalingv2.PodsMetricSource{
			Metric: autoscalingv2.MetricIdentifier{Name: p.MetricName, Selector: p.Selector},
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: quantity(p.TargetAverageValue)},
		}
	}
	if r := in.Resource; r != nil {
		out.Resource = &autoscalingv2.ResourceMetricSource{Name: r.Name, Target: resourceTarget(r.TargetAverageUtilization, r.TargetAverageValue)}
	}
	if r := in.ContainerResource; r != nil {
		out.ContainerResource = &autoscalingv2.ContainerResourceMetricSource{
			Name: r.Name, Container: r.Container, Target: resourceTarget(r.TargetAverageUtilization, r.TargetAverageValue),
		}
	}
	if e := in.External; e != nil {
		out.External = &autoscalingv2.ExternalMetricSource{
			Metric: autoscalingv2.MetricIdentifier{Name: e.MetricName, Selector: e.MetricSelector},
			Target: externalTarget(e.TargetValue, e.TargetAverageValue),
		}
	}
	return out
}
