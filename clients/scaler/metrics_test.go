package scaler

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	cmapi "k8s.io/metrics/pkg/apis/custom_metrics/v1beta2"
	emapi "k8s.io/metrics/pkg/apis/external_metrics/v1beta1"
	metricsapi "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	metricsfake "k8s.io/metrics/pkg/client/clientset/versioned/fake"
	customfake "k8s.io/metrics/pkg/client/custom_metrics/fake"
	externalfake "k8s.io/metrics/pkg/client/external_metrics/fake"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

func podMetrics(name string, containers map[string]corev1.ResourceList) metricsapi.PodMetrics {
	pm := metricsapi.PodMetrics{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Labels: map[string]string{"app": "web"}},
		Timestamp:  metav1.NewTime(t0),
		Window:     metav1.Duration{Duration: 15 * time.Second},
	}
	for _, c := range []string{"app", "sidecar"} {
		if u, ok := containers[c]; ok {
			pm.Containers = append(pm.Containers, metricsapi.ContainerMetrics{Name: c, Usage: u})
		}
	}
	return pm
}

func TestResourceObservation(t *testing.T) {
	cpu := func(s string) corev1.ResourceList { return corev1.ResourceList{corev1.ResourceCPU: q(s)} }
	items := []metricsapi.PodMetrics{
		podMetrics("both", map[string]corev1.ResourceList{"app": cpu("300m"), "sidecar": cpu("50m")}),
		podMetrics("sidecar-without-cpu", map[string]corev1.ResourceList{"app": cpu("300m"), "sidecar": {corev1.ResourceMemory: q("1Mi")}}),
		podMetrics("no-containers", nil),
		podMetrics("app-only", map[string]corev1.ResourceList{"app": cpu("1")}),
	}
	mc := metricsfake.NewSimpleClientset()
	mc.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, &metricsapi.PodMetricsList{Items: items}, nil
	})
	k := &Kube{ResourceMetrics: mc.MetricsV1beta1()}
	sample := func(pod, v string) *pb.PodMetricValue {
		return &pb.PodMetricValue{Pod: pod, Value: v, Timestamp: timestamppb.New(t0), Window: durationpb.New(15 * time.Second)}
	}
	for _, tc := range []struct {
		name      string
		container string
		want      []*pb.PodMetricValue
	}{
		// Resource: the sum over containers; a pod with any container missing cpu, or with no
		// containers, is skipped (upstream's getPodMetrics).
		{"pod sum", "", []*pb.PodMetricValue{sample("both", "350m"), sample("app-only", "1")}},
		// ContainerResource: that container's usage; a pod without it, or without the
		// resource in it, is skipped.
		{"container", "sidecar", []*pb.PodMetricValue{sample("both", "50m")}},
		{"app container", "app", []*pb.PodMetricValue{sample("both", "300m"), sample("sidecar-without-cpu", "300m"), sample("app-only", "1")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := k.resourceObservation(t.Context(), "shop", mustSelector("app=web"), corev1.ResourceCPU, tc.container)
			if diff := cmp.Diff(got, &pb.MetricObservation{PodValues: tc.want}, protocmp.Transform()); diff != "" {
				t.Errorf("observation (-got +want):\n%s", diff)
			}
		})
	}
}

func TestObservationErrors(t *testing.T) {
	failing := func(string) func(k8stesting.Action) (bool, runtime.Object, error) {
		return func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, errors.New("boom") }
	}
	empty := metricsfake.NewSimpleClientset()
	empty.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, &metricsapi.PodMetricsList{}, nil
	})
	broken := metricsfake.NewSimpleClientset()
	broken.PrependReactor("list", "pods", failing("resource"))
	custom := &customfake.FakeCustomMetricsClient{}
	custom.AddReactor("get", "*", failing("custom"))
	external := &externalfake.FakeExternalMetricsClient{}
	external.AddReactor("list", "*", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, &emapi.ExternalMetricValueList{}, nil
	})
	util := int32(50)
	for _, tc := range []struct {
		name string
		kube *Kube
		spec autoscalingv2.MetricSpec
		want string
	}{
		{"resource API error", &Kube{ResourceMetrics: broken.MetricsV1beta1()}, autoscalingv2.MetricSpec{Type: "Resource", Resource: &autoscalingv2.ResourceMetricSource{Name: "cpu", Target: autoscalingv2.MetricTarget{Type: "Utilization", AverageUtilization: &util}}},
			"unable to fetch metrics from resource metrics API: boom"},
		{"resource empty", &Kube{ResourceMetrics: empty.MetricsV1beta1()}, autoscalingv2.MetricSpec{Type: "Resource", Resource: &autoscalingv2.ResourceMetricSource{Name: "cpu"}},
			"no metrics returned from resource metrics API"},
		{"pods API error", &Kube{CustomMetrics: custom}, autoscalingv2.MetricSpec{Type: "Pods", Pods: &autoscalingv2.PodsMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: "rps"}}},
			"unable to fetch metrics from custom metrics API: boom"},
		{"object API error", &Kube{CustomMetrics: custom}, autoscalingv2.MetricSpec{Type: "Object", Object: &autoscalingv2.ObjectMetricSource{DescribedObject: autoscalingv2.CrossVersionObjectReference{APIVersion: "v1", Kind: "Service", Name: "s"}, Metric: autoscalingv2.MetricIdentifier{Name: "rps"}}},
			"unable to fetch metrics from custom metrics API: boom"},
		{"external empty", &Kube{ExternalMetrics: external}, autoscalingv2.MetricSpec{Type: "External", External: &autoscalingv2.ExternalMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: "queue"}}},
			"no metrics returned from external metrics API"},
		{"bad metric selector", &Kube{ExternalMetrics: external}, autoscalingv2.MetricSpec{Type: "External", External: &autoscalingv2.ExternalMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: "queue",
			Selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Bogus"}}}}}},
			`unable to parse the metric selector: "Bogus" is not a valid label selector operator`},
		{"no client", &Kube{}, autoscalingv2.MetricSpec{Type: "External", External: &autoscalingv2.ExternalMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: "queue"}}},
			"unable to fetch metrics from external metrics API: no external metrics client"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.kube.observe(t.Context(), "shop", mustSelector("app=web"), &tc.spec)
			if diff := cmp.Diff(got, &pb.MetricObservation{Error: tc.want}, protocmp.Transform()); diff != "" {
				t.Errorf("observation (-got +want):\n%s", diff)
			}
		})
	}
}

func TestCustomAndExternalObservations(t *testing.T) {
	custom := &customfake.FakeCustomMetricsClient{}
	custom.AddReactor("get", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		win := int64(30)
		return true, &cmapi.MetricValueList{Items: []cmapi.MetricValue{
			{DescribedObject: corev1.ObjectReference{Kind: "Pod", Name: "p1"}, Timestamp: metav1.NewTime(t0), WindowSeconds: &win, Value: q("12")},
			{DescribedObject: corev1.ObjectReference{Kind: "Pod", Name: "p2"}, Timestamp: metav1.NewTime(t0), Value: q("500m")},
		}}, nil
	})
	custom.AddReactor("get", "services", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, &cmapi.MetricValueList{Items: []cmapi.MetricValue{{Value: q("42")}}}, nil
	})
	external := &externalfake.FakeExternalMetricsClient{}
	external.AddReactor("list", "queue", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, &emapi.ExternalMetricValueList{Items: []emapi.ExternalMetricValue{{Value: q("1500")}, {Value: q("1")}}}, nil
	})
	k := &Kube{CustomMetrics: custom, ExternalMetrics: external}
	sel := mustSelector("app=web")

	pods := k.observe(t.Context(), "shop", sel, &autoscalingv2.MetricSpec{Type: "Pods", Pods: &autoscalingv2.PodsMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: "rps"}}})
	want := &pb.MetricObservation{PodValues: []*pb.PodMetricValue{
		{Pod: "p1", Value: "12", Timestamp: timestamppb.New(t0), Window: durationpb.New(30 * time.Second)},
		{Pod: "p2", Value: "500m", Timestamp: timestamppb.New(t0)}, // no window: the service's 60s default
	}}
	if diff := cmp.Diff(pods, want, protocmp.Transform()); diff != "" {
		t.Errorf("pods (-got +want):\n%s", diff)
	}
	obj := k.observe(t.Context(), "shop", sel, &autoscalingv2.MetricSpec{Type: "Object", Object: &autoscalingv2.ObjectMetricSource{
		DescribedObject: autoscalingv2.CrossVersionObjectReference{APIVersion: "v1", Kind: "Service", Name: "front"}, Metric: autoscalingv2.MetricIdentifier{Name: "rps"}}})
	if diff := cmp.Diff(obj, &pb.MetricObservation{Value: ptr("42")}, protocmp.Transform()); diff != "" {
		t.Errorf("object (-got +want):\n%s", diff)
	}
	ext := k.observe(t.Context(), "shop", sel, &autoscalingv2.MetricSpec{Type: "External", External: &autoscalingv2.ExternalMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: "queue"}}})
	if diff := cmp.Diff(ext, &pb.MetricObservation{Values: []string{"1500", "1"}}, protocmp.Transform()); diff != "" {
		t.Errorf("external (-got +want):\n%s", diff)
	}
}
