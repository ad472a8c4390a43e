package scaler

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

func writeFile(t *testing.T, dir, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoadManifests(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a.yaml", webHPA+"---\n# only a comment\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n---\n"+shadowHPA[:strings.Index(shadowHPA, "name: web-hpa")]+"name: api\n"+shadowHPA[strings.Index(shadowHPA, "name: web-hpa")+len("name: web-hpa\n"):])
	writeFile(t, dir, "b.yml", `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: queue}
spec:
  scaleTargetRef: {apiVersion: batch.example.com/v1, kind: Worker, name: q}
  maxReplicas: 5
  metrics:
  - type: External
    external: {metric: {name: backlog, selector: {matchLabels: {topic: orders}}}, target: {type: AverageValue, averageValue: 30}}
`)
	writeFile(t, dir, "bad.yaml", "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: typo}\nspec: {maxReplicaz: 3}\n")
	writeFile(t, dir, "README.md", "not a manifest")
	writeFile(t, dir, ".hidden.yaml", "garbage: [")

	as, err := LoadManifests(dir)
	if err == nil || !strings.Contains(err.Error(), "bad.yaml") {
		t.Errorf("error = %v, want one naming bad.yaml", err)
	}
	var keys []string
	for _, a := range as {
		keys = append(keys, a.Key())
	}
	if diff := cmp.Diff(keys, []string{"default/queue", "shop/api", "shop/web-hpa"}); diff != "" {
		t.Fatalf("keys (-got +want):\n%s", diff)
	}
	byKey := map[string]*Autoscaler{}
	for _, a := range as {
		byKey[a.Key()] = a
	}
	if !byKey["shop/api"].Shadow || byKey["shop/web-hpa"].Shadow {
		t.Error("shadow annotation not read")
	}
	// A bare number is a quantity, as kubectl reads it; the spec converts field for field.
	want := &pb.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: &pb.CrossVersionObjectReference{ApiVersion: "batch.example.com/v1", Kind: "Worker", Name: "q"},
		MaxReplicas:    5,
		Metrics: []*pb.MetricSpec{{Type: "External", External: &pb.ExternalMetricSource{
			Metric: &pb.MetricIdentifier{Name: "backlog", Selector: &pb.LabelSelector{MatchLabels: map[string]string{"topic": "orders"}}},
			Target: &pb.MetricTarget{Type: "AverageValue", AverageValue: ptr("30")},
		}}},
	}
	if diff := cmp.Diff(byKey["default/queue"].Spec, want, protocmp.Transform()); diff != "" {
		t.Errorf("spec (-got +want):\n%s", diff)
	}
}

func TestLoadManifestsDuplicate(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a.yaml", webHPA)
	writeFile(t, dir, "b.yaml", webHPA)
	as, err := LoadManifests(dir)
	if err == nil || !strings.Contains(err.Error(), "also defined") {
		t.Errorf("error = %v, want a duplicate", err)
	}
	if len(as) != 0 {
		t.Errorf("autoscalers = %d, want the duplicated one ignored", len(as))
	}
}

func TestManifestReloadKeepsState(t *testing.T) {
	w := newWorld(t, nil)
	if err := w.sync(t); err != nil {
		t.Fatal(err)
	}
	w.s.SetAutoscalers([]*Autoscaler{w.s.mustAutoscaler(t, "shop/web-hpa")})
	if _, ok := w.s.Autoscaler("shop/web-hpa"); !ok {
		t.Fatal("autoscaler lost")
	}
	w.s.SetAutoscalers(nil)
	if _, ok := w.s.Autoscaler("shop/web-hpa"); ok {
		t.Fatal("removed autoscaler still loaded")
	}
	w.s.mu.Lock()
	n := len(w.s.targets)
	w.s.mu.Unlock()
	if n != 0 {
		t.Errorf("state of %d removed targets kept", n)
	}
}

// TestLoadManifestsV1AndEveryProblem: an autoscaling/v1 manifest is read as the API server
// converts it, and a file with several mistakes names each, with its document and field.
func TestLoadManifestsV1AndEveryProblem(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "v1.yaml", `apiVersion: autoscaling/v1
kind: HorizontalPodAutoscaler
metadata: {name: legacy, namespace: shop}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: legacy}
  maxReplicas: 6
  targetCPUUtilizationPercentage: 55
`)
	writeFile(t, dir, "bad.yaml", `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: typo, namespace: shop}
spec:
  scaleTargetRef: {kind: Deployment, name: typo}
  maxReplica: 3
  metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilisation: 50}}}]
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: noref, namespace: shop}
spec: {maxReplicas: 3}
`)
	as, err := LoadManifests(dir)
	for _, want := range []string{
		"bad.yaml: document 0 (HorizontalPodAutoscaler shop/typo): spec.maxReplica: unknown field",
		"bad.yaml: document 0 (HorizontalPodAutoscaler shop/typo): spec.metrics[0].resource.target.averageUtilisation: unknown field",
		"bad.yaml: document 1 (HorizontalPodAutoscaler shop/noref): spec.scaleTargetRef: Required value",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
	if len(as) != 1 || as[0].Key() != "shop/legacy" {
		t.Fatalf("autoscalers %v, want shop/legacy only", as)
	}
	want := &pb.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: &pb.CrossVersionObjectReference{ApiVersion: "apps/v1", Kind: "Deployment", Name: "legacy"},
		MaxReplicas:    6,
		Metrics: []*pb.MetricSpec{{Type: "Resource", Resource: &pb.ResourceMetricSource{
			Name: "cpu", Target: &pb.MetricTarget{Type: "Utilization", AverageUtilization: ptr[int32](55)},
		}}},
	}
	if diff := cmp.Diff(as[0].Spec, want, protocmp.Transform()); diff != "" {
		t.Errorf("spec (-got +want):\n%s", diff)
	}
	if got := as[0].HPA.Spec.Metrics; len(got) != 1 || got[0].Resource == nil {
		t.Errorf("the decoded HPA's metrics %v, want the converted cpu metric", got)
	}
}
