package scaler

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/yaml"
)

// statusEntry is a managedFields entry of manager on the status subresource at sec seconds.
func statusEntry(manager string, sec int) metav1.ManagedFieldsEntry {
	at := metav1.NewTime(t0.Add(time.Duration(sec) * time.Second))
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", Time: &at}
}

func TestForeignStatusManager(t *testing.T) {
	for _, tc := range []struct {
		name    string
		entries []metav1.ManagedFieldsEntry
		want    string
	}{
		{"none", nil, ""},
		{"only ours", []metav1.ManagedFieldsEntry{statusEntry(fieldManager, 1)}, ""},
		{"spec by kubectl is not status", []metav1.ManagedFieldsEntry{{Manager: "kubectl-client-side-apply", Operation: metav1.ManagedFieldsOperationUpdate}}, ""},
		{"in-tree controller", []metav1.ManagedFieldsEntry{statusEntry(fieldManager, 5), statusEntry("kube-controller-manager", 1)}, "kube-controller-manager"},
		{"the latest other", []metav1.ManagedFieldsEntry{statusEntry("kubectl-edit", 1), statusEntry("kube-controller-manager", 3)}, "kube-controller-manager"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{ManagedFields: tc.entries}}
			if got := foreignStatusManager(h); got != tc.want {
				t.Errorf("foreignStatusManager = %q, want %q", got, tc.want)
			}
		})
	}
}

// hpaObject decodes manifest as an HPA object with a UID.
func hpaObject(t *testing.T, manifest, uid string) *autoscalingv2.HorizontalPodAutoscaler {
	t.Helper()
	var h autoscalingv2.HorizontalPodAutoscaler
	if err := yaml.UnmarshalStrict([]byte(manifest), &h); err != nil {
		t.Fatal(err)
	}
	h.UID, h.Generation, h.ResourceVersion = types.UID(uid), 1, "1"
	return &h
}

// TestAmbiguousSelectorAcrossSources: an HPA object (hpa source) and a manifest on a second
// Deployment selecting the same pods. The HPA object's status says why it holds, as upstream
// words it, with its transition time kept while it holds; when the manifest goes, it scales
// and its AbleToScale turns True.
func TestAmbiguousSelectorAcrossSources(t *testing.T) {
	w := newWorld(t, nil, strings.NewReplacer("name: web-hpa", "name: canary", "name: web}", "name: canary}").Replace(webHPA))
	w.c.addDeployment("shop", "canary", 1, "app=web")
	w.c.recorder.IncludeObject = true
	h := hpaObject(t, webHPA, "hpa-uid")
	cs := fake.NewClientset(h)
	w.c.kube.Client = cs
	w.s.setSource(SourceHPA, []*Autoscaler{hpaAutoscaler(h)})
	hw := &hpaWorld{world: w, cs: cs}

	if err := w.sync(t); err != nil {
		t.Fatal(err)
	}
	st := hw.object(t).Status
	wantMsg := "pods by selector app=web are controlled by more than one HPA (e.g. [HorizontalPodAutoscaler shop/web-hpa, HorizontalPodAutoscaler shop/canary (manifest m0.yaml)]): none of them scales until only one does"
	for _, typ := range []string{"AbleToScale", "ScalingActive"} {
		if c := findCond(st.Conditions, typ); c.Status != "False" || c.Reason != ReasonAmbiguousSelector || c.Message != wantMsg {
			t.Errorf("%s = %+v, want False AmbiguousSelector %q", typ, c, wantMsg)
		}
	}
	if st.CurrentReplicas != 2 || st.DesiredReplicas != 0 {
		t.Errorf("current/desired = %d/%d, want 2 and the previous (0)", st.CurrentReplicas, st.DesiredReplicas)
	}
	if ev := strings.Join(w.c.events(), "\n"); !strings.Contains(ev, "Warning AmbiguousSelector "+wantMsg+" involvedObject{kind=HorizontalPodAutoscaler") {
		t.Errorf("events = %q, want AmbiguousSelector on the HPA", ev)
	}
	since := findCond(st.Conditions, "AbleToScale").LastTransitionTime

	w.clk.Add(15 * time.Second)
	if err := w.sync(t); err != nil {
		t.Fatal(err)
	}
	if c := findCond(hw.object(t).Status.Conditions, "AbleToScale"); !c.LastTransitionTime.Equal(&since) {
		t.Errorf("AbleToScale since %v after a second held sync, want %v", c.LastTransitionTime, since)
	}
	if len(w.c.writes) != 0 || len(w.rec.requests) != 0 {
		t.Errorf("writes %v, requests %d while held, want none", w.c.writes, len(w.rec.requests))
	}

	w.s.SetAutoscalers(nil)
	w.clk.Add(15 * time.Second)
	if err := w.sync(t); err != nil {
		t.Fatal(err)
	}
	if got, want := w.c.writes, []int32{4}; !equal(got, want) {
		t.Errorf("writes = %v, want %v once the manifest is gone", got, want)
	}
	if c := findCond(hw.object(t).Status.Conditions, "AbleToScale"); c.Status != "True" {
		t.Errorf("AbleToScale = %+v after recovery, want True", c)
	}
}

// TestShadowTakesNoPartInAmbiguity: an autoscaler in shadow mode on the same pods neither holds
// the other nor is held.
func TestShadowTakesNoPartInAmbiguity(t *testing.T) {
	shadow := strings.NewReplacer("name: web-hpa", "name: web-shadow\n  annotations: {hpa-recommender.io/mode: shadow}").Replace(webHPA)
	w := newWorld(t, nil, webHPA, shadow)
	if err := w.s.SyncOne(t.Context(), "shop/web-shadow"); err != nil {
		t.Fatal(err)
	}
	if req := w.rec.last(); !req.GetDryRun() || len(req.GetPods()) != 2 {
		t.Errorf("shadow request dryRun=%v pods=%d, want a dry run with the 2 pods", req.GetDryRun(), len(req.GetPods()))
	}
	if err := w.sync(t); err != nil {
		t.Fatal(err)
	}
	if got, want := w.c.writes, []int32{4}; !equal(got, want) {
		t.Errorf("writes = %v, want %v (the shadow autoscaler does not count)", got, want)
	}
}

// inTreeHPA is an HPA on Deployment web whose status kube-controller-manager writes.
func inTreeHPA(t *testing.T, name string, manager string) *autoscalingv2.HorizontalPodAutoscaler {
	t.Helper()
	h := hpaObject(t, strings.Replace(webHPA, "name: web-hpa", "name: "+name, 1), name+"-uid")
	if manager != "" {
		h.ManagedFields = []metav1.ManagedFieldsEntry{statusEntry(manager, 0)}
	}
	return h
}

// withHPAs gives w's scaler a synced HPA index holding hs.
func withHPAs(w *world, hs ...*autoscalingv2.HorizontalPodAutoscaler) *hpaIndex {
	x := newHPAIndex()
	for _, h := range hs {
		x.upsert(h)
	}
	x.synced.Store(true)
	w.s.mu.Lock()
	w.s.hpas = x
	w.s.mu.Unlock()
	return x
}

func TestInTreeHPAConflict(t *testing.T) {
	t.Run("in-tree HPA on the same Deployment: held, with the condition's reason in the event", func(t *testing.T) {
		w := newWorld(t, nil)
		withHPAs(w, inTreeHPA(t, "legacy", "kube-controller-manager"))
		if err := w.sync(t); err != nil {
			t.Fatal(err)
		}
		if len(w.c.writes) != 0 || len(w.rec.requests) != 0 {
			t.Errorf("writes %v, requests %d, want none", w.c.writes, len(w.rec.requests))
		}
		ev := strings.Join(w.c.events(), "\n")
		want := `Warning ConflictingInTreeHPA HorizontalPodAutoscaler web-hpa: HorizontalPodAutoscaler shop/legacy (its status is written by kube-controller-manager) also targets Deployment/web: two controllers would fight over its replicas, so hpa-scaler does not scale it; remove one, or set the annotation hpa-recommender.io/allow-in-tree-hpa: "true" on HorizontalPodAutoscaler shop/web-hpa (manifest m0.yaml) to scale anyway`
		if !strings.Contains(ev, want) {
			t.Errorf("events =\n%s\nwant %s", ev, want)
		}
	})
	t.Run("an HPA hpa-scaler does not load, never written: held, said so", func(t *testing.T) {
		w := newWorld(t, nil)
		withHPAs(w, inTreeHPA(t, "legacy", ""))
		if err := w.sync(t); err != nil {
			t.Fatal(err)
		}
		if len(w.c.writes) != 0 {
			t.Errorf("writes %v, want none", w.c.writes)
		}
		if ev := strings.Join(w.c.events(), "\n"); !strings.Contains(ev, "HorizontalPodAutoscaler shop/legacy (not loaded by hpa-scaler: the in-tree HPA controller scales it where it runs)") {
			t.Errorf("events = %s, want the conflict naming legacy as not loaded", ev)
		}
	})
	t.Run("opted in: scales", func(t *testing.T) {
		w := newWorld(t, nil, strings.Replace(webHPA, "namespace: shop", "namespace: shop\n  annotations: {hpa-recommender.io/allow-in-tree-hpa: \"true\"}", 1))
		withHPAs(w, inTreeHPA(t, "legacy", "kube-controller-manager"))
		if err := w.sync(t); err != nil {
			t.Fatal(err)
		}
		if got, want := w.c.writes, []int32{4}; !equal(got, want) {
			t.Errorf("writes = %v, want %v", got, want)
		}
	})
	t.Run("an in-tree HPA on another Deployment, or in another namespace: scales", func(t *testing.T) {
		w := newWorld(t, nil)
		other := inTreeHPA(t, "api", "kube-controller-manager")
		other.Spec.ScaleTargetRef.Name = "api"
		elsewhere := inTreeHPA(t, "web", "kube-controller-manager")
		elsewhere.Namespace = "staging"
		withHPAs(w, other, elsewhere)
		if err := w.sync(t); err != nil {
			t.Fatal(err)
		}
		if got, want := w.c.writes, []int32{4}; !equal(got, want) {
			t.Errorf("writes = %v, want %v", got, want)
		}
	})
	t.Run("the in-tree HPA deleted: scales at the next sync", func(t *testing.T) {
		w := newWorld(t, nil)
		legacy := inTreeHPA(t, "legacy", "kube-controller-manager")
		x := withHPAs(w, legacy)
		if err := w.sync(t); err != nil {
			t.Fatal(err)
		}
		x.remove(legacy)
		if err := w.sync(t); err != nil {
			t.Fatal(err)
		}
		if got, want := w.c.writes, []int32{4}; !equal(got, want) {
			t.Errorf("writes = %v, want %v", got, want)
		}
	})
	t.Run("the HPA cache not synced: held", func(t *testing.T) {
		w := newWorld(t, nil)
		withHPAs(w).synced.Store(false)
		if err := w.sync(t); err != nil {
			t.Fatal(err)
		}
		if len(w.c.writes) != 0 || !hasEvent(w.c.events(), ReasonConflictingInTreeHPA) {
			t.Errorf("writes %v, want none and the event", w.c.writes)
		}
	})
	t.Run("the status it would write: AbleToScale False, desiredReplicas kept, the explanation", func(t *testing.T) {
		w := newWorld(t, nil)
		withHPAs(w, inTreeHPA(t, "legacy", "kube-controller-manager"))
		ch := &statusChange{}
		g, err := w.s.gather(t.Context(), w.s.mustAutoscaler(t, "shop/web-hpa"), false, false)
		if err != nil || g.hold == nil {
			t.Fatalf("gather: hold %v, error %v; want a hold", g.hold, err)
		}
		w.s.holdSync(w.s.mustAutoscaler(t, "shop/web-hpa"), g.scale, ch, g.hold)
		st := nextStatus(autoscalingv2.HorizontalPodAutoscalerStatus{DesiredReplicas: 3}, 1, ch, t0)
		if c := findCond(st.Conditions, "AbleToScale"); c.Status != "False" || c.Reason != ReasonConflictingInTreeHPA {
			t.Errorf("AbleToScale = %+v", c)
		}
		if st.DesiredReplicas != 3 || st.CurrentReplicas != 2 || ch.explanation != g.hold.message {
			t.Errorf("status %+v, explanation %q; want desired kept at 3, current 2, the hold's message", st, ch.explanation)
		}
	})
}

// TestHPAWrittenByAnotherManagerIsShadow: an HPA object of the hpa source whose status
// kube-controller-manager writes is compared only: a dry-run request, no scale write, no
// status write, and one event saying so (not one per sync); and it is not an in-tree conflict
// of itself.
func TestHPAWrittenByAnotherManagerIsShadow(t *testing.T) {
	w := newWorld(t, nil)
	w.c.recorder.IncludeObject = true
	h := inTreeHPA(t, "web-hpa", "kube-controller-manager")
	cs := fake.NewClientset(h)
	w.c.kube.Client = cs
	w.s.SetAutoscalers(nil)
	w.s.setSource(SourceHPA, []*Autoscaler{hpaAutoscaler(h)})
	withHPAs(w, h)
	hw := &hpaWorld{world: w, cs: cs}
	for range 2 {
		if err := w.sync(t); err != nil {
			t.Fatal(err)
		}
		w.clk.Add(15 * time.Second)
	}
	if n := len(w.rec.requests); n != 2 || !w.rec.last().GetDryRun() {
		t.Errorf("%d requests, last dryRun=%v; want 2 dry runs", n, w.rec.last().GetDryRun())
	}
	if len(w.c.writes) != 0 || hw.statusWrites() != 0 {
		t.Errorf("scale writes %v, status writes %d; want none", w.c.writes, hw.statusWrites())
	}
	ev := w.c.events()
	if len(ev) != 1 || !strings.Contains(ev[0], "Normal StatusWrittenByAnotherController the status of this HorizontalPodAutoscaler is written by kube-controller-manager") {
		t.Errorf("events = %q, want one StatusWrittenByAnotherController", ev)
	}
}

// TestHPAWatch: the watch lists every HPA whatever its labels, follows deletions, and reports
// synced.
func TestHPAWatch(t *testing.T) {
	w := newWorld(t, func(c *Config) { c.Selector = "team=a" })
	cs := fake.NewClientset(inTreeHPA(t, "legacy", "kube-controller-manager"))
	w.c.kube.Client = cs
	ctx := t.Context()
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	if err := w.s.startHPAWatch(ctx, &wg); err != nil {
		t.Fatal(err)
	}
	if !w.s.waitHPAWatch(ctx) {
		t.Fatal("the HPA watch never synced")
	}
	if got := w.s.hpas.targeting(workload{"shop", "apps", "Deployment", "web"}); len(got) != 1 || got[0].statusManager != "kube-controller-manager" {
		t.Errorf("entries = %+v, want legacy written by kube-controller-manager", got)
	}
	if err := cs.AutoscalingV2().HorizontalPodAutoscalers("shop").Delete(ctx, "legacy", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(w.s.hpas.targeting(workload{"shop", "apps", "Deployment", "web"})) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the deleted HPA is still in the index")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestHPAIndexByTarget: an HPA is found by its current target only (a changed scaleTargetRef
// moves it), in key order, and no longer once deleted (also when the deletion was missed).
func TestHPAIndexByTarget(t *testing.T) {
	web := workload{"shop", "apps", "Deployment", "web"}
	api := workload{"shop", "apps", "Deployment", "api"}
	keys := func(x *hpaIndex, w workload) []string {
		var out []string
		for _, e := range x.targeting(w) {
			out = append(out, e.key())
		}
		return out
	}
	x := newHPAIndex()
	b, a := inTreeHPA(t, "b", ""), inTreeHPA(t, "a", "kube-controller-manager")
	x.upsert(b)
	x.upsert(a)
	if got, want := keys(x, web), []string{"shop/a", "shop/b"}; !slices.Equal(got, want) {
		t.Errorf("targeting web = %v, want %v", got, want)
	}
	moved := b.DeepCopy()
	moved.Spec.ScaleTargetRef.Name = "api"
	x.upsert(moved)
	if got, want := keys(x, web), []string{"shop/a"}; !slices.Equal(got, want) {
		t.Errorf("targeting web after b moved = %v, want %v", got, want)
	}
	if got, want := keys(x, api), []string{"shop/b"}; !slices.Equal(got, want) {
		t.Errorf("targeting api after b moved = %v, want %v", got, want)
	}
	x.remove(cache.DeletedFinalStateUnknown{Key: "shop/b", Obj: b})
	x.remove(a)
	if got := append(keys(x, web), keys(x, api)...); len(got) != 0 || len(x.entries) != 0 || len(x.byTarget) != 0 {
		t.Errorf("after both were deleted: targeting %v, %d entries, %d targets; want none", got, len(x.entries), len(x.byTarget))
	}
}
