//go:build e2e

package scaler

// Safety between controllers on a real control plane: two autoscalers of different sources over
// the same pods, and a workload that an in-tree-controlled HPA also targets. The in-tree
// controller is simulated by what it does to the API: status writes by the field manager
// kube-controller-manager (internal/controlplane runs the controller manager without it, so nothing else
// scales).

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hpa-recommender/hpa-recommender/clients/scaler/api/v1alpha1"
)

func TestSafetyBetweenControllers(t *testing.T) {
	e := startE2EEnv(t)
	if _, err := e.kubectl(t, "", "apply", "--server-side", "-k", crdDir); err != nil {
		t.Fatal(err)
	}
	if _, err := e.kubectl(t, "", "wait", "--for=condition=Established", "--timeout=60s", "crd/centralhorizontalpodautoscalers.hpa-recommender.io"); err != nil {
		t.Fatal(err)
	}

	ns := "safety"
	f := e.newFixture(t, ns, 2, "", func(c *Config) { c.Source = SourceHPA + "," + SourceCustom })
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(f.ctx)
	t.Cleanup(func() { cancel(); wg.Wait() })
	for _, src := range []string{SourceHPA, SourceCustom} {
		if err := f.s.startObjectSource(ctx, &wg, src); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.s.startHPAWatch(ctx, &wg); err != nil {
		t.Fatal(err)
	}
	if !f.s.waitHPAWatch(ctx) {
		t.Fatal("the HPA watch never synced")
	}
	hpas := e.cp.Client.AutoscalingV2().HorizontalPodAutoscalers(ns)
	chpas := f.kube.Dynamic.Resource(v1alpha1.GroupVersionResource).Namespace(ns)
	sync := func(key string) {
		t.Helper()
		if err := f.s.SyncOne(f.ctx, key); err != nil {
			t.Fatalf("sync %s: %v", key, err)
		}
	}
	condOf := func(name, typ string) autoscalingv2.HorizontalPodAutoscalerCondition {
		t.Helper()
		h, err := hpas.Get(f.ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return findCond(h.Status.Conditions, typ)
	}

	// AmbiguousSelector: HPA web on Deployment web, CentralHorizontalPodAutoscaler canary on
	// Deployment web-canary, whose selector (app=web) selects web's pods.
	canary := deployment(0)
	canary.Name = "web-canary"
	if _, err := e.cp.Client.AppsV1().Deployments(ns).Create(f.ctx, canary, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	chpa := strings.Replace(objectHPA("CentralHorizontalPodAutoscaler", ns, "canary", "Deployment"), "name: web}", "name: web-canary}", 1)
	if _, err := e.kubectl(t, objectHPA("HorizontalPodAutoscaler", ns, "web", "Deployment")+"---\n"+chpa, "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	waitAutoscaler(t, f.s, ns+"/web", nil)
	waitAutoscaler(t, f.s, ns+"/canary", nil)
	f.setDemand(300) // 2 pods at 150% of 60%: wants 5
	f.kubelet(f.kube)
	sync(ns + "/web")
	sync(ns + "/canary")
	if r := f.replicas(); r != 2 || len(f.rec.requests) != 0 {
		t.Errorf("replicas = %d, %d requests while two autoscalers select the pods; want 2 and none", r, len(f.rec.requests))
	}
	want := "pods by selector app=web are controlled by more than one HPA (e.g. [HorizontalPodAutoscaler safety/web, CentralHorizontalPodAutoscaler safety/canary])"
	if c := condOf("web", "AbleToScale"); c.Status != "False" || c.Reason != ReasonAmbiguousSelector || !strings.HasPrefix(c.Message, want) {
		t.Errorf("HPA web AbleToScale = %+v, want False AmbiguousSelector %q", c, want)
	}
	u, err := chpas.Get(f.ctx, "canary", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ch, _, err := fromCustom(u)
	if err != nil {
		t.Fatal(err)
	}
	if c := findCond(ch.Status.Conditions, "AbleToScale"); c.Status != "False" || c.Reason != ReasonAmbiguousSelector {
		t.Errorf("CentralHorizontalPodAutoscaler canary AbleToScale = %+v, want False AmbiguousSelector", c)
	}
	f.waitEvent("HorizontalPodAutoscaler", "web", "AmbiguousSelector: "+want)
	f.waitEvent("CentralHorizontalPodAutoscaler", "canary", "AmbiguousSelector: pods by selector app=web are controlled by more than one HPA")

	// The canary's autoscaler deleted: web scales (one pod per 3 s) and says so.
	if err := chpas.Delete(f.ctx, "canary", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUnloaded(t, f.s, ns+"/canary")
	sync(ns + "/web")
	if r := f.replicas(); r != 3 {
		t.Errorf("replicas = %d once web's autoscaler is alone, want 3", r)
	}
	if c := condOf("web", "AbleToScale"); c.Status != "True" || c.Reason != "SucceededRescale" {
		t.Errorf("HPA web AbleToScale = %+v after recovery, want True SucceededRescale", c)
	}

	// An in-tree HPA, legacy, on the same Deployment: its status is written by
	// kube-controller-manager. hpa-scaler compares legacy only, and web holds.
	if _, err := e.kubectl(t, strings.Replace(objectHPA("HorizontalPodAutoscaler", ns, "legacy", "Deployment"), "averageUtilization: 60", "averageUtilization: 90", 1), "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	legacy, err := hpas.Get(f.ctx, "legacy", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	legacy.Status = autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: 3, DesiredReplicas: 3}
	legacy, err = hpas.UpdateStatus(f.ctx, legacy, metav1.UpdateOptions{FieldManager: "kube-controller-manager"})
	if err != nil {
		t.Fatal(err)
	}
	waitAutoscaler(t, f.s, ns+"/legacy", func(a *Autoscaler) bool { return foreignStatusManager(a.HPA) == "kube-controller-manager" })
	waitIndexed(t, f.s, ns, "legacy", "kube-controller-manager")
	f.kubelet(f.kube)
	sync(ns + "/legacy")
	sync(ns + "/web")
	if r := f.replicas(); r != 3 {
		t.Errorf("replicas = %d with an in-tree HPA on the workload, want 3", r)
	}
	if got, err := hpas.Get(f.ctx, "legacy", metav1.GetOptions{}); err != nil || got.ResourceVersion != legacy.ResourceVersion {
		t.Errorf("legacy written by hpa-scaler (resourceVersion %s -> %v, err %v); want it compared only", legacy.ResourceVersion, got.GetResourceVersion(), err)
	}
	if last := f.rec.last(); last.GetTarget().GetName() != "legacy" || !last.GetDryRun() {
		t.Errorf("last request for %s dryRun=%v, want legacy's, a dry run", last.GetTarget().GetName(), last.GetDryRun())
	}
	f.waitEvent("HorizontalPodAutoscaler", "legacy", "StatusWrittenByAnotherController: the status of this HorizontalPodAutoscaler is written by kube-controller-manager")
	wantConflict := "HorizontalPodAutoscaler safety/legacy (its status is written by kube-controller-manager) also targets Deployment/web"
	if c := condOf("web", "AbleToScale"); c.Status != "False" || c.Reason != ReasonConflictingInTreeHPA || !strings.HasPrefix(c.Message, wantConflict) {
		t.Errorf("HPA web AbleToScale = %+v, want False ConflictingInTreeHPA %q", c, wantConflict)
	}
	f.waitEvent("HorizontalPodAutoscaler", "web", "ConflictingInTreeHPA: "+wantConflict)

	// Opted in on web: it scales despite legacy (once the 3 s policy period allows).
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"true"}}}`, AllowInTreeHPAAnnotation)
	if _, err := hpas.Patch(f.ctx, "web", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitAutoscaler(t, f.s, ns+"/web", func(a *Autoscaler) bool { return a.HPA.Annotations[AllowInTreeHPAAnnotation] == "true" })
	for deadline := time.Now().Add(15 * time.Second); f.replicas() == 3 && time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		sync(ns + "/web")
	}
	if r := f.replicas(); r != 4 {
		t.Errorf("replicas = %d after opting in, want 4", r)
	}
}

// waitUnloaded waits until the scaler no longer has key.
func waitUnloaded(t *testing.T, s *Scaler, key string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, ok := s.Autoscaler(key); !ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("autoscaler %s still loaded", key)
		}
	}
}

// waitIndexed waits until the HPA watch shows ns/name with its status written by manager.
func waitIndexed(t *testing.T, s *Scaler, ns, name, manager string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		s.hpas.mu.Lock()
		e, ok := s.hpas.entries[ns+"/"+name]
		s.hpas.mu.Unlock()
		if ok && e.statusManager == manager {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("HPA %s/%s never indexed as written by %s", ns, name, manager)
		}
	}
}
