package scaler

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/protobuf/types/known/timestamppb"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

// inTreeStatus is the status the in-tree controller writes after deciding desired from 2
// replicas at 100% CPU (500m of 500m), neither stabilized nor limited.
func inTreeStatus(gen int64, current, desired int32, util int32, avg string) autoscalingv2.HorizontalPodAutoscalerStatus {
	c := func(typ autoscalingv2.HorizontalPodAutoscalerConditionType, reason string) autoscalingv2.HorizontalPodAutoscalerCondition {
		return autoscalingv2.HorizontalPodAutoscalerCondition{Type: typ, Status: corev1.ConditionTrue, Reason: reason}
	}
	return autoscalingv2.HorizontalPodAutoscalerStatus{
		ObservedGeneration: ptr(gen),
		CurrentReplicas:    current,
		DesiredReplicas:    desired,
		CurrentMetrics: []autoscalingv2.MetricStatus{{
			Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricStatus{Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{
				AverageUtilization: ptr(util), AverageValue: ptr(q(avg)),
			}},
		}},
		Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{
			c(autoscalingv2.AbleToScale, "ReadyForNewScale"),
			c(autoscalingv2.ScalingActive, "ValidMetricFound"),
			c(autoscalingv2.ScalingLimited, "DesiredWithinRange"),
		},
	}
}

// writeEntry is a managedFields entry of manager's write (subresource "" or "status") at t0+sec.
func writeEntry(manager, subresource string, sec int) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, Subresource: subresource, Time: ptr(metav1.NewTime(t0.Add(time.Duration(sec) * time.Second)))}
}

func TestUsesCPU(t *testing.T) {
	cpu := autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU}}
	mem := autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceMemory}}
	ccpu := autoscalingv2.MetricSpec{Type: autoscalingv2.ContainerResourceMetricSourceType, ContainerResource: &autoscalingv2.ContainerResourceMetricSource{Name: corev1.ResourceCPU}}
	pods := autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{}}
	for _, tc := range []struct {
		name    string
		metrics []autoscalingv2.MetricSpec
		want    bool
	}{
		{"none: the default CPU metric", nil, true},
		{"cpu", []autoscalingv2.MetricSpec{mem, cpu}, true},
		{"container cpu", []autoscalingv2.MetricSpec{ccpu}, true},
		{"memory and pods", []autoscalingv2.MetricSpec{mem, pods}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := usesCPU(tc.metrics); got != tc.want {
				t.Errorf("usesCPU = %v, want %v", got, tc.want)
			}
		})
	}
}

// objectValueSince gives in's HPA an Object metric with a Value target and an in-tree status
// written sec seconds after t0 (the spec an hour before).
func objectValueSince(in *shadowInputs, sec int) {
	in.hpa.Spec.Metrics = []autoscalingv2.MetricSpec{{Type: autoscalingv2.ObjectMetricSourceType,
		Object: &autoscalingv2.ObjectMetricSource{Target: autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType}}}}
	in.hpa.Status.ObservedGeneration = nil
	in.hpa.ManagedFields = []metav1.ManagedFieldsEntry{writeEntry("kubectl", "", -3600), writeEntry("kube-controller-manager", "status", sec)}
}

// valueTargetStatus gives in's HPA one Object metric with a Value target of 30 and an in-tree
// status at current replicas deciding desired with the metric at value (ScalingLimited False).
func valueTargetStatus(in *shadowInputs, current, desired int32, value string) {
	in.hpa.Spec.Metrics = []autoscalingv2.MetricSpec{{Type: autoscalingv2.ObjectMetricSourceType,
		Object: &autoscalingv2.ObjectMetricSource{Target: autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: ptr(resource.MustParse("30"))}}}}
	in.hpa.Status.CurrentReplicas, in.hpa.Status.DesiredReplicas = current, desired
	in.hpa.Status.CurrentMetrics = []autoscalingv2.MetricStatus{{Type: autoscalingv2.ObjectMetricSourceType,
		Object: &autoscalingv2.ObjectMetricStatus{Current: autoscalingv2.MetricValueStatus{Value: ptr(resource.MustParse(value))}}}}
	in.scale.Spec.Replicas = current
	in.hpa.Status.Conditions[2].Status = corev1.ConditionFalse // DesiredWithinRange, as upstream writes it
}

func TestCompareShadow(t *testing.T) {
	now := t0
	old := timestamppb.New(now.Add(-time.Hour))
	pod := func(name string, start, ready *timestamppb.Timestamp) *pb.PodState {
		return &pb.PodState{Name: name, Phase: "Running", Ready: ptr(true), StartTime: start, ReadyTransitionTime: ready}
	}
	resp := func(desired int32, util int32, avg string, reasons ...string) *pb.RecommendResponse {
		r := &pb.RecommendResponse{
			CurrentReplicas: 2, DesiredReplicas: desired, Scale: desired != 2,
			Explanation: &pb.Explanation{WinningMetric: 0},
			CurrentMetrics: []*pb.MetricStatus{{
				Type: "Resource",
				Resource: &pb.ResourceMetricStatus{Name: "cpu", Current: &pb.MetricValueStatus{
					AverageUtilization: ptr(util), AverageValue: ptr(avg),
				}},
			}},
		}
		for _, reason := range reasons {
			r.Conditions = append(r.Conditions, &pb.Condition{Type: "AbleToScale", Status: "True", Reason: reason})
		}
		return r
	}
	base := func() shadowInputs {
		h := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Generation: 3}}
		h.Status = inTreeStatus(3, 2, 4, 100, "500m")
		return shadowInputs{
			hpa:   h,
			scale: &autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: 2}},
			req:   &pb.RecommendRequest{Pods: []*pb.PodState{pod("a", old, old), pod("b", old, old)}},
			resp:  resp(4, 100, "500m"), now: now, settle: 30 * time.Second,
			cpuInit: time.Minute, readinessDelay: 10 * time.Second,
		}
	}
	for _, tc := range []struct {
		name    string
		mutate  func(*shadowInputs)
		want    string
		wantWhy string
	}{
		{"agree", func(*shadowInputs) {}, shadowAgree, ""},
		{"agree within rounding", func(in *shadowInputs) { in.resp = resp(4, 100, "500.4m") }, shadowAgree, ""},
		{"disagree", func(in *shadowInputs) { in.resp = resp(5, 100, "500m") }, shadowDisagree, "the service decided 5 replicas, the in-tree controller 4 (current 2)"},
		{"spec not yet observed", func(in *shadowInputs) { in.hpa.Generation = 4 }, shadowNotComparable, "observedGeneration"},
		{"never written", func(in *shadowInputs) { in.hpa.Status = autoscalingv2.HorizontalPodAutoscalerStatus{} }, shadowNotComparable, "no status write of the in-tree controller"},
		{"no observedGeneration, status written after the spec", func(in *shadowInputs) {
			in.hpa.Status.ObservedGeneration = nil
			in.hpa.ManagedFields = []metav1.ManagedFieldsEntry{writeEntry("kubectl", "", 0), writeEntry("kube-controller-manager", "status", 1)}
		}, shadowAgree, ""},
		{"no observedGeneration, spec changed after the status", func(in *shadowInputs) {
			in.hpa.Status.ObservedGeneration = nil
			in.hpa.ManagedFields = []metav1.ManagedFieldsEntry{writeEntry("kubectl", "", 2), writeEntry("kube-controller-manager", "status", 1)}
		}, shadowNotComparable, "is not later than the object's last change"},
		{"no observedGeneration, same second", func(in *shadowInputs) {
			in.hpa.Status.ObservedGeneration = nil
			in.hpa.ManagedFields = []metav1.ManagedFieldsEntry{writeEntry("kubectl", "", 1), writeEntry("kube-controller-manager", "status", 1)}
		}, shadowNotComparable, "is not later than the object's last change"},
		{"replicas changed since", func(in *shadowInputs) { in.scale.Spec.Replicas = 4 }, shadowNotComparable, "at 2 current replicas, the target now has 4"},
		{"scaled within the settle time", func(in *shadowInputs) {
			in.hpa.Status.LastScaleTime = ptr(metav1.NewTime(now.Add(-10 * time.Second)))
		}, shadowNotComparable, "was scaled"},
		{"scaled long ago", func(in *shadowInputs) {
			in.hpa.Status.LastScaleTime = ptr(metav1.NewTime(now.Add(-time.Minute)))
		}, shadowAgree, ""},
		{"in-tree stabilized", func(in *shadowInputs) {
			in.hpa.Status.Conditions[0].Reason = "ScaleDownStabilized"
		}, shadowNotComparable, "in-tree controller's count was stabilized"},
		{"in-tree rate-limited by a policy", func(in *shadowInputs) {
			in.hpa.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{}
			in.hpa.Status.Conditions[2].Reason = "ScaleUpLimit"
		}, shadowNotComparable, "rate-limited by a scaling policy"},
		{"legacy scale-up limit is history-free", func(in *shadowInputs) {
			in.hpa.Status.Conditions[2].Reason = "ScaleUpLimit"
		}, shadowAgree, ""},
		{"service stabilized", func(in *shadowInputs) { in.resp = resp(4, 100, "500m", "ScaleUpStabilized") }, shadowNotComparable, "service's count was stabilized"},
		{"in-tree metrics failed", func(in *shadowInputs) {
			in.hpa.Status.Conditions[1].Status, in.hpa.Status.Conditions[1].Reason = corev1.ConditionFalse, "FailedGetResourceMetric"
		}, shadowNotComparable, "ScalingActive is False"},
		{"in-tree scale update failed", func(in *shadowInputs) {
			in.hpa.Status.Conditions[0].Status, in.hpa.Status.Conditions[0].Reason = corev1.ConditionFalse, "FailedUpdateScale"
		}, shadowNotComparable, "AbleToScale is False (FailedUpdateScale)"},
		{"service's metrics failed", func(in *shadowInputs) {
			in.resp = resp(2, 100, "500m")
			in.resp.Explanation.WinningMetric = -1
			in.resp.Conditions = []*pb.Condition{{Type: "ScalingActive", Status: "False", Reason: "FailedGetResourceMetric"}}
		}, shadowNotComparable, "no metric"},
		{"pod not started", func(in *shadowInputs) {
			in.req.Pods = append(in.req.Pods, &pb.PodState{Name: "c", Phase: "Pending"})
		}, shadowNotComparable, "pod c has not started (Pending)"},
		{"pod became ready within the settle time", func(in *shadowInputs) {
			in.req.Pods[1].ReadyTransitionTime = timestamppb.New(now.Add(-5 * time.Second))
		}, shadowNotComparable, "pod b changed readiness"},
		{"pod left the CPU initialization period within the settle time", func(in *shadowInputs) {
			in.req.Pods[0].StartTime = timestamppb.New(now.Add(-time.Minute - 5*time.Second))
		}, shadowNotComparable, "pod a left the CPU initialization period"},
		{"Value target: a pod became ready after the in-tree controller's last status write", func(in *shadowInputs) {
			objectValueSince(in, -120)
			in.req.Pods[1].ReadyTransitionTime = timestamppb.New(now.Add(-100 * time.Second))
		}, shadowNotComparable, "pod b changed readiness at"},
		{"Value target: a pod became ready in the second of that write", func(in *shadowInputs) {
			objectValueSince(in, -120)
			in.req.Pods[1].ReadyTransitionTime = timestamppb.New(now.Add(-120 * time.Second))
		}, shadowNotComparable, "not before the in-tree controller's last status write"},
		{"Value target: the pods settled before that write", func(in *shadowInputs) {
			objectValueSince(in, -120)
			in.req.Pods[1].ReadyTransitionTime = timestamppb.New(now.Add(-121 * time.Second))
		}, shadowAgree, ""},
		{"no Value target: a pod became ready after the write, beyond the settle time", func(in *shadowInputs) {
			objectValueSince(in, -120)
			in.hpa.Spec.Metrics[0].Object.Target.Type = autoscalingv2.AverageValueMetricType
			in.req.Pods[1].ReadyTransitionTime = timestamppb.New(now.Add(-100 * time.Second))
		}, shadowAgree, ""},
		{"Value target: the in-tree count is not its ratio times its replicas", func(in *shadowInputs) {
			valueTargetStatus(in, 4, 4, "60")
		}, shadowNotComparable, "the in-tree controller's count 4 is not its ratio 2.000 times its 4 replicas"},
		{"Value target: the in-tree count is its ratio times its replicas", func(in *shadowInputs) {
			valueTargetStatus(in, 4, 8, "60")
			in.resp = resp(8, 100, "500m")
		}, shadowNotComparable, "the metrics differ"},
		{"a pod's next transition is still ahead", func(in *shadowInputs) {
			in.req.Pods[0].StartTime = timestamppb.New(now.Add(-40 * time.Second)) // ready since then; CPU init ends in 20s
			in.req.Pods[0].ReadyTransitionTime = in.req.Pods[0].StartTime
			in.readinessDelay = 0
		}, shadowAgree, ""},
		{"metrics differ", func(in *shadowInputs) { in.resp = resp(4, 110, "550m") }, shadowNotComparable, "in-tree averageValue 500m averageUtilization 100%, service averageValue 550m averageUtilization 110%"},
		{"metric count differs", func(in *shadowInputs) { in.hpa.Status.CurrentMetrics = nil }, shadowNotComparable, "0 metrics in the in-tree status, 1 in the service's"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := base()
			tc.mutate(&in)
			got, why := compareShadow(in)
			if got != tc.want || !strings.Contains(why, tc.wantWhy) || (tc.wantWhy == "" && why != "") {
				t.Errorf("compareShadow = %s (%q), want %s containing %q", got, why, tc.want, tc.wantWhy)
			}
		})
	}
}

// TestShadowComparisonWithService: an HPA whose status kube-controller-manager writes is
// compared with the real in-process service's dry-run decision: agreement, then a disagreement
// (a log line, a Warning event with both counts and the explanation, the gauge at the
// difference), then inputs that changed (not comparable, the gauge kept).
func TestShadowComparisonWithService(t *testing.T) {
	w := newWorld(t, func(c *Config) { c.ShadowSettle = 30 * time.Second })
	h := inTreeHPA(t, "web-hpa", "kube-controller-manager")
	h.Generation = 1
	h.Status = inTreeStatus(1, 2, 4, 100, "500m") // 2 pods at 100% of a 50% target: 4
	cs := fake.NewClientset(h)
	w.c.kube.Client = cs
	w.s.SetAutoscalers(nil)
	w.s.setSource(SourceHPA, []*Autoscaler{hpaAutoscaler(h)})
	withHPAs(w, h)
	count := func(result string) float64 {
		return testutil.ToFloat64(w.s.tel.shadowComparisons.WithLabelValues(result))
	}
	gauge := func() float64 {
		return testutil.ToFloat64(w.s.tel.shadowDisagreement.WithLabelValues("shop", "web-hpa"))
	}

	if err := w.sync(t); err != nil {
		t.Fatal(err)
	}
	if count(shadowAgree) != 1 || gauge() != 0 {
		t.Fatalf("agree %v, gauge %v; want 1 and 0", count(shadowAgree), gauge())
	}
	w.c.events()

	wrong := h.DeepCopy()
	wrong.Status.DesiredReplicas = 3
	w.s.setSource(SourceHPA, []*Autoscaler{hpaAutoscaler(wrong)})
	if err := w.sync(t); err != nil {
		t.Fatal(err)
	}
	if count(shadowDisagree) != 1 || gauge() != 1 {
		t.Errorf("disagree %v, gauge %v; want 1 and 1 (4 - 3)", count(shadowDisagree), gauge())
	}
	ev := w.c.events()
	if len(ev) != 1 || !strings.Contains(ev[0], "Warning ShadowDisagreement the hpa-recommender service decides 4 replicas, the in-tree controller 3 (current 2, same inputs); the service's explanation: ") {
		t.Errorf("events = %q, want one ShadowDisagreement naming 4 and 3", ev)
	}

	w.c.setCPU("web", 2, "400m") // the in-tree controller has not seen it yet
	if err := w.sync(t); err != nil {
		t.Fatal(err)
	}
	if count(shadowNotComparable) != 1 || count(shadowAgree) != 1 || gauge() != 1 {
		t.Errorf("not comparable %v, agree %v, gauge %v; want 1, 1, 1 (unchanged)", count(shadowNotComparable), count(shadowAgree), gauge())
	}
	if ev := w.c.events(); len(ev) != 0 {
		t.Errorf("events = %q, want none", ev)
	}

	// With the shadow annotation nothing is written, the disagreement event included.
	w.c.setCPU("web", 2, "500m")
	quiet := wrong.DeepCopy()
	quiet.Annotations = map[string]string{ModeAnnotation: ModeShadow}
	w.s.setSource(SourceHPA, []*Autoscaler{hpaAutoscaler(quiet)})
	if err := w.sync(t); err != nil {
		t.Fatal(err)
	}
	if count(shadowDisagree) != 2 {
		t.Errorf("disagree %v, want 2", count(shadowDisagree))
	}
	if ev := w.c.events(); len(ev) != 0 {
		t.Errorf("events = %q, want none under the shadow annotation", ev)
	}
}
