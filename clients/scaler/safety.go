package scaler

// Safety between controllers: no two autoscalers (of any source) scale the same pods, and no
// autoscaler of ours scales a workload the in-tree HPA controller also scales, unless the user
// opted in on our object.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// AllowInTreeHPAAnnotation set to "true" on one of our autoscalers lets it scale a workload that
// an in-tree-controlled HorizontalPodAutoscaler also targets (two controllers then write the
// same replicas: only for a deliberate hand-over).
const AllowInTreeHPAAnnotation = "hpa-recommender.io/allow-in-tree-hpa"

// Reasons of the conditions and events that say why an autoscaler is held.
const (
	// ReasonConflictingInTreeHPA: a HorizontalPodAutoscaler that the in-tree controller scales
	// targets the same workload; ours does not scale it.
	ReasonConflictingInTreeHPA = "ConflictingInTreeHPA"
	// ReasonStatusWrittenByAnotherController: an HPA object of the hpa source whose status
	// another manager writes is compared only (shadow).
	ReasonStatusWrittenByAnotherController = "StatusWrittenByAnotherController"
)

// foreignStatusManager is the field manager, other than ours, that wrote h's status
// subresource most recently per managedFields ("" when none did): the in-tree HPA controller
// writes it as kube-controller-manager.
func foreignStatusManager(h *autoscalingv2.HorizontalPodAutoscaler) string {
	manager, at := "", metav1.Time{}
	for _, e := range h.ManagedFields {
		if e.Subresource != "status" || e.Manager == fieldManager {
			continue
		}
		if manager == "" || (e.Time != nil && at.Before(e.Time)) {
			manager = e.Manager
			if e.Time != nil {
				at = *e.Time
			}
		}
	}
	return manager
}

// workload names a scale target in a namespace by API group, kind and name (the version does
// not matter: two versions of a kind are the same object).
type workload struct{ namespace, group, kind, name string }

func targetOf(namespace string, ref autoscalingv2.CrossVersionObjectReference) workload {
	group := ref.APIVersion
	if gv, err := schema.ParseGroupVersion(ref.APIVersion); err == nil {
		group = gv.Group
	}
	return workload{namespace: namespace, group: group, kind: ref.Kind, name: ref.Name}
}

func (w workload) String() string { return w.kind + "/" + w.name }

// controlling reports whether a may write its target's scale: not in shadow mode, and not an
// HPA object whose status another controller writes.
func (s *Scaler) controlling(a *Autoscaler) bool {
	if s.cfg.DryRun || a.Shadow {
		return false
	}
	return a.Object == nil || a.Object.Source != SourceHPA || foreignStatusManager(a.HPA) == ""
}

// describe names an autoscaler in messages: its kind (a manifest says so) and key.
func describe(a *Autoscaler) string {
	if a.Object != nil {
		return a.Object.Kind + " " + a.Key()
	}
	return "HorizontalPodAutoscaler " + a.Key() + " (manifest " + a.Source + ")"
}

// hold is why a sync does not act: the condition reason and message, also the event's.
type hold struct{ reason, message string }

// knownSelector is an autoscaler's pod selector as its last sync (or another's look-up) read
// it; nil sel: it selects nothing (no selector, shadow, or held for another reason).
type knownSelector struct {
	sel    labels.Selector
	target workload
}

// recordSelector remembers a's selector (nil: none) for the other autoscalers' checks.
func (s *Scaler) recordSelector(a *Autoscaler, sel labels.Selector) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.selectors[a.Key()] = knownSelector{sel: sel, target: targetOf(a.Namespace, a.HPA.Spec.ScaleTargetRef)}
}

// ambiguity records a's selector and returns a hold when another controlling autoscaler in a's
// namespace scales the same workload or selects one of pods (upstream's AmbiguousSelector,
// across every source). The selector of an autoscaler that has not synced yet is read from its
// target's scale here, so neither of two new autoscalers acts first.
func (s *Scaler) ambiguity(ctx context.Context, a *Autoscaler, selector string, sel labels.Selector, pods []*corev1.Pod) *hold {
	s.recordSelector(a, sel)
	mine := targetOf(a.Namespace, a.HPA.Spec.ScaleTargetRef)
	var unknown []*Autoscaler
	s.mu.Lock()
	for key, o := range s.byNamespace[a.Namespace] {
		if _, ok := s.selectors[key]; !ok && key != a.Key() && s.controlling(o) {
			unknown = append(unknown, o)
		}
	}
	s.mu.Unlock()
	for _, o := range unknown {
		var osel labels.Selector
		if sc, _, err := s.kube.getScale(ctx, o.Namespace, o.HPA.Spec.ScaleTargetRef); err == nil && sc.Status.Selector != "" {
			osel, _ = labels.Parse(sc.Status.Selector) // unparsable: its own sync reports it
		}
		s.mu.Lock()
		if _, ok := s.selectors[o.Key()]; !ok { // its own sync may have recorded it meanwhile
			s.selectors[o.Key()] = knownSelector{sel: osel, target: targetOf(o.Namespace, o.HPA.Spec.ScaleTargetRef)}
		}
		s.mu.Unlock()
	}

	var others []string
	s.mu.Lock()
	for key, o := range s.byNamespace[a.Namespace] {
		ks, ok := s.selectors[key]
		if !ok || key == a.Key() || !s.controlling(o) {
			continue
		}
		same := ks.target == mine
		if same || (ks.sel != nil && slices.ContainsFunc(pods, func(p *corev1.Pod) bool { return ks.sel.Matches(labels.Set(p.Labels)) })) {
			others = append(others, describe(o))
		}
	}
	s.mu.Unlock()
	if len(others) == 0 {
		return nil
	}
	slices.Sort(others)
	return &hold{reason: ReasonAmbiguousSelector, message: fmt.Sprintf(
		"pods by selector %v are controlled by more than one HPA (e.g. [%s, %s]): none of them scales until only one does",
		selector, describe(a), strings.Join(others, ", "))}
}

// inTreeConflict returns a hold when a HorizontalPodAutoscaler that hpa-scaler does not
// control targets a's workload: the in-tree controller scales it (its status is written by
// another manager, or hpa-scaler does not load it). Off when a opts in with
// AllowInTreeHPAAnnotation, and when no HPA watch runs.
func (s *Scaler) inTreeConflict(a *Autoscaler) *hold {
	s.mu.Lock()
	x := s.hpas
	s.mu.Unlock()
	if x == nil || strings.EqualFold(a.HPA.Annotations[AllowInTreeHPAAnnotation], "true") {
		return nil
	}
	if !x.synced.Load() {
		return &hold{reason: ReasonConflictingInTreeHPA, message: "the HorizontalPodAutoscaler cache has not synced yet: whether an in-tree-controlled HPA also targets this workload is not known"}
	}
	mine := targetOf(a.Namespace, a.HPA.Spec.ScaleTargetRef)
	entries := x.targeting(mine)
	var others []string
	s.mu.Lock()
	for _, e := range entries {
		o, loaded := s.autoscalers[e.key()]
		ours := loaded && o.Object != nil && o.Object.Source == SourceHPA && o.HPA.UID == e.uid
		why := "its status is written by " + e.statusManager
		switch {
		case ours && e.statusManager == "":
			continue // ours alone: two of ours on one workload are an AmbiguousSelector
		case !ours && e.statusManager == "":
			why = "not loaded by hpa-scaler: the in-tree HPA controller scales it where it runs"
		}
		others = append(others, fmt.Sprintf("HorizontalPodAutoscaler %s (%s)", e.key(), why))
	}
	s.mu.Unlock()
	if len(others) == 0 {
		return nil
	}
	slices.Sort(others)
	return &hold{reason: ReasonConflictingInTreeHPA, message: fmt.Sprintf(
		"%s also targets %s: two controllers would fight over its replicas, so hpa-scaler does not scale it; remove one, or set the annotation %s: \"true\" on %s to scale anyway",
		strings.Join(others, ", "), mine, AllowInTreeHPAAnnotation, describe(a))}
}

// holdSync records a held sync: an event, and on the object's status the current count with
// the previous desiredReplicas, AbleToScale False and (as upstream sets for its
// AmbiguousSelector) ScalingActive False, both with h's reason and message.
func (s *Scaler) holdSync(a *Autoscaler, sc *autoscalingv1.Scale, ch *statusChange, h *hold) {
	s.event(a, sc, corev1.EventTypeWarning, h.reason, "%s", h.message)
	ch.recreate, ch.current, ch.keepDesired, ch.metrics = true, sc.Spec.Replicas, true, nil
	ch.explanation = h.message
	ch.set(condAbleToScale, corev1.ConditionFalse, h.reason, "%s", h.message)
	ch.set(condScalingActive, corev1.ConditionFalse, h.reason, "%s", h.message)
}

// asShadowIfForeign returns a as a shadow autoscaler when it is an HPA object whose status
// another manager writes (DESIGN.md: compared only), saying so once per change in the log and
// in one event on the HPA.
func (s *Scaler) asShadowIfForeign(a *Autoscaler, ts *targetState) *Autoscaler {
	manager := ""
	if a.Object != nil && a.Object.Source == SourceHPA {
		manager = foreignStatusManager(a.HPA)
	}
	if manager != ts.foreignManager {
		ts.foreignManager = manager
		if manager != "" {
			msg := fmt.Sprintf("the status of this HorizontalPodAutoscaler is written by %s (the in-tree HPA controller, or another): hpa-scaler compares its decisions only (shadow) and writes neither the scale nor the status", manager)
			s.log.Warn("HPA controlled by another manager: shadow only", "autoscaler", a.Key(), "manager", manager)
			s.event(a, nil, corev1.EventTypeNormal, ReasonStatusWrittenByAnotherController, "%s", msg)
		} else {
			s.log.Info("HPA no longer written by another manager: acting on it", "autoscaler", a.Key())
		}
	}
	if manager == "" || a.Shadow {
		return a
	}
	c := *a
	c.Shadow = true
	return &c
}

// hpaEntry is what the safety check keeps of one HorizontalPodAutoscaler object.
type hpaEntry struct {
	namespace, name string
	uid             types.UID
	target          workload
	statusManager   string
}

func (e hpaEntry) key() string { return e.namespace + "/" + e.name }

// hpaIndex is every HorizontalPodAutoscaler object in the watched namespaces, whatever its
// labels, by key, and the keys of those targeting each workload.
type hpaIndex struct {
	mu       sync.Mutex
	entries  map[string]hpaEntry
	byTarget map[workload]map[string]bool
	synced   atomic.Bool
}

func newHPAIndex() *hpaIndex {
	return &hpaIndex{entries: map[string]hpaEntry{}, byTarget: map[workload]map[string]bool{}}
}

func (x *hpaIndex) upsert(obj any) {
	h, ok := obj.(*autoscalingv2.HorizontalPodAutoscaler)
	if !ok {
		return
	}
	e := hpaEntry{namespace: h.Namespace, name: h.Name, uid: h.UID, target: targetOf(h.Namespace, h.Spec.ScaleTargetRef), statusManager: foreignStatusManager(h)}
	key := e.key()
	x.mu.Lock()
	defer x.mu.Unlock()
	x.removeLocked(key)
	x.entries[key] = e
	keys := x.byTarget[e.target]
	if keys == nil {
		keys = map[string]bool{}
		x.byTarget[e.target] = keys
	}
	keys[key] = true
}

func (x *hpaIndex) remove(obj any) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.removeLocked(objectKey(obj))
}

func (x *hpaIndex) removeLocked(key string) {
	e, ok := x.entries[key]
	if !ok {
		return
	}
	delete(x.entries, key)
	keys := x.byTarget[e.target]
	delete(keys, key)
	if len(keys) == 0 {
		delete(x.byTarget, e.target)
	}
}

// targeting returns the entries whose target is w, sorted by key.
func (x *hpaIndex) targeting(w workload) []hpaEntry {
	x.mu.Lock()
	defer x.mu.Unlock()
	var out []hpaEntry
	for key := range x.byTarget[w] {
		out = append(out, x.entries[key])
	}
	slices.SortFunc(out, func(a, b hpaEntry) int { return strings.Compare(a.key(), b.key()) })
	return out
}

// startHPAWatch watches every HorizontalPodAutoscaler in Config's namespaces (no label
// selector: an HPA the hpa source does not load is the in-tree controller's) for the in-tree
// conflict check, until ctx ends. It returns when the informers are started; the index
// reports synced once they have listed.
func (s *Scaler) startHPAWatch(ctx context.Context, wg *sync.WaitGroup) error {
	if s.kube.Client == nil {
		return fmt.Errorf("scaler: the in-tree HPA check needs Kube.Client")
	}
	x := newHPAIndex()
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    x.upsert,
		UpdateFunc: func(_, obj any) { x.upsert(obj) },
		DeleteFunc: x.remove,
	}
	var synced []cache.InformerSynced
	for _, ns := range s.cfg.namespaceList() {
		f := informers.NewSharedInformerFactoryWithOptions(s.kube.Client, 0, informers.WithNamespace(ns))
		inf := f.Autoscaling().V2().HorizontalPodAutoscalers().Informer()
		if _, err := inf.AddEventHandler(handler); err != nil {
			return err
		}
		synced = append(synced, inf.HasSynced)
		f.Start(ctx.Done())
		wg.Add(1)
		go func() { defer wg.Done(); <-ctx.Done(); f.Shutdown() }()
	}
	s.mu.Lock()
	s.hpas = x
	s.mu.Unlock()
	wg.Add(1)
	go func() {
		defer wg.Done()
		if cache.WaitForCacheSync(ctx.Done(), synced...) {
			x.synced.Store(true)
		}
	}()
	return nil
}
