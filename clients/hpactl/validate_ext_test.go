package hpactl_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestValidate: every error of every file (the loader's and the engine's) and the warnings,
// exit 1 with an error, 0 with warnings only; --output json lists the same.
func TestValidate(t *testing.T) {
	bad := writeFile(t, "bad.yaml", `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: typo, namespace: shop}
spec: {maxReplica: 3}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: zero, namespace: shop}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 3
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 0}}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: inverted, namespace: shop}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 5
  maxReplicas: 3
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 60}}
`)
	warnOnly := writeFile(t, "old.yaml", `apiVersion: autoscaling/v2beta2
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: shop}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 3
`)
	r := run(t, "", "validate", "-f", bad, "-f", warnOnly)
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		"error: " + bad + ": document 0 (HorizontalPodAutoscaler shop/typo): spec.maxReplica: unknown field",
		"error: " + bad + ": document 1 (HorizontalPodAutoscaler shop/zero): spec.metrics[0].resource.target.averageUtilization: ",
		"warning: " + warnOnly + ": document 0 (HorizontalPodAutoscaler shop/web): apiVersion: autoscaling/v2beta2 HorizontalPodAutoscaler is no longer served",
		"warning: " + warnOnly + ": document 0 (HorizontalPodAutoscaler shop/web): spec.metrics: no metrics: the autoscaler targets 80% average cpu utilization",
		"error: " + bad + ": document 2 (HorizontalPodAutoscaler shop/inverted): spec.maxReplicas: ",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, r.stdout)
		}
	}
	if n := strings.Count(r.stdout, "shop/inverted"); n != 1 {
		t.Errorf("minReplicas above maxReplicas reported %d times, want once (an error):\n%s", n, r.stdout)
	}

	ok := run(t, "", "validate", "-f", warnOnly, "--output", "json")
	mustOK(t, ok)
	var findings []struct{ Severity, File, Field, Message string }
	if err := json.Unmarshal([]byte(ok.stdout), &findings); err != nil {
		t.Fatalf("json output: %v\n%s", err, ok.stdout)
	}
	if len(findings) != 2 || findings[0].Severity != "warning" || findings[0].Field != "apiVersion" || findings[1].Field != "spec.metrics" {
		t.Errorf("findings %+v, want the version and the no-metrics warnings", findings)
	}
}
