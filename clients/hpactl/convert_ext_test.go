package hpactl_test

import (
	"strings"
	"testing"
)

// TestConvert: a v2beta2 and a v2beta1 autoscaler print as autoscaling/v2, "---" between
// them, a warning each on stderr; converting the output again changes nothing and warns of
// nothing.
func TestConvert(t *testing.T) {
	old := writeFile(t, "old.yaml", `apiVersion: autoscaling/v2beta2
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: shop}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 5
  metrics:
  - type: Pods
    pods: {metric: {name: rps}, target: {type: AverageValue, averageValue: 10}}
  behavior:
    scaleDown: {stabilizationWindowSeconds: 60}
---
apiVersion: autoscaling/v2beta1
kind: HorizontalPodAutoscaler
metadata: {name: api, namespace: shop}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: api}
  maxReplicas: 3
  metrics:
  - type: External
    external: {metricName: queue, targetValue: 30}
`)
	r := run(t, "", "convert", "-f", old)
	mustOK(t, r)
	const want = `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: web
  namespace: shop
spec:
  behavior:
    scaleDown:
      stabilizationWindowSeconds: 60
  maxReplicas: 5
  metrics:
  - pods:
      metric:
        name: rps
      target:
        averageValue: "10"
        type: AverageValue
    type: Pods
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: web
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: api
  namespace: shop
spec:
  maxReplicas: 3
  metrics:
  - external:
      metric:
        name: queue
      target:
        type: Value
        value: "30"
    type: External
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: api
`
	if r.stdout != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", r.stdout, want)
	}
	warnings := strings.Split(strings.TrimSpace(r.stderr), "\n")
	if len(warnings) != 2 || !strings.Contains(warnings[0], "shop/web): apiVersion: autoscaling/v2beta2 HorizontalPodAutoscaler is no longer served since Kubernetes 1.26") ||
		!strings.Contains(warnings[1], "shop/api): apiVersion: autoscaling/v2beta1 HorizontalPodAutoscaler is no longer served since Kubernetes 1.25") {
		t.Errorf("stderr:\n%s\nwant one warning per document", r.stderr)
	}

	again := run(t, "", "convert", "-f", writeFile(t, "new.yaml", r.stdout))
	mustOK(t, again)
	if again.stdout != want || again.stderr != "" {
		t.Errorf("converting the output again: stdout\n%s\nstderr\n%s", again.stdout, again.stderr)
	}

	one := run(t, "", "convert", "-f", old, "--name", "api")
	mustOK(t, one)
	if _, second, _ := strings.Cut(want, "---\n"); one.stdout != second {
		t.Errorf("--name api printed:\n%s", one.stdout)
	}
}

// TestConvertRefusesOtherVersionsFields: a v2beta2 document written with v2beta1 fields is
// refused with the field path, nothing printed.
func TestConvertRefusesOtherVersionsFields(t *testing.T) {
	f := writeFile(t, "hpa.yaml", `apiVersion: autoscaling/v2beta2
kind: HorizontalPodAutoscaler
metadata: {name: web}
spec:
  maxReplicas: 5
  metrics:
  - type: Resource
    resource: {name: cpu, targetAverageUtilization: 60}
`)
	r := run(t, "", "convert", "-f", f)
	if r.code != 1 || r.stdout != "" {
		t.Fatalf("exit %d, stdout %q; want 1 and nothing", r.code, r.stdout)
	}
	if !strings.Contains(r.stderr, "spec.metrics[0].resource.targetAverageUtilization: unknown field") {
		t.Errorf("stderr %q does not name the field", r.stderr)
	}
}

// TestConvertKeepsNamespaceAsWritten: a manifest without a namespace converts to one without
// (kubectl then applies it to the context's namespace or -n's), one that names default keeps
// it.
func TestConvertKeepsNamespaceAsWritten(t *testing.T) {
	for _, tc := range []struct {
		name, metadata, want string
	}{
		{name: "none", metadata: "{name: web}", want: "metadata:\n  name: web\nspec:\n"},
		{name: "default written", metadata: "{name: web, namespace: default}", want: "metadata:\n  name: web\n  namespace: default\nspec:\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := writeFile(t, "hpa.yaml", "apiVersion: autoscaling/v1\nkind: HorizontalPodAutoscaler\nmetadata: "+tc.metadata+`
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 5
  targetCPUUtilizationPercentage: 70
`)
			r := run(t, "", "convert", "-f", f)
			mustOK(t, r)
			if !strings.Contains(r.stdout, tc.want) {
				t.Errorf("stdout:\n%s\nwant it to contain:\n%s", r.stdout, tc.want)
			}
		})
	}
}
