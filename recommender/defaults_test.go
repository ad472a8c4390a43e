package recommender

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
)

func vtDefaultScaleUp() *ScalingRules {
	return &ScalingRules{
		StabilizationWindowSeconds: vtInt32(0),
		SelectPolicy:               vtString(SelectMax),
		Policies:                   []ScalingPolicy{{Type: PolicyPods, Value: 4, PeriodSeconds: 15}, {Type: PolicyPercent, Value: 100, PeriodSeconds: 15}},
	}
}

func vtDefaultScaleDown() *ScalingRules {
	return &ScalingRules{
		SelectPolicy: vtString(SelectMax),
		Policies:     []ScalingPolicy{{Type: PolicyPercent, Value: 100, PeriodSeconds: 15}},
	}
}

func vtDefaultCPUMetric() []MetricSpec {
	return []MetricSpec{{Type: MetricResource, Resource: &ResourceMetricSource{
		Name: "cpu", Target: MetricTarget{Type: TargetUtilization, AverageUtilization: vtInt32(80)}}}}
}

// vtQuantities compares quantities by value: their string caches may differ.
var vtQuantities = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })

func TestSetDefaults(t *testing.T) {
	tests := []struct {
		name string
		in   *Spec
		want *Spec
	}{
		{name: "§9 nil spec", in: nil, want: nil},
		{name: "§9 minReplicas 1 and one cpu 80% metric; behavior stays nil",
			in:   &Spec{MaxReplicas: 5},
			want: &Spec{MinReplicas: vtInt32(1), MaxReplicas: 5, Metrics: vtDefaultCPUMetric()}},
		{name: "§9 explicit minReplicas 0 and metrics are kept",
			in: &Spec{MinReplicas: vtInt32(0), MaxReplicas: 5, Metrics: []MetricSpec{{Type: MetricExternal, External: &ExternalMetricSource{
				Metric: MetricIdentifier{Name: "q"}, Target: MetricTarget{Type: TargetValue, Value: vtQty("3")}}}}},
			want: &Spec{MinReplicas: vtInt32(0), MaxReplicas: 5, Metrics: []MetricSpec{{Type: MetricExternal, External: &ExternalMetricSource{
				Metric: MetricIdentifier{Name: "q"}, Target: MetricTarget{Type: TargetValue, Value: vtQty("3")}}}}}},
		{name: "§9 empty behavior gets both directions' defaults",
			in:   &Spec{MinReplicas: vtInt32(2), MaxReplicas: 5, Behavior: &Behavior{}},
			want: &Spec{MinReplicas: vtInt32(2), MaxReplicas: 5, Metrics: vtDefaultCPUMetric(), Behavior: &Behavior{ScaleUp: vtDefaultScaleUp(), ScaleDown: vtDefaultScaleDown()}}},
		{name: "§9 behavior merged per field; user policies replace the list; tolerance kept",
			in: &Spec{MaxReplicas: 5, Behavior: &Behavior{
				ScaleUp:   &ScalingRules{Policies: []ScalingPolicy{{Type: PolicyPercent, Value: 50, PeriodSeconds: 60}}},
				ScaleDown: &ScalingRules{StabilizationWindowSeconds: vtInt32(60), SelectPolicy: vtString(SelectMin), Tolerance: vtQty("50m")},
			}},
			want: &Spec{MinReplicas: vtInt32(1), MaxReplicas: 5, Metrics: vtDefaultCPUMetric(), Behavior: &Behavior{
				ScaleUp: &ScalingRules{StabilizationWindowSeconds: vtInt32(0), SelectPolicy: vtString(SelectMax),
					Policies: []ScalingPolicy{{Type: PolicyPercent, Value: 50, PeriodSeconds: 60}}},
				ScaleDown: &ScalingRules{StabilizationWindowSeconds: vtInt32(60), SelectPolicy: vtString(SelectMin),
					Policies: []ScalingPolicy{{Type: PolicyPercent, Value: 100, PeriodSeconds: 15}}, Tolerance: vtQty("50m")},
			}}},
		{name: "§9 a lone tolerance keeps scaleDown's window unset",
			in: &Spec{MaxReplicas: 5, Behavior: &Behavior{ScaleUp: &ScalingRules{Tolerance: vtQty("0")}}},
			want: &Spec{MinReplicas: vtInt32(1), MaxReplicas: 5, Metrics: vtDefaultCPUMetric(), Behavior: &Behavior{
				ScaleUp:   func() *ScalingRules { r := vtDefaultScaleUp(); r.Tolerance = vtQty("0"); return r }(),
				ScaleDown: vtDefaultScaleDown(),
			}}},
		{name: "§9 an empty policies list counts as absent",
			in: &Spec{MaxReplicas: 5, Behavior: &Behavior{ScaleDown: &ScalingRules{Policies: []ScalingPolicy{}}}},
			want: &Spec{MinReplicas: vtInt32(1), MaxReplicas: 5, Metrics: vtDefaultCPUMetric(), Behavior: &Behavior{
				ScaleUp: vtDefaultScaleUp(), ScaleDown: vtDefaultScaleDown(),
			}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := SetDefaults(tt.in)
			if diff := cmp.Diff(tt.want, got, vtQuantities); diff != "" {
				t.Errorf("SetDefaults() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSetDefaultsCopies checks the input is never modified and the result shares no memory
// with it: writing through every pointer of the result leaves the input as it was.
func TestSetDefaultsCopies(t *testing.T) {
	in := vtValidSpec()
	in.Behavior.ScaleDown = nil
	orig := vtValidSpec()
	orig.Behavior.ScaleDown = nil

	out := SetDefaults(in)
	if diff := cmp.Diff(orig, in, vtQuantities); diff != "" {
		t.Fatalf("SetDefaults changed its input (-before +after):\n%s", diff)
	}
	if out.Behavior.ScaleDown == nil {
		t.Fatalf("SetDefaults left scaleDown nil")
	}

	*out.MinReplicas = 99
	out.Metrics[0].Resource.Name = "x"
	*out.Metrics[0].Resource.Target.AverageUtilization = 1
	out.Metrics[1].ContainerResource.Target.AverageValue.Set(7)
	out.Metrics[2].Pods.Metric.Selector.MatchLabels["app"] = "changed"
	out.Metrics[2].Pods.Metric.Selector.MatchExpressions[0].Values[0] = "changed"
	out.Metrics[3].Object.Target.Value.Set(7)
	out.Metrics[4].External.Target.AverageValue.Set(7)
	*out.Behavior.ScaleUp.StabilizationWindowSeconds = 7
	*out.Behavior.ScaleUp.SelectPolicy = "changed"
	out.Behavior.ScaleUp.Policies[0].Value = 7
	out.Behavior.ScaleUp.Tolerance.Set(7)
	out.Metrics = append(out.Metrics[:0], MetricSpec{})
	if diff := cmp.Diff(orig, in, vtQuantities); diff != "" {
		t.Errorf("writing to the result changed the input (-before +after):\n%s", diff)
	}
}
