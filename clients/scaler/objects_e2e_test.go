//go:build e2e

package scaler

// End-to-end scenarios of the hpa and custom sources against a real control plane whose
// kube-controller-manager runs without the in-tree HPA controller
// (--controllers=*,-horizontalpodautoscaling, internal/controlplane's default): the scaler takes its place,
// and kubectl reads what it wrote.

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hpa-recommender/hpa-recommender/clients/scaler/api/v1alpha1"
)

func TestObjectSources(t *testing.T) {
	e := startE2EEnv(t)
	t.Run("HPAObjects", e.hpaObjects)
	t.Run("CustomResource", e.customObjects)
	t.Run("PrinterColumns", e.printerColumns)
	t.Run("DecisionExplained", e.decisionExplained)
}

// kubectl runs the kubectl `make kube-binaries` built against the control plane.
func (e *e2eEnv) kubectl(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.cp.Binaries.Kubectl, append([]string{"--kubeconfig", e.cp.Kubeconfig}, args...)...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, errb.String())
	}
	return out.String(), err
}

// installCRD installs the generated CRD (server-side apply: again is a no-op) and waits until
// it serves.
func (e *e2eEnv) installCRD(t *testing.T) {
	t.Helper()
	if _, err := e.kubectl(t, "", "apply", "--server-side", "-k", crdDir); err != nil {
		t.Fatal(err)
	}
	if _, err := e.kubectl(t, "", "wait", "--for=condition=Established", "--timeout=60s", "crd/centralhorizontalpodautoscalers.hpa-recommender.io"); err != nil {
		t.Fatal(err)
	}
}

// objectHPA is an HPA on Deployment web: 60% of a 100m CPU request, 1 to 10 replicas, one pod
// per 3 s either way.
func objectHPA(kind, ns, name, target string) string {
	return fmt.Sprintf(`apiVersion: %s
kind: %s
metadata: {name: %s, namespace: %s}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: %s, name: web}
  minReplicas: 1
  maxReplicas: 10
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 60}}
  behavior:
    scaleUp: {stabilizationWindowSeconds: 0, policies: [{type: Pods, value: 1, periodSeconds: 3}]}
    scaleDown: {stabilizationWindowSeconds: 0, policies: [{type: Pods, value: 1, periodSeconds: 3}]}
`, map[string]string{"HorizontalPodAutoscaler": "autoscaling/v2", "CentralHorizontalPodAutoscaler": "hpa-recommender.io/v1alpha1"}[kind], kind, name, ns, target)
}

// objectFixture is a fixture whose autoscalers come from an object source.
func (e *e2eEnv) objectFixture(t *testing.T, ns string, source string) *fixture {
	t.Helper()
	f := e.newFixture(t, ns, 2, "", func(c *Config) { c.Source = source })
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(f.ctx)
	t.Cleanup(func() { cancel(); wg.Wait() })
	if err := f.s.startObjectSource(ctx, &wg, source); err != nil {
		t.Fatal(err)
	}
	return f
}

// waitAutoscaler waits until the scaler has loaded key, with cond true of it when given.
func waitAutoscaler(t *testing.T, s *Scaler, key string, cond func(*Autoscaler) bool) *Autoscaler {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		a, ok := s.Autoscaler(key)
		if ok && (cond == nil || cond(a)) {
			return a
		}
		if time.Now().After(deadline) {
			t.Fatalf("autoscaler %s never loaded as wanted (loaded: %v)", key, ok)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// objectEvents returns "reason: message" of the hpa-scaler events on the object kind/name.
func (f *fixture) objectEvents(kind, name string) []string {
	f.t.Helper()
	list, err := f.e.cp.Client.CoreV1().Events(f.ns).List(f.ctx, metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	var out []string
	for _, ev := range list.Items {
		if ev.Source.Component == "hpa-scaler" && ev.InvolvedObject.Kind == kind && ev.InvolvedObject.Name == name {
			out = append(out, ev.Reason+": "+ev.Message)
		}
	}
	return out
}

// waitEvent polls objectEvents until one starts with prefix.
func (f *fixture) waitEvent(kind, name, prefix string) {
	f.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		evs := f.objectEvents(kind, name)
		for _, ev := range evs {
			if strings.HasPrefix(ev, prefix) {
				return
			}
		}
		if time.Now().After(deadline) {
			f.t.Errorf("events on %s %s = %q, want one starting %q", kind, name, evs, prefix)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// scaleTo steps (kubelet, then one sync of key) until the target has want replicas, and
// returns the replica counts seen on the way and when each appeared.
func (f *fixture) scaleTo(key string, want int32) ([]int32, []time.Time) {
	f.t.Helper()
	var seen []int32
	var at []time.Time
	last := f.replicas()
	deadline := time.Now().Add(3 * time.Minute) // each new pod's metrics take two scrapes
	for last != want && time.Now().Before(deadline) {
		f.kubelet(f.kube)
		if err := f.s.SyncOne(f.ctx, key); err != nil {
			f.t.Fatal(err)
		}
		if r := f.replicas(); r != last {
			seen, at, last = append(seen, r), append(at, time.Now()), r
		}
		time.Sleep(250 * time.Millisecond)
	}
	return seen, at
}

func checkPolicyGaps(t *testing.T, at []time.Time) {
	t.Helper()
	for i := 1; i < len(at); i++ {
		if gap := at[i].Sub(at[i-1]); gap < 2500*time.Millisecond {
			t.Errorf("scale changes %d and %d %v apart, want >= the 3 s policy period", i-1, i, gap)
		}
	}
}

// HPAObjects: hpa-scaler in place of the in-tree controller. An HPA object scales its
// Deployment up and down within its policies; its status is written as the in-tree controller
// writes it, so kubectl get and describe read as usual; an edit (generation bump) is acted on
// in the next sync and observedGeneration follows; an HPA whose target kind does not exist is
// reported on its own status and events while the other keeps working; an unchanged sync writes
// nothing.
func (e *e2eEnv) hpaObjects(t *testing.T) {
	ns := "hpa-objects"
	f := e.objectFixture(t, ns, SourceHPA)
	hpas := e.cp.Client.AutoscalingV2().HorizontalPodAutoscalers(ns)
	if _, err := e.kubectl(t, objectHPA("HorizontalPodAutoscaler", ns, "web", "Deployment")+"---\n"+objectHPA("HorizontalPodAutoscaler", ns, "broken", "Rollout"), "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	key := ns + "/web"
	waitAutoscaler(t, f.s, key, nil)
	waitAutoscaler(t, f.s, ns+"/broken", nil)

	// Up: 2 pods at 150% of the request wants 5; the policy allows one pod per 3 s.
	f.setDemand(300)
	f.kubelet(f.kube)
	if err := f.s.SyncOne(f.ctx, key); err != nil {
		t.Fatal(err)
	}
	if r := f.replicas(); r != 3 {
		t.Fatalf("replicas = %d after the first sync, want 3", r)
	}
	// kubectl get hpa, as under the in-tree controller: the status says 2 pods measured at
	// 150% against 60%.
	out, err := e.kubectl(t, "", "get", "hpa", "web", "-n", ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kubectl get hpa:\n%s", out)
	if !regexp.MustCompile(`(?m)^NAME\s+REFERENCE\s+TARGETS\s+MINPODS\s+MAXPODS\s+REPLICAS\s+AGE\s*$`).MatchString(out) {
		t.Errorf("kubectl get hpa header:\n%s", out)
	}
	if !regexp.MustCompile(`(?m)^web\s+Deployment/web\s+cpu: 150%/60%\s+1\s+10\s+2\s+\S+\s*$`).MatchString(out) {
		t.Errorf("kubectl get hpa row, want web Deployment/web cpu: 150%%/60%% 1 10 2:\n%s", out)
	}
	seen, at := f.scaleTo(key, 5)
	if got := fmt.Sprint(seen); got != "[4 5]" {
		t.Fatalf("replicas went %s after 3, want [4 5] (one pod per 3 s)", got)
	}
	checkPolicyGaps(t, at)
	f.waitEvent("HorizontalPodAutoscaler", "web", "SuccessfulRescale: New size: 5; reason: scale up 4 -> 5: cpu utilization 75% of 60% target proposes 5")

	// Steady: a sync that changes nothing writes nothing.
	f.kubelet(f.kube)
	if err := f.s.SyncOne(f.ctx, key); err != nil {
		t.Fatal(err)
	}
	waitAutoscaler(t, f.s, key, func(a *Autoscaler) bool { return a.HPA.Status.CurrentReplicas == 5 })
	before, err := hpas.Get(f.ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitAutoscaler(t, f.s, key, func(a *Autoscaler) bool { return a.HPA.ResourceVersion == before.ResourceVersion })
	for range 2 {
		f.kubelet(f.kube)
		if err := f.s.SyncOne(f.ctx, key); err != nil {
			t.Fatal(err)
		}
	}
	after, err := hpas.Get(f.ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != before.ResourceVersion {
		t.Errorf("status written by syncs that changed nothing:\nbefore %+v\nafter  %+v", before.Status, after.Status)
	}
	if g := after.Status.ObservedGeneration; g == nil || *g != after.Generation {
		t.Errorf("observedGeneration = %v, want %d", g, after.Generation)
	}

	// Edit: maxReplicas 10 -> 4 bumps the generation; the next sync scales to 4 and the
	// status observes the new generation.
	patched, err := hpas.Patch(f.ctx, "web", types.MergePatchType, []byte(`{"spec":{"maxReplicas":4}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitAutoscaler(t, f.s, key, func(a *Autoscaler) bool { return a.HPA.Generation == patched.Generation })
	f.kubelet(f.kube)
	if err := f.s.SyncOne(f.ctx, key); err != nil {
		t.Fatal(err)
	}
	if r := f.replicas(); r != 4 {
		t.Errorf("replicas = %d after maxReplicas became 4, want 4", r)
	}
	got, err := hpas.Get(f.ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if g := got.Status.ObservedGeneration; g == nil || *g != patched.Generation {
		t.Errorf("observedGeneration = %v after one sync, want %d", g, patched.Generation)
	}
	f.waitEvent("HorizontalPodAutoscaler", "web", "SuccessfulRescale: New size: 4; reason: scale down 5 -> 4: current number of replicas above Spec.MaxReplicas (min 1, max 4)")

	// Down: demand falls to 10% of 4 pods; one pod per 3 s down to 1.
	f.setDemand(40)
	seen, at = f.scaleTo(key, 1)
	if got := fmt.Sprint(seen); got != "[3 2 1]" {
		t.Errorf("replicas went %s from 4, want [3 2 1] (one pod per 3 s)", got)
	}
	checkPolicyGaps(t, at)
	f.waitEvent("HorizontalPodAutoscaler", "web", "SuccessfulRescale: New size: 1; reason: scale down 2 -> 1: cpu utilization 20% of 60% target proposes 1")
	final, err := hpas.Get(f.ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st := final.Status; st.CurrentReplicas != 2 || st.DesiredReplicas != 1 || st.LastScaleTime == nil {
		t.Errorf("status = %+v, want current 2, desired 1 and a lastScaleTime", st)
	}

	out, err = e.kubectl(t, "", "describe", "hpa", "web", "-n", ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kubectl describe hpa:\n%s", out)
	for _, re := range []string{
		`(?m)^Reference:\s+Deployment/web$`,
		`(?m)^Min replicas:\s+1$`,
		`(?m)^Max replicas:\s+4$`,
		`(?m)^Deployment pods:\s+2 current / 1 desired$`,
		`(?m)^\s+AbleToScale\s+True\s+SucceededRescale\s+the HPA controller was able to update the target scale to 1$`,
		`(?m)^\s+ScalingActive\s+True\s+ValidMetricFound\s+the HPA was able to successfully calculate a replica count from cpu resource utilization \(percentage of request\)$`,
		`(?m)^\s+ScalingLimited\s+(True|False)\s+\S+`,
		`(?m)^\s+Normal\s+SuccessfulRescale\s+.*hpa-scaler\s+New size: 1; reason: scale down 2 -> 1: cpu utilization 20% of 60% target proposes 1$`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("kubectl describe hpa does not match %s", re)
		}
	}

	// The HPA on an unknown kind: its own condition and event; web was scaled meanwhile.
	if err := f.s.SyncOne(f.ctx, ns+"/broken"); err == nil {
		t.Error("sync of an HPA on an unknown kind succeeded")
	}
	broken, err := hpas.Get(f.ctx, "broken", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := findCond(broken.Status.Conditions, string(autoscalingv2.AbleToScale))
	if c.Status != "False" || c.Reason != "FailedGetScale" || !strings.Contains(c.Message, "Rollout") {
		t.Errorf("broken AbleToScale = %+v, want False FailedGetScale naming Rollout", c)
	}
	f.waitEvent("HorizontalPodAutoscaler", "broken", "FailedGetScale: ")
}

// crdDir is the CRD's kustomization, from this package's directory, applied as the README says
// (kubectl apply -k): the generated CRD and the minReplicas default.
const crdDir = "../../deploy/base/crd"

// CustomResource: the generated CRD installs; kubectl explain reads its schema; kubectl apply
// rejects what the API server rejects for an HPA; a CentralHorizontalPodAutoscaler (an HPA
// manifest with apiVersion and kind changed) scales its Deployment up and down within policy,
// with its status (and explanation) written and shown by kubectl get chpa in the columns
// kubectl get hpa prints for an HPA of the same spec and status.
func (e *e2eEnv) customObjects(t *testing.T) {
	e.installCRD(t)
	// kubectl explain needs the published OpenAPI, which follows the CRD by a moment.
	var out string
	var err error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		if out, err = e.kubectl(t, "", "explain", "chpa.spec.scaleTargetRef"); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"GROUP:      hpa-recommender.io", "KIND:       CentralHorizontalPodAutoscaler", "VERSION:    v1alpha1", "kind\t<string> -required-", "name\t<string> -required-"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl explain chpa.spec.scaleTargetRef lacks %q:\n%s", want, out)
		}
	}
	for field, want := range map[string]string{
		"explanation": "explanation is the last decision's message",
		"reference":   "reference is the scale target as the REFERENCE column of `kubectl get hpa` prints it",
		"targets":     "targets is each metric's current value against its target, as the TARGETS column of",
	} {
		// kubectl wraps the description: compare with the spaces collapsed.
		if out, err = e.kubectl(t, "", "explain", "chpa.status."+field); err != nil || !strings.Contains(strings.Join(strings.Fields(out), " "), want) {
			t.Errorf("kubectl explain chpa.status.%s: %v\n%s", field, err, out)
		}
	}

	ns := "custom-objects"
	f := e.objectFixture(t, ns, SourceCustom)
	chpa := objectHPA("CentralHorizontalPodAutoscaler", ns, "web", "Deployment")
	for _, bad := range []struct{ name, from, to, want string }{
		{"min above max", "minReplicas: 1", "minReplicas: 11", "spec.minReplicas must be less than or equal to spec.maxReplicas"},
		{"max zero", "maxReplicas: 10", "maxReplicas: 0", "spec.maxReplicas must be greater than or equal to 1"},
		{"target of another type", "averageUtilization: 60}", "averageValue: 60}", "the target must set the value its type names"},
		{"policy period", "periodSeconds: 3}]}\n    scaleDown", "periodSeconds: 3601}]}\n    scaleDown", "periodSeconds in [1, 1800]"},
		{"no target kind", "kind: Deployment", "kind: \"\"", "spec.scaleTargetRef needs kind and name"},
	} {
		m := strings.Replace(chpa, bad.from, bad.to, 1)
		if m == chpa {
			t.Fatalf("%s: %q not in the manifest", bad.name, bad.from)
		}
		if _, err := e.kubectl(t, m, "apply", "-f", "-"); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("kubectl apply (%s): %v, want a rejection saying %q", bad.name, err, bad.want)
		}
	}
	if _, err := e.kubectl(t, chpa, "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	key := ns + "/web"
	waitAutoscaler(t, f.s, key, nil)

	f.setDemand(300) // 2 pods at 150% of 60%: wants 5, one pod per 3 s
	f.kubelet(f.kube)
	if err := f.s.SyncOne(f.ctx, key); err != nil {
		t.Fatal(err)
	}
	if r := f.replicas(); r != 3 {
		t.Fatalf("replicas = %d after the first sync, want 3", r)
	}
	out, err = e.kubectl(t, "", "get", "chpa", "web", "-n", ns)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^NAME\s+REFERENCE\s+TARGETS\s+MINPODS\s+MAXPODS\s+REPLICAS\s+AGE\s*$`).MatchString(out) {
		t.Errorf("kubectl get chpa header, want the columns of kubectl get hpa:\n%s", out)
	}
	// The same row as kubectl get hpa prints for an HPA of the same spec and status: 2 pods
	// measured at 150% against 60%.
	u, err := f.kube.Dynamic.Resource(v1alpha1.GroupVersionResource).Namespace(ns).Get(f.ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h, _, err := fromCustom(u)
	if err != nil {
		t.Fatal(err)
	}
	e.twinHPA(t, f.ctx, ns+"-twin", h)
	chpaRow := e.getTable(t, "chpa", "web", "-n", ns)["web"]
	hpaRow := e.getTable(t, "hpa", "web", "-n", ns+"-twin")["web"]
	for _, col := range []string{"REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS"} {
		if chpaRow[col] != hpaRow[col] {
			t.Errorf("kubectl get chpa %s = %q, kubectl get hpa prints %q", col, chpaRow[col], hpaRow[col])
		}
	}
	if chpaRow["REFERENCE"] != "Deployment/web" || chpaRow["TARGETS"] != "cpu: 150%/60%" {
		t.Errorf("kubectl get chpa REFERENCE, TARGETS = %q, %q; want Deployment/web, cpu: 150%%/60%%", chpaRow["REFERENCE"], chpaRow["TARGETS"])
	}
	seen, at := f.scaleTo(key, 5)
	if got := fmt.Sprint(seen); got != "[4 5]" {
		t.Fatalf("replicas went %s after 3, want [4 5]", got)
	}
	checkPolicyGaps(t, at)
	// Once the scale-ups are older than the 3 s period (replicas added in the period raise
	// the scale-down limit, as upstream), down one pod per 3 s.
	time.Sleep(3500 * time.Millisecond)
	f.setDemand(40)
	seen, at = f.scaleTo(key, 1)
	if got := fmt.Sprint(seen); got != "[4 3 2 1]" {
		t.Errorf("replicas went %s from 5, want [4 3 2 1]", got)
	}
	checkPolicyGaps(t, at)
	f.waitEvent("CentralHorizontalPodAutoscaler", "web", "SuccessfulRescale: New size: 1; reason: scale down 2 -> 1: cpu utilization 20% of 60% target proposes 1")

	u, err = f.kube.Dynamic.Resource(v1alpha1.GroupVersionResource).Namespace(ns).Get(f.ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h, custom, err := fromCustom(u)
	if err != nil {
		t.Fatal(err)
	}
	st := h.Status
	if st.CurrentReplicas != 2 || st.DesiredReplicas != 1 || st.LastScaleTime == nil || st.ObservedGeneration == nil || *st.ObservedGeneration != h.Generation {
		t.Errorf("status = %+v, want current 2, desired 1, a lastScaleTime, observedGeneration %d", st, h.Generation)
	}
	if c := findCond(st.Conditions, "AbleToScale"); c.Reason != "SucceededRescale" {
		t.Errorf("AbleToScale = %+v, want SucceededRescale", c)
	}
	// The last decision's sentence, the reason of its SuccessfulRescale event.
	if expl, want := custom.explanation, "scale down 2 -> 1: cpu utilization 20% of 60% target proposes 1"; expl != want {
		t.Errorf("status.explanation = %q, want the decision's sentence %q", expl, want)
	}
	if want := hpaTargets(h.Spec.Metrics, st.CurrentMetrics); custom.reference != "Deployment/web" || custom.targets != want {
		t.Errorf("status.reference, status.targets = %q, %q after the last sync; want Deployment/web, %q", custom.reference, custom.targets, want)
	}
}
