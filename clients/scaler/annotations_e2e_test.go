//go:build e2e

package scaler

import (
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestAnnotations: the per-object annotations on an HPA object, on the real control plane,
// set and removed with kubectl annotate as a user would. paused-replicas scales to its count
// and holds it against the load (ScalingActive False ScalingPaused, event ScalingPaused);
// removing it resumes (ScalingResumed, a scale-up within policy). With fallback-replicas and
// fallback-after 2, metrics.k8s.io answering 503 (metrics-server stopped) holds for one sync and then scales to the
// fallback count (Fallback True, event FallbackActive, shown by kubectl describe); an invalid
// sync-period is reported on the object (AnnotationsValid False) while it is still served.
func TestAnnotations(t *testing.T) {
	e := startE2EEnv(t)
	cp := e.cp
	ns := "annotations"
	f := e.objectFixture(t, ns, SourceHPA)
	hpas := cp.Client.AutoscalingV2().HorizontalPodAutoscalers(ns)
	key := ns + "/web"
	hpa := strings.Replace(objectHPA("HorizontalPodAutoscaler", ns, "web", "Deployment"),
		"metadata: {name: web, namespace: "+ns+"}",
		"metadata: {name: web, namespace: "+ns+", annotations: {hpa-recommender.io/paused-replicas: \"3\"}}", 1)
	if _, err := e.kubectl(t, hpa, "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	annotate := func(args ...string) {
		t.Helper()
		if _, err := e.kubectl(t, "", append([]string{"annotate", "--overwrite", "-n", ns, "hpa", "web"}, args...)...); err != nil {
			t.Fatal(err)
		}
	}
	sync := func() {
		t.Helper()
		f.kubelet(f.kube)
		if err := f.s.SyncOne(f.ctx, key); err != nil {
			t.Fatal(err)
		}
	}
	condition := func(typ string) (string, string) {
		t.Helper()
		h, err := hpas.Get(f.ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c := findCond(h.Status.Conditions, typ)
		return string(c.Status), c.Reason
	}
	waitAutoscaler(t, f.s, key, func(a *Autoscaler) bool { return a.Controls.PausedReplicas != nil })

	// Paused at 3: 2 pods at 150% want 5; the pause scales to 3 at once and holds there.
	f.setDemand(300)
	sync()
	if r := f.replicas(); r != 3 {
		t.Fatalf("replicas = %d with paused-replicas 3, want 3", r)
	}
	f.setDemand(600)
	for range 2 {
		time.Sleep(300 * time.Millisecond)
		sync()
	}
	if r := f.replicas(); r != 3 {
		t.Fatalf("replicas = %d under load while paused, want 3 held", r)
	}
	if st, reason := condition("ScalingActive"); st != "False" || reason != ReasonScalingPaused {
		t.Errorf("ScalingActive = %s %s while paused, want False ScalingPaused", st, reason)
	}
	f.waitEvent("HorizontalPodAutoscaler", "web", "ScalingPaused: scaling is paused by annotation hpa-recommender.io/paused-replicas")
	f.waitEvent("HorizontalPodAutoscaler", "web", "SuccessfulRescale: New size: 3; reason: paused at 3 by annotation hpa-recommender.io/paused-replicas")

	// Resumed: the next sync scales up again, one pod per 3 s.
	annotate(PausedReplicasAnnotation + "-")
	waitAutoscaler(t, f.s, key, func(a *Autoscaler) bool { return a.Controls.PausedReplicas == nil })
	sync()
	if r := f.replicas(); r != 4 {
		t.Fatalf("replicas = %d after the pause, want 4 (one pod per 3 s)", r)
	}
	if st, _ := condition("ScalingActive"); st != "True" {
		t.Errorf("ScalingActive = %s after the pause, want True", st)
	}
	f.waitEvent("HorizontalPodAutoscaler", "web", "ScalingResumed: ")

	// Metrics fallback: metrics.k8s.io fails (metrics-server stopped); one failed sync holds,
	// the second scales to 2 (past the one-pod-per-3-s policy: the fallback count is not
	// rate-limited).
	annotate(FallbackReplicasAnnotation+"=2", FallbackAfterAnnotation+"=2", SyncPeriodAnnotation+"=1h")
	waitAutoscaler(t, f.s, key, func(a *Autoscaler) bool { return a.Controls.Fallback != nil })
	e.stopMetricsServer(t, f.ctx)
	if err := f.stepWithoutMetrics(); err != nil {
		t.Fatal(err)
	}
	if r := f.replicas(); r != 4 {
		t.Fatalf("replicas = %d after one sync without metrics, want 4 (held)", r)
	}
	if err := f.stepWithoutMetrics(); err != nil {
		t.Fatal(err)
	}
	if r := f.replicas(); r != 2 {
		t.Fatalf("replicas = %d after two syncs without metrics, want the fallback's 2", r)
	}
	if st, reason := condition(string(condFallback)); st != "True" || reason != ReasonFallbackActive {
		t.Errorf("Fallback = %s %s, want True FallbackActive", st, reason)
	}
	if st, reason := condition(string(condAnnotationsValid)); st != "False" || reason != ReasonInvalidAnnotation {
		t.Errorf("AnnotationsValid = %s %s with sync-period 1h, want False InvalidAnnotation", st, reason)
	}
	f.waitEvent("HorizontalPodAutoscaler", "web", `FallbackActive: every metric failed in the last 2 syncs: the fallback (annotation hpa-recommender.io/fallback-replicas: "2") sets 2 replicas`)
	f.waitEvent("HorizontalPodAutoscaler", "web", "InvalidAnnotation: annotation hpa-recommender.io/sync-period: \"1h\" is outside [1s, 10m0s]")
	out, err := e.kubectl(t, "", "describe", "hpa", "web", "-n", ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kubectl describe hpa:\n%s", out)
	for _, re := range []string{
		`(?m)^\s+Fallback\s+True\s+FallbackActive\s+every metric failed in the last 2 syncs`,
		`(?m)^\s+AnnotationsValid\s+False\s+InvalidAnnotation\s+annotation hpa-recommender.io/sync-period`,
		`(?m)^\s+ScalingActive\s+False\s+FailedGetResourceMetric\s+`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("kubectl describe hpa does not match %s", re)
		}
	}
}
