package hpafile

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

// TestBetaConversion: autoscaling/v2beta1 and v2beta2 read as the API server converted them
// (k8s.io/kubernetes pkg/apis/autoscaling/v2beta1 and v2beta2 conversion.go), every field of
// the API reference's lists, each with the warning of its version.
func TestBetaConversion(t *testing.T) {
	ref := &pb.CrossVersionObjectReference{ApiVersion: "apps/v1", Kind: "Deployment", Name: "web"}
	svc := &pb.CrossVersionObjectReference{ApiVersion: "v1", Kind: "Service", Name: "front"}
	sel := &pb.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	tests := []struct {
		name, yaml, wantWarning string
		want                    *pb.HorizontalPodAutoscalerSpec
		wantAnnotations         map[string]string
	}{
		{
			name: "v2beta1 every metric source",
			yaml: `apiVersion: autoscaling/v2beta1
kind: HorizontalPodAutoscaler
metadata:
  name: web
  annotations:
    team: shop
    autoscaling.alpha.kubernetes.io/behavior: '{"ScaleUp":{"StabilizationWindowSeconds":0,"SelectPolicy":"Max","Policies":[{"Type":"Percent","Value":100,"PeriodSeconds":15}]}}'
    autoscaling.alpha.kubernetes.io/conditions: '[]'
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 2
  maxReplicas: 10
  metrics:
  - type: Resource
    resource: {name: cpu, targetAverageUtilization: 60}
  - type: Resource
    resource: {name: memory, targetAverageValue: 500Mi}
  - type: ContainerResource
    containerResource: {name: cpu, container: app, targetAverageUtilization: 70}
  - type: Pods
    pods: {metricName: packets, targetAverageValue: 1k, selector: {matchLabels: {app: web}}}
  - type: Object
    object: {target: {apiVersion: v1, kind: Service, name: front}, metricName: rps, targetValue: 100}
  - type: Object
    object: {target: {apiVersion: v1, kind: Service, name: front}, metricName: rps, targetValue: 0, averageValue: 10, selector: {matchLabels: {app: web}}}
  - type: External
    external: {metricName: queue, metricSelector: {matchLabels: {app: web}}, targetValue: 30}
  - type: External
    external: {metricName: queue, targetAverageValue: 5}
`,
			wantWarning: `document 0 (HorizontalPodAutoscaler default/web): apiVersion: autoscaling/v2beta1 HorizontalPodAutoscaler is no longer served since Kubernetes 1.25; read as autoscaling/v2 (hpactl convert -f prints it)`,
			want: &pb.HorizontalPodAutoscalerSpec{ScaleTargetRef: ref, MinReplicas: ptr[int32](2), MaxReplicas: 10, Metrics: []*pb.MetricSpec{
				{Type: "Resource", Resource: &pb.ResourceMetricSource{Name: "cpu", Target: &pb.MetricTarget{Type: "Utilization", AverageUtilization: ptr[int32](60)}}},
				{Type: "Resource", Resource: &pb.ResourceMetricSource{Name: "memory", Target: &pb.MetricTarget{Type: "AverageValue", AverageValue: ptr("500Mi")}}},
				{Type: "ContainerResource", ContainerResource: &pb.ContainerResourceMetricSource{Name: "cpu", Container: "app", Target: &pb.MetricTarget{Type: "Utilization", AverageUtilization: ptr[int32](70)}}},
				{Type: "Pods", Pods: &pb.PodsMetricSource{Metric: &pb.MetricIdentifier{Name: "packets", Selector: sel}, Target: &pb.MetricTarget{Type: "AverageValue", AverageValue: ptr("1k")}}},
				{Type: "Object", Object: &pb.ObjectMetricSource{DescribedObject: svc, Metric: &pb.MetricIdentifier{Name: "rps"}, Target: &pb.MetricTarget{Type: "Value", Value: ptr("100")}}},
				{Type: "Object", Object: &pb.ObjectMetricSource{DescribedObject: svc, Metric: &pb.MetricIdentifier{Name: "rps", Selector: sel}, Target: &pb.MetricTarget{Type: "AverageValue", Value: ptr("0"), AverageValue: ptr("10")}}},
				{Type: "External", External: &pb.ExternalMetricSource{Metric: &pb.MetricIdentifier{Name: "queue", Selector: sel}, Target: &pb.MetricTarget{Type: "Value", Value: ptr("30")}}},
				{Type: "External", External: &pb.ExternalMetricSource{Metric: &pb.MetricIdentifier{Name: "queue"}, Target: &pb.MetricTarget{Type: "AverageValue", AverageValue: ptr("5")}}},
			}, Behavior: &pb.HorizontalPodAutoscalerBehavior{ScaleUp: &pb.HPAScalingRules{
				StabilizationWindowSeconds: ptr[int32](0), SelectPolicy: ptr("Max"),
				Policies: []*pb.HPAScalingPolicy{{Type: "Percent", Value: 100, PeriodSeconds: 15}},
			}}},
			wantAnnotations: map[string]string{"team": "shop"},
		},
		{
			name: "v2beta2 every metric source and behavior",
			yaml: `apiVersion: autoscaling/v2beta2
kind: HorizontalPodAutoscaler
metadata:
  name: web
  namespace: shop
  annotations: {autoscaling.alpha.kubernetes.io/metrics: '[]', team: shop}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 10
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 60}}
  - type: ContainerResource
    containerResource: {name: memory, container: app, target: {type: AverageValue, averageValue: 1Gi}}
  - type: Pods
    pods: {metric: {name: packets, selector: {matchLabels: {app: web}}}, target: {type: AverageValue, averageValue: 1k}}
  - type: Object
    object: {describedObject: {apiVersion: v1, kind: Service, name: front}, metric: {name: rps}, target: {type: Value, value: 100}}
  - type: External
    external: {metric: {name: queue}, target: {type: AverageValue, averageValue: 30}}
  behavior:
    scaleDown:
      stabilizationWindowSeconds: 300
      selectPolicy: Min
      policies: [{type: Pods, value: 1, periodSeconds: 60}, {type: Percent, value: 10, periodSeconds: 60}]
    scaleUp:
      selectPolicy: Disabled
`,
			wantWarning: `document 0 (HorizontalPodAutoscaler shop/web): apiVersion: autoscaling/v2beta2 HorizontalPodAutoscaler is no longer served since Kubernetes 1.26; read as autoscaling/v2 (hpactl convert -f prints it)`,
			want: &pb.HorizontalPodAutoscalerSpec{ScaleTargetRef: ref, MaxReplicas: 10, Metrics: []*pb.MetricSpec{
				{Type: "Resource", Resource: &pb.ResourceMetricSource{Name: "cpu", Target: &pb.MetricTarget{Type: "Utilization", AverageUtilization: ptr[int32](60)}}},
				{Type: "ContainerResource", ContainerResource: &pb.ContainerResourceMetricSource{Name: "memory", Container: "app", Target: &pb.MetricTarget{Type: "AverageValue", AverageValue: ptr("1Gi")}}},
				{Type: "Pods", Pods: &pb.PodsMetricSource{Metric: &pb.MetricIdentifier{Name: "packets", Selector: sel}, Target: &pb.MetricTarget{Type: "AverageValue", AverageValue: ptr("1k")}}},
				{Type: "Object", Object: &pb.ObjectMetricSource{DescribedObject: svc, Metric: &pb.MetricIdentifier{Name: "rps"}, Target: &pb.MetricTarget{Type: "Value", Value: ptr("100")}}},
				{Type: "External", External: &pb.ExternalMetricSource{Metric: &pb.MetricIdentifier{Name: "queue"}, Target: &pb.MetricTarget{Type: "AverageValue", AverageValue: ptr("30")}}},
			}, Behavior: &pb.HorizontalPodAutoscalerBehavior{
				ScaleDown: &pb.HPAScalingRules{StabilizationWindowSeconds: ptr[int32](300), SelectPolicy: ptr("Min"),
					Policies: []*pb.HPAScalingPolicy{{Type: "Pods", Value: 1, PeriodSeconds: 60}, {Type: "Percent", Value: 10, PeriodSeconds: 60}}},
				ScaleUp: &pb.HPAScalingRules{SelectPolicy: ptr("Disabled")},
			}},
			wantAnnotations: map[string]string{"team": "shop"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hpas, err := Parse("hpa.yaml", []byte(tt.yaml))
			if err != nil {
				t.Fatal(err)
			}
			if len(hpas) != 1 {
				t.Fatalf("%d autoscalers, want 1", len(hpas))
			}
			h := hpas[0]
			if h.Object.APIVersion != "autoscaling/v2" {
				t.Errorf("object %s, want autoscaling/v2", h.Object.APIVersion)
			}
			if diff := cmp.Diff(h.Spec, tt.want, protocmp.Transform()); diff != "" {
				t.Errorf("spec (-got +want):\n%s", diff)
			}
			if diff := cmp.Diff(h.Object.Annotations, tt.wantAnnotations); diff != "" {
				t.Errorf("annotations (-got +want):\n%s", diff)
			}
			var warnings []string
			for _, w := range h.Warnings {
				warnings = append(warnings, w.Where()+": "+w.Detail())
			}
			if diff := cmp.Diff(warnings, []string{tt.wantWarning}); diff != "" {
				t.Errorf("warnings (-got +want):\n%s", diff)
			}
		})
	}
}

// TestBetaFieldsOfAnotherVersion: a document declaring one version but written with another's
// fields is refused at each field's path; a repeated key too.
func TestBetaFieldsOfAnotherVersion(t *testing.T) {
	const file = `apiVersion: autoscaling/v2beta2
kind: HorizontalPodAutoscaler
metadata: {name: a}
spec:
  maxReplicas: 3
  metrics:
  - type: Resource
    resource: {name: cpu, targetAverageUtilization: 60}
---
apiVersion: autoscaling/v2beta1
kind: HorizontalPodAutoscaler
metadata: {name: b}
spec:
  maxReplicas: 3
  behavior: {}
  metrics:
  - type: Pods
    pods: {metric: {name: packets}, target: {type: AverageValue, averageValue: 1}}
---
apiVersion: autoscaling/v2beta1
kind: HorizontalPodAutoscaler
metadata: {name: c}
spec:
  maxReplicas: 3
  maxReplicas: 4
  minReplicas: "two"
`
	hpas, err := Parse("hpa.yaml", []byte(file))
	want := []string{
		`document 0 (HorizontalPodAutoscaler a): spec.metrics[0].resource.targetAverageUtilization: unknown field`,
		`document 1 (HorizontalPodAutoscaler b): spec.behavior: unknown field`,
		`document 1 (HorizontalPodAutoscaler b): spec.metrics[0].pods.metric: unknown field`,
		`document 1 (HorizontalPodAutoscaler b): spec.metrics[0].pods.target: unknown field`,
		`document 2 (HorizontalPodAutoscaler c): spec.maxReplicas: duplicate field (line 6; first at line 5)`,
		`document 2 (HorizontalPodAutoscaler c): spec.minReplicas: Invalid value: got a string, want int32`,
	}
	if diff := cmp.Diff(problemLines(t, err), want); diff != "" {
		t.Errorf("problems (-got +want):\n%s", diff)
	}
	if len(hpas) != 0 {
		t.Errorf("%d autoscalers read, want none", len(hpas))
	}
}
