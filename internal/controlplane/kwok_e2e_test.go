//go:build e2e

package controlplane_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"

	"github.com/hpa-recommender/hpa-recommender/internal/controlplane"
)

// TestKwokMetricsServer runs a Deployment on a kwok node: kwok makes its pods Running and
// Ready (no code of ours writes their status), emulates the kubelet's /metrics/resource with
// each pod's CPU from its usage annotation, and the real metrics-server serves it as
// metrics.k8s.io through kube-apiserver's aggregation layer, as `kubectl top pod` reads it.
func TestKwokMetricsServer(t *testing.T) {
	start := time.Now()
	cp := controlplane.Start(t, controlplane.Options{})
	k := controlplane.StartKwok(t, cp, controlplane.KwokOptions{})
	t.Logf("control plane, kwok and metrics-server ready in %v", time.Since(start).Round(time.Millisecond))

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cs := cp.Client
	const ns = "kwok"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	d := deployment("web", 2)
	d.Spec.Template.Spec.NodeName = k.Nodes[0]
	d.Spec.Template.Annotations = map[string]string{controlplane.KwokUsageCPUAnnotation: "50m"}
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(ctx, t, "deployment readyReplicas 2 (kwok's pod-ready stage)", func() (bool, error) {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		return err == nil && d.Status.ReadyReplicas == 2, err
	})
	pods, err := controlplane.DeploymentPods(ctx, cs, ns, "web")
	if err != nil {
		t.Fatal(err)
	}
	// Different usage per pod: each value must reach its own pod.
	want := map[string]int64{}
	for i, p := range pods {
		if p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" {
			t.Errorf("pod %s: phase %s ip %q, want Running with an IP from kwok", p.Name, p.Status.Phase, p.Status.PodIP)
		}
		milli := int64(150 + 100*i)
		usage := corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(milli, resource.DecimalSI)}
		if err := controlplane.SetKwokPodUsage(ctx, cs, ns, p.Name, usage); err != nil {
			t.Fatal(err)
		}
		want[p.Name] = milli
	}

	mc, err := metricsclient.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	// metrics-server reports a pod's CPU as the rate between two scrapes of the cumulative
	// counter kwok integrates from the annotation; the first scrape after the change may
	// straddle it, so wait until every pod shows its own value (to the millicore).
	got := map[string]int64{}
	poll(ctx, t, "PodMetrics with each pod's usage", func() (bool, error) {
		list, err := mc.MetricsV1beta1().PodMetricses(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil // metrics-server has no sample yet, or the APIService is settling
		}
		clear(got)
		for _, pm := range list.Items {
			for _, c := range pm.Containers {
				got[pm.Name] += c.Usage.Cpu().MilliValue()
			}
		}
		for name, w := range want {
			if g, ok := got[name]; !ok || g < w-1 || g > w+1 {
				return false, nil
			}
		}
		return len(got) == len(want), nil
	})
	t.Logf("PodMetrics %v (want %v) after %v", got, want, time.Since(start).Round(time.Millisecond))

	// kubectl top pod reads the same API.
	out, err := exec.CommandContext(ctx, cp.Binaries.Kubectl, "--kubeconfig", cp.Kubeconfig, "top", "pod", "-n", ns, "--no-headers").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl top pod: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line) // NAME CPU(cores) MEMORY(bytes)
		if len(f) < 2 {
			t.Fatalf("kubectl top pod line %q", line)
		}
		w, ok := want[f[0]]
		q, err := resource.ParseQuantity(f[1])
		if !ok || err != nil || q.MilliValue() < w-1 || q.MilliValue() > w+1 {
			t.Errorf("kubectl top pod: %q, want %s at %dm", line, f[0], w)
		}
	}
	t.Logf("kubectl top pod:\n%s", out)

	nm, err := mc.MetricsV1beta1().NodeMetricses().Get(ctx, k.Nodes[0], metav1.GetOptions{})
	if err != nil {
		t.Fatalf("NodeMetrics %s: %v", k.Nodes[0], err)
	}
	t.Logf("NodeMetrics %s: cpu %s memory %s", nm.Name, nm.Usage.Cpu(), nm.Usage.Memory())
}

// TestKwokReadinessAndMissingMetrics: a pod annotated KwokReadyAfterAnnotation "6" starts
// Running and unready on the kwok node and turns Ready 6 s after its start time (the stages
// StartKwok adds), while a plain pod is Ready at once; a pod given KwokNoUsage is left out of
// PodMetrics while the others report.
func TestKwokReadinessAndMissingMetrics(t *testing.T) {
	cp := controlplane.Start(t, controlplane.Options{})
	k := controlplane.StartKwok(t, cp, controlplane.KwokOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cs := cp.Client
	const ns = "kwok-ready"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	lateCPU, readyCPU, none := controlplane.KwokCPU(200), controlplane.KwokCPU(100), controlplane.KwokNoUsage()
	pod := func(name string, ann map[string]string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: ann},
			Spec: corev1.PodSpec{NodeName: k.Nodes[0],
				Containers: []corev1.Container{{Name: "app", Image: "registry.example/web:1"}}},
		}
	}
	for _, p := range []*corev1.Pod{
		pod("late", map[string]string{controlplane.KwokReadyAfterAnnotation: "6", controlplane.KwokUsageCPUAnnotation: lateCPU.String()}),
		pod("ready", map[string]string{controlplane.KwokUsageCPUAnnotation: readyCPU.String()}),
		pod("silent", map[string]string{controlplane.KwokUsageCPUAnnotation: none.Cpu().String(), controlplane.KwokUsageMemoryAnnotation: none.Memory().String()}),
	} {
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	get := func(name string) *corev1.Pod {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	ready := func(p *corev1.Pod) (corev1.ConditionStatus, time.Time) {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady {
				return c.Status, c.LastTransitionTime.Time
			}
		}
		return "", time.Time{}
	}
	poll(ctx, t, "pod late Running and unready", func() (bool, error) {
		p := get("late")
		st, _ := ready(p)
		return p.Status.Phase == corev1.PodRunning && p.Status.StartTime != nil && st == corev1.ConditionFalse, nil
	})
	if st, _ := ready(get("ready")); st != corev1.ConditionTrue {
		t.Errorf("pod ready: Ready %q while late is unready, want True at once", st)
	}
	poll(ctx, t, "pod late Ready", func() (bool, error) {
		st, _ := ready(get("late"))
		return st == corev1.ConditionTrue, nil
	})
	late := get("late")
	_, at := ready(late)
	if d := at.Sub(late.Status.StartTime.Time); d < 5*time.Second {
		t.Errorf("pod late Ready %v after its start, want 6 s", d)
	}

	// Both reporting pods show their usage; the silent one has no PodMetrics.
	if err := k.WaitPodUsage(ctx, ns, map[string]corev1.ResourceList{
		"late":  {corev1.ResourceCPU: lateCPU},
		"ready": {corev1.ResourceCPU: readyCPU},
	}); err != nil {
		t.Fatal(err)
	}
	mc, err := metricsclient.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	list, err := mc.MetricsV1beta1().PodMetricses(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, pm := range list.Items {
		names = append(names, pm.Name)
	}
	if got := strings.Join(names, ","); got != "late,ready" {
		t.Errorf("PodMetrics for %s, want late,ready (silent reports no usage)", got)
	}
}
