package hpafile

import (
	"encoding/json"
	"fmt"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The annotations an autoscaling/v1 object carries its autoscaling/v2 fields in when the API
// server stores a v2 object and serves it as v1 (k8s.io/kubernetes pkg/apis/autoscaling).
const (
	annotationMetrics        = "autoscaling.alpha.kubernetes.io/metrics"
	annotationBehavior       = "autoscaling.alpha.kubernetes.io/behavior"
	annotationScaleUpTol     = "autoscaling.alpha.kubernetes.io/scale-up-tolerance"
	annotationScaleDownTol   = "autoscaling.alpha.kubernetes.io/scale-down-tolerance"
	annotationCurrentMetrics = "autoscaling.alpha.kubernetes.io/current-metrics"
	annotationConditions     = "autoscaling.alpha.kubernetes.io/conditions"
)

// defaultCPUUtilization is the target of a v1 autoscaler that names no metric at all, as the
// API server's conversion fills it in.
const defaultCPUUtilization = 80

// fromV1 converts an autoscaling/v1 HorizontalPodAutoscaler to autoscaling/v2 with the API
// server's rules:
//   - spec.targetCPUUtilizationPercentage becomes a Resource cpu Utilization metric;
//   - the metrics annotation (v1 MetricSpecs) adds its metrics before that one;
//   - the behavior annotation sets spec.behavior when it is not empty;
//   - with no metric after that, the target is 80 % average CPU utilization;
//   - the round-trip annotations are dropped from the result (the scale-up and scale-down
//     tolerance ones too: the API server drops them here without reading them).
//
// One difference, deliberate: the API server ignores an annotation it cannot parse, so the
// autoscaler silently loses metrics or behavior; here it is a problem reported with its path.
// Status is not converted (a manifest's status is not read).
func fromV1(in *autoscalingv1.HorizontalPodAutoscaler, report func(field, msg string)) *autoscalingv2.HorizontalPodAutoscaler {
	out := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: *in.ObjectMeta.DeepCopy()}
	out.APIVersion, out.Kind = "autoscaling/v2", "HorizontalPodAutoscaler"
	out.Spec = autoscalingv2.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: autoscalingv2.CrossVersionObjectReference(in.Spec.ScaleTargetRef),
		MinReplicas:    in.Spec.MinReplicas,
		MaxReplicas:    in.Spec.MaxReplicas,
	}
	annotations := in.Annotations
	if enc, ok := annotations[annotationMetrics]; ok {
		var ms []autoscalingv1.MetricSpec
		if err := json.Unmarshal([]byte(enc), &ms); err != nil {
			report(annotationField(annotationMetrics), fmt.Sprintf("not a JSON list of autoscaling/v1 MetricSpecs: %v", err))
		} else {
			for i := range ms {
				out.Spec.Metrics = append(out.Spec.Metrics, metricFromV1(&ms[i]))
			}
		}
	}
	if p := in.Spec.TargetCPUUtilizationPercentage; p != nil {
		out.Spec.Metrics = append(out.Spec.Metrics, cpuUtilization(*p))
	}
	if enc, ok := annotations[annotationBehavior]; ok {
		// The API server decodes it into its internal type, whose fields have no JSON tags:
		// encoding/json's case-insensitive matching reads the same names into the v2 type.
		var b autoscalingv2.HorizontalPodAutoscalerBehavior
		if err := json.Unmarshal([]byte(enc), &b); err != nil {
			report(annotationField(annotationBehavior), fmt.Sprintf("not a JSON HorizontalPodAutoscalerBehavior: %v", err))
		} else if b.ScaleUp != nil || b.ScaleDown != nil {
			out.Spec.Behavior = &b
		}
	}
	if len(out.Spec.Metrics) == 0 {
		out.Spec.Metrics = []autoscalingv2.MetricSpec{cpuUtilization(defaultCPUUtilization)}
	}
	dropRoundTripAnnotations(out)
	return out
}

// dropRoundTripAnnotations deletes the annotations the API server keeps other versions'
// fields in from the converted object, as its conversions do.
func dropRoundTripAnnotations(out *autoscalingv2.HorizontalPodAutoscaler) {
	for _, k := range []string{annotationMetrics, annotationBehavior, annotationScaleUpTol, annotationScaleDownTol, annotationCurrentMetrics, annotationConditions} {
		delete(out.Annotations, k)
	}
}

func annotationField(key string) string { return "metadata.annotations[" + key + "]" }

func cpuUtilization(percent int32) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{
		Type: autoscalingv2.ResourceMetricSourceType,
		Resource: &autoscalingv2.ResourceMetricSource{
			Name:   corev1.ResourceCPU,
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &percent},
		},
	}
}

// metricFromV1 converts one metric of the metrics annotation: a source's target type follows
// from which of its v1 target fields is set.
func metricFromV1(in *autoscalingv1.MetricSpec) autoscalingv2.MetricSpec {
	out := autoscalingv2.MetricSpec{Type: autoscalingv2.MetricSourceType(in.Type)}
	if o := in.Object; o != nil {
		t := autoscalingv2.MetricTarget{AverageValue: o.AverageValue}
		if o.AverageValue == nil {
			t.Type, t.Value = autoscalingv2.ValueMetricType, quantity(o.TargetValue)
		} else {
			// v1 cannot omit targetValue; a zero one next to averageValue means none.
			t.Type = autoscalingv2.AverageValueMetricType
			if !o.TargetValue.IsZero() {
				t.Value = quantity(o.TargetValue)
			}
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

// externalTarget is Value when a value is set, else AverageValue: how v1 and v2beta1 External
// metrics, which name no target type, convert.
func externalTarget(value, averageValue *resource.Quantity) autoscalingv2.MetricTarget {
	if value != nil {
		return autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: value, AverageValue: averageValue}
	}
	return autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: averageValue}
}

// resourceTarget is Utilization when a utilization is set, else AverageValue.
func resourceTarget(utilization *int32, averageValue *resource.Quantity) autoscalingv2.MetricTarget {
	t := autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageUtilization: utilization, AverageValue: averageValue}
	if utilization != nil {
		t.Type = autoscalingv2.UtilizationMetricType
	}
	return t
}

func quantity(q resource.Quantity) *resource.Quantity { return &q }
