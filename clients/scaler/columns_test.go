package scaler

import (
	"reflect"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestHPAReference(t *testing.T) {
	ref := autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}
	if got, want := hpaReference(ref), "Deployment/web"; got != want {
		t.Errorf("hpaReference = %q, want %q", got, want)
	}
}

// Metric specs and statuses of every type, for the TARGETS cases.
func utilSpec(name corev1.ResourceName, target int32) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: name, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &target}}}
}

func utilStatus(name corev1.ResourceName, current int32, avg string) autoscalingv2.MetricStatus {
	return autoscalingv2.MetricStatus{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{
		Name: name, Current: autoscalingv2.MetricValueStatus{AverageUtilization: &current, AverageValue: ptr(q(avg))}}}
}

func avgTarget(v string) autoscalingv2.MetricTarget {
	return autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr(q(v))}
}

func valueTarget(v string) autoscalingv2.MetricTarget {
	return autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: ptr(q(v))}
}

func podsSpec(target string) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: "rps"}, Target: avgTarget(target)}}
}

func objectSpec(t autoscalingv2.MetricTarget) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ObjectMetricSourceType, Object: &autoscalingv2.ObjectMetricSource{
		DescribedObject: autoscalingv2.CrossVersionObjectReference{APIVersion: "networking.k8s.io/v1", Kind: "Ingress", Name: "main"},
		Metric:          autoscalingv2.MetricIdentifier{Name: "hits"}, Target: t}}
}

func externalSpec(t autoscalingv2.MetricTarget) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: "queue"}, Target: t}}
}

func valueStatus(typ autoscalingv2.MetricSourceType, v autoscalingv2.MetricValueStatus) autoscalingv2.MetricStatus {
	st := autoscalingv2.MetricStatus{Type: typ}
	switch typ {
	case autoscalingv2.PodsMetricSourceType:
		st.Pods = &autoscalingv2.PodsMetricStatus{Metric: autoscalingv2.MetricIdentifier{Name: "rps"}, Current: v}
	case autoscalingv2.ObjectMetricSourceType:
		st.Object = &autoscalingv2.ObjectMetricStatus{Metric: autoscalingv2.MetricIdentifier{Name: "hits"}, Current: v}
	case autoscalingv2.ExternalMetricSourceType:
		st.External = &autoscalingv2.ExternalMetricStatus{Metric: autoscalingv2.MetricIdentifier{Name: "queue"}, Current: v}
	}
	return st
}

func TestHPATargets(t *testing.T) {
	containerUtil := autoscalingv2.MetricSpec{Type: autoscalingv2.ContainerResourceMetricSourceType, ContainerResource: &autoscalingv2.ContainerResourceMetricSource{
		Name: corev1.ResourceCPU, Container: "app", Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr(int32(70))}}}
	containerStatus := autoscalingv2.MetricStatus{Type: autoscalingv2.ContainerResourceMetricSourceType, ContainerResource: &autoscalingv2.ContainerResourceMetricStatus{
		Name: corev1.ResourceCPU, Container: "app", Current: autoscalingv2.MetricValueStatus{AverageUtilization: ptr(int32(35))}}}
	memAvg := autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: corev1.ResourceMemory, Target: avgTarget("1Gi")}}
	memStatus := autoscalingv2.MetricStatus{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{
		Name: corev1.ResourceMemory, Current: autoscalingv2.MetricValueStatus{AverageValue: ptr(q("500Mi"))}}}
	cpuAvg := autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: corev1.ResourceCPU, Target: avgTarget("1")}}
	cpuAvgStatus := autoscalingv2.MetricStatus{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{
		Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageValue: ptr(q("0.5"))}}}
	failed := autoscalingv2.MetricStatus{} // a metric that could not be read: an empty status

	tests := []struct {
		name    string
		metrics []autoscalingv2.MetricSpec
		current []autoscalingv2.MetricStatus
		want    string
	}{
		{name: "Resource Utilization", metrics: []autoscalingv2.MetricSpec{utilSpec("cpu", 60)},
			current: []autoscalingv2.MetricStatus{utilStatus("cpu", 90, "90m")}, want: "cpu: 90%/60%"},
		{name: "Resource Utilization, no status yet", metrics: []autoscalingv2.MetricSpec{utilSpec("cpu", 60)},
			want: "cpu: <unknown>/60%"},
		{name: "Resource Utilization, the metric failed", metrics: []autoscalingv2.MetricSpec{utilSpec("cpu", 60)},
			current: []autoscalingv2.MetricStatus{failed}, want: "cpu: <unknown>/60%"},
		{name: "Resource Utilization without averageUtilization: <auto>", metrics: []autoscalingv2.MetricSpec{{
			Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{Name: "cpu", Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType}}}},
			want: "cpu: <unknown>/<auto>"},
		{name: "Resource AverageValue, canonical quantities", metrics: []autoscalingv2.MetricSpec{cpuAvg},
			current: []autoscalingv2.MetricStatus{cpuAvgStatus}, want: "cpu: 500m/1"},
		{name: "Resource AverageValue, no status", metrics: []autoscalingv2.MetricSpec{memAvg}, want: "memory: <unknown>/1Gi"},
		{name: "ContainerResource Utilization", metrics: []autoscalingv2.MetricSpec{containerUtil},
			current: []autoscalingv2.MetricStatus{containerStatus}, want: "cpu: 35%/70%"},
		{name: "Pods", metrics: []autoscalingv2.MetricSpec{podsSpec("20")},
			current: []autoscalingv2.MetricStatus{valueStatus(autoscalingv2.PodsMetricSourceType, autoscalingv2.MetricValueStatus{AverageValue: ptr(q("10500m"))})},
			want:    "10500m/20"},
		{name: "Pods, unknown", metrics: []autoscalingv2.MetricSpec{podsSpec("20")}, want: "<unknown>/20"},
		{name: "Object Value", metrics: []autoscalingv2.MetricSpec{objectSpec(valueTarget("2k"))},
			current: []autoscalingv2.MetricStatus{valueStatus(autoscalingv2.ObjectMetricSourceType, autoscalingv2.MetricValueStatus{Value: ptr(q("1500"))})},
			want:    "1500/2k"},
		{name: "Object AverageValue: (avg)", metrics: []autoscalingv2.MetricSpec{objectSpec(avgTarget("100"))},
			current: []autoscalingv2.MetricStatus{valueStatus(autoscalingv2.ObjectMetricSourceType, autoscalingv2.MetricValueStatus{AverageValue: ptr(q("50"))})},
			want:    "50/100 (avg)"},
		{name: "Object AverageValue, a status without the average: unknown", metrics: []autoscalingv2.MetricSpec{objectSpec(avgTarget("100"))},
			current: []autoscalingv2.MetricStatus{valueStatus(autoscalingv2.ObjectMetricSourceType, autoscalingv2.MetricValueStatus{Value: ptr(q("50"))})},
			want:    "<unknown>/100 (avg)"},
		{name: "External Value", metrics: []autoscalingv2.MetricSpec{externalSpec(valueTarget("30"))},
			current: []autoscalingv2.MetricStatus{valueStatus(autoscalingv2.ExternalMetricSourceType, autoscalingv2.MetricValueStatus{Value: ptr(q("45"))})},
			want:    "45/30"},
		{name: "External Value, a status without the value prints a nil quantity, as upstream", metrics: []autoscalingv2.MetricSpec{externalSpec(valueTarget("30"))},
			current: []autoscalingv2.MetricStatus{valueStatus(autoscalingv2.ExternalMetricSourceType, autoscalingv2.MetricValueStatus{})},
			want:    "<nil>/30"},
		{name: "External AverageValue, unknown", metrics: []autoscalingv2.MetricSpec{externalSpec(avgTarget("5"))}, want: "<unknown>/5 (avg)"},
		{name: "statuses match by position, not type", metrics: []autoscalingv2.MetricSpec{podsSpec("20"), utilSpec("cpu", 60)},
			current: []autoscalingv2.MetricStatus{utilStatus("cpu", 90, "90m")}, want: "<unknown>/20, cpu: <unknown>/60%"},
		{name: "two metrics: both", metrics: []autoscalingv2.MetricSpec{utilSpec("cpu", 60), memAvg},
			current: []autoscalingv2.MetricStatus{utilStatus("cpu", 90, "90m"), memStatus}, want: "cpu: 90%/60%, memory: 500Mi/1Gi"},
		{name: "three metrics: two and + 1 more", metrics: []autoscalingv2.MetricSpec{utilSpec("cpu", 60), memAvg, podsSpec("20")},
			current: []autoscalingv2.MetricStatus{utilStatus("cpu", 90, "90m"), memStatus, failed}, want: "cpu: 90%/60%, memory: 500Mi/1Gi + 1 more..."},
		{name: "five metrics, one failed: + 3 more", metrics: []autoscalingv2.MetricSpec{utilSpec("cpu", 60), podsSpec("20"), memAvg, objectSpec(valueTarget("1")), externalSpec(valueTarget("1"))},
			current: []autoscalingv2.MetricStatus{utilStatus("cpu", 90, "90m"), failed, memStatus}, want: "cpu: 90%/60%, <unknown>/20 + 3 more..."},
		{name: "no metrics: the API server's default, cpu at 80%", want: "cpu: <unknown>/80%"},
		{name: "no metrics, measured", current: []autoscalingv2.MetricStatus{utilStatus("cpu", 40, "40m")}, want: "cpu: 40%/80%"},
		{name: "a type without its source", metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.PodsMetricSourceType}}, want: "<unknown type>"},
		{name: "an unknown type", metrics: []autoscalingv2.MetricSpec{{Type: "Custom"}, utilSpec("cpu", 60)}, want: "<unknown type>, cpu: <unknown>/60%"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := hpaTargets(tc.metrics, tc.current); got != tc.want {
				t.Errorf("hpaTargets = %q, want %q", got, tc.want)
			}
		})
	}
}

// The quantities may belong to the informer's cache: printing one must not write to it
// (resource.Quantity's String caches its result in the quantity).
func TestHPATargetsDoesNotModifyItsInput(t *testing.T) {
	notCanonical := func(s string) *resource.Quantity { v := q(s); return &v } // "0.5" prints as 500m
	metrics := []autoscalingv2.MetricSpec{externalSpec(autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: notCanonical("1.5")})}
	current := []autoscalingv2.MetricStatus{valueStatus(autoscalingv2.ExternalMetricSourceType, autoscalingv2.MetricValueStatus{Value: notCanonical("0.5")})}
	beforeM, beforeC := metrics[0].DeepCopy(), current[0].DeepCopy()
	if got, want := hpaTargets(metrics, current), "500m/1500m"; got != want {
		t.Errorf("hpaTargets = %q, want %q", got, want)
	}
	if !reflect.DeepEqual(&metrics[0], beforeM) || !reflect.DeepEqual(&current[0], beforeC) {
		t.Error("hpaTargets modified the quantities it printed")
	}
}
