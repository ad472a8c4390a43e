package hpafile

import (
	"errors"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

func ptr[T any](v T) *T { return &v }

// problemLines is each problem as its Where and Detail, without the file.
func problemLines(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("error %v is not Problems", err)
	}
	var out []string
	for _, p := range ps {
		if p.Source != "hpa.yaml" {
			t.Errorf("problem %v: source %q, want hpa.yaml", p, p.Source)
		}
		out = append(out, p.Where()+": "+p.Detail())
	}
	return out
}

// TestEveryProblemAtOnce: every mistake of a file is reported, each with its document, object
// and field path, and the good autoscalers of the file are still read.
func TestEveryProblemAtOnce(t *testing.T) {
	const file = `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: shop}
spec:
  maxReplica: 3
  minReplicas: 1
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilisation: 60}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, bogus: true}
---
# only a comment
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: good}
spec: {maxReplicas: 4}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: twice}
spec:
  maxReplicas: 4
  maxReplicas: 5
  MinReplicas: 2
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {namespace: shop}
spec: {maxReplicas: "many"}
---
apiVersion: autoscaling/v2alpha1
kind: HorizontalPodAutoscaler
metadata: {name: old}
---
apiVersion: v1
kind: List
items:
- apiVersion: autoscaling/v2
  kind: HorizontalPodAutoscaler
  metadata: {name: in-list}
  spec: {maxReplicas: 2}
- apiVersion: autoscaling/v2
  kind: HorizontalPodAutoscaler
  metadata: {name: bad-in-list}
  spec: {maxReplicas: 2, minReplicaz: 1}
`
	hpas, err := Parse("hpa.yaml", []byte(file))
	want := []string{
		`document 0 (HorizontalPodAutoscaler shop/web): spec.maxReplica: unknown field`,
		`document 0 (HorizontalPodAutoscaler shop/web): spec.metrics[0].resource.target.averageUtilisation: unknown field`,
		`document 4 (HorizontalPodAutoscaler twice): spec.maxReplicas: duplicate field (line 6; first at line 5)`,
		`document 4 (HorizontalPodAutoscaler twice): spec.MinReplicas: unknown field`,
		`document 5 (HorizontalPodAutoscaler): spec.maxReplicas: Invalid value: got a string, want int32`,
		`document 6 (HorizontalPodAutoscaler old): apiVersion: "autoscaling/v2alpha1" is not supported: want autoscaling/v2, autoscaling/v2beta2, autoscaling/v2beta1 or autoscaling/v1`,
		`document 7 items[1] (HorizontalPodAutoscaler bad-in-list): spec.minReplicaz: unknown field`,
	}
	if diff := cmp.Diff(problemLines(t, err), want); diff != "" {
		t.Errorf("problems (-got +want):\n%s", diff)
	}
	var got []string
	for _, h := range hpas {
		got = append(got, h.Key())
	}
	if diff := cmp.Diff(got, []string{"default/good", "default/in-list"}); diff != "" {
		t.Errorf("autoscalers (-got +want):\n%s", diff)
	}
}

func TestMissingName(t *testing.T) {
	_, err := Parse("hpa.yaml", []byte("apiVersion: autoscaling/v1\nkind: HorizontalPodAutoscaler\nspec: {maxReplicas: 3}\n"))
	if diff := cmp.Diff(problemLines(t, err), []string{"document 0 (HorizontalPodAutoscaler): metadata.name: Required value"}); diff != "" {
		t.Errorf("problems (-got +want):\n%s", diff)
	}
}

func TestUnparsableDocument(t *testing.T) {
	hpas, err := Parse("hpa.yaml", []byte("apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: a}\nspec: {maxReplicas: 1}\n---\nspec: [unclosed\n"))
	lines := problemLines(t, err)
	if len(lines) != 1 || len(hpas) != 1 {
		t.Fatalf("problems %q and %d autoscalers; want one problem and the first autoscaler", lines, len(hpas))
	}
	if want := "document 1: "; lines[0][:len(want)] != want {
		t.Errorf("problem %q, want one of document 1", lines[0])
	}
}

// TestV1Conversion: autoscaling/v1 reads as the API server converts it (k8s.io/kubernetes
// pkg/apis/autoscaling/v1 conversion.go and its conversion_test.go).
func TestV1Conversion(t *testing.T) {
	cpu := func(p int32) *pb.MetricSpec {
		return &pb.MetricSpec{Type: "Resource", Resource: &pb.ResourceMetricSource{Name: "cpu", Target: &pb.MetricTarget{Type: "Utilization", AverageUtilization: ptr(p)}}}
	}
	ref := &pb.CrossVersionObjectReference{ApiVersion: "apps/v1", Kind: "Deployment", Name: "web"}
	const head = "apiVersion: autoscaling/v1\nkind: HorizontalPodAutoscaler\nmetadata:\n  name: web\n"
	tests := []struct {
		name            string
		yaml            string
		want            *pb.HorizontalPodAutoscalerSpec
		wantAnnotations map[string]string
	}{
		{
			name: "targetCPUUtilizationPercentage",
			yaml: head + "spec:\n  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}\n  minReplicas: 2\n  maxReplicas: 10\n  targetCPUUtilizationPercentage: 50\n",
			want: &pb.HorizontalPodAutoscalerSpec{ScaleTargetRef: ref, MinReplicas: ptr[int32](2), MaxReplicas: 10, Metrics: []*pb.MetricSpec{cpu(50)}},
		},
		{
			name: "no target: 80 percent cpu",
			yaml: head + "spec:\n  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}\n  maxReplicas: 10\n",
			want: &pb.HorizontalPodAutoscalerSpec{ScaleTargetRef: ref, MaxReplicas: 10, Metrics: []*pb.MetricSpec{cpu(80)}},
		},
		{
			name: "metrics and behavior annotations, the cpu target last, round-trip annotations dropped",
			yaml: head + `  annotations:
    hpa-recommender.io/mode: shadow
    autoscaling.alpha.kubernetes.io/metrics: '[{"type":"External","external":{"metricName":"queue","targetAverageValue":"30"}},{"type":"Object","object":{"target":{"kind":"Service","name":"s"},"metricName":"rps","targetValue":"0","averageValue":"10"}},{"type":"Resource","resource":{"name":"memory","targetAverageValue":"1Gi"}}]'
    autoscaling.alpha.kubernetes.io/behavior: '{"ScaleDown":{"StabilizationWindowSeconds":60,"SelectPolicy":"Min","Policies":[{"Type":"Pods","Value":1,"PeriodSeconds":30}]}}'
    autoscaling.alpha.kubernetes.io/conditions: '[]'
spec:
  maxReplicas: 10
  targetCPUUtilizationPercentage: 70
`,
			want: &pb.HorizontalPodAutoscalerSpec{MaxReplicas: 10, Metrics: []*pb.MetricSpec{
				{Type: "External", External: &pb.ExternalMetricSource{Metric: &pb.MetricIdentifier{Name: "queue"}, Target: &pb.MetricTarget{Type: "AverageValue", AverageValue: ptr("30")}}},
				{Type: "Object", Object: &pb.ObjectMetricSource{DescribedObject: &pb.CrossVersionObjectReference{Kind: "Service", Name: "s"}, Metric: &pb.MetricIdentifier{Name: "rps"}, Target: &pb.MetricTarget{Type: "AverageValue", AverageValue: ptr("10")}}},
				{Type: "Resource", Resource: &pb.ResourceMetricSource{Name: "memory", Target: &pb.MetricTarget{Type: "AverageValue", AverageValue: ptr("1Gi")}}},
				cpu(70),
			}, Behavior: &pb.HorizontalPodAutoscalerBehavior{ScaleDown: &pb.HPAScalingRules{
				StabilizationWindowSeconds: ptr[int32](60), SelectPolicy: ptr("Min"),
				Policies: []*pb.HPAScalingPolicy{{Type: "Pods", Value: 1, PeriodSeconds: 30}},
			}}},
			wantAnnotations: map[string]string{"hpa-recommender.io/mode": "shadow"},
		},
		{
			name:            "an empty behavior annotation sets no behavior",
			yaml:            head + "  annotations: {autoscaling.alpha.kubernetes.io/behavior: '{}'}\nspec: {maxReplicas: 3}\n",
			want:            &pb.HorizontalPodAutoscalerSpec{MaxReplicas: 3, Metrics: []*pb.MetricSpec{cpu(80)}},
			wantAnnotations: map[string]string{},
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
			if h.APIVersion != "autoscaling/v1" || h.Object.APIVersion != "autoscaling/v2" || h.Key() != "default/web" {
				t.Errorf("read as %s, object %s, key %s", h.APIVersion, h.Object.APIVersion, h.Key())
			}
			if diff := cmp.Diff(h.Spec, tt.want, protocmp.Transform()); diff != "" {
				t.Errorf("spec (-got +want):\n%s", diff)
			}
			if diff := cmp.Diff(h.Object.Annotations, tt.wantAnnotations); diff != "" {
				t.Errorf("annotations (-got +want):\n%s", diff)
			}
		})
	}
}

func TestV1BadAnnotation(t *testing.T) {
	_, err := Parse("hpa.yaml", []byte("apiVersion: autoscaling/v1\nkind: HorizontalPodAutoscaler\nmetadata:\n  name: web\n  annotations: {autoscaling.alpha.kubernetes.io/metrics: 'not json'}\nspec: {maxReplicas: 3}\n"))
	lines := problemLines(t, err)
	if len(lines) != 1 {
		t.Fatalf("problems %q, want one", lines)
	}
	if want := "document 0 (HorizontalPodAutoscaler web): metadata.annotations[autoscaling.alpha.kubernetes.io/metrics]: not a JSON list"; len(lines[0]) < len(want) || lines[0][:len(want)] != want {
		t.Errorf("problem %q, want it to start with %q", lines[0], want)
	}
}

// TestLoadStandardInput: path "-" reads standard input, as kubectl's -f - does.
func TestLoadStandardInput(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdin
	os.Stdin = r
	t.Cleanup(func() { os.Stdin = old; r.Close() })
	go func() {
		_, _ = w.WriteString("apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: web, namespace: shop}\n" +
			"spec: {scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}, maxReplicas: 5}\n")
		w.Close()
	}()
	hpas, err := Load("-")
	if err != nil {
		t.Fatal(err)
	}
	if len(hpas) != 1 || hpas[0].Object.Name != "web" || hpas[0].Object.Spec.MaxReplicas != 5 {
		t.Errorf("Load(-) = %+v; want the one HPA shop/web with maxReplicas 5", hpas)
	}
}
