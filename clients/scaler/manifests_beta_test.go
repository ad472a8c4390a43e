package scaler

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestLoadManifestsBetaWarning: a v2beta1 manifest is read as autoscaling/v2 and its warning
// (a version no longer served) is logged.
func TestLoadManifestsBetaWarning(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "old.yaml", `apiVersion: autoscaling/v2beta1
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: shop}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 5
  metrics:
  - type: Resource
    resource: {name: cpu, targetAverageUtilization: 60}
`)
	as, err := LoadManifests(dir)
	if err != nil || len(as) != 1 {
		t.Fatalf("LoadManifests = %d autoscalers, %v; want 1, nil", len(as), err)
	}
	if m := as[0].HPA.Spec.Metrics; len(m) != 1 || m[0].Resource == nil || m[0].Resource.Target.Type != "Utilization" || *m[0].Resource.Target.AverageUtilization != 60 {
		t.Errorf("metrics %+v, want cpu Utilization 60", m)
	}
	var buf bytes.Buffer
	s := &Scaler{log: slog.New(slog.NewTextHandler(&buf, nil))}
	s.logManifestWarnings(as)
	if out := buf.String(); !strings.Contains(out, "manifest warning") || !strings.Contains(out, "autoscaling/v2beta1 HorizontalPodAutoscaler is no longer served since Kubernetes 1.25") || !strings.Contains(out, "autoscaler=shop/web") {
		t.Errorf("log:\n%s\nwant the v2beta1 warning of shop/web", out)
	}
}
