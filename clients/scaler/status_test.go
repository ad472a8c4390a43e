package scaler

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"sigs.k8s.io/yaml"

	"github.com/hpa-recommender/hpa-recommender/clients/scaler/api/v1alpha1"
)

func cond(t, s, reason, msg string, at time.Time) autoscalingv2.HorizontalPodAutoscalerCondition {
	return autoscalingv2.HorizontalPodAutoscalerCondition{
		Type: autoscalingv2.HorizontalPodAutoscalerConditionType(t), Status: corev1.ConditionStatus(s),
		Reason: reason, Message: msg, LastTransitionTime: metav1.NewTime(at),
	}
}

func TestNextStatus(t *testing.T) {
	earlier := t0.Add(-time.Hour)
	now := t0.Add(1500 * time.Millisecond) // written as whole seconds
	nowS := t0.Add(time.Second)
	cpu := []autoscalingv2.MetricStatus{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{
		Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageUtilization: ptr(int32(90))}}}}
	old := autoscalingv2.HorizontalPodAutoscalerStatus{
		CurrentReplicas: 2, DesiredReplicas: 3, ObservedGeneration: ptr(int64(1)),
		LastScaleTime: ptr(metav1.NewTime(earlier)),
		Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{
			cond("AbleToScale", "True", "SucceededRescale", "the HPA controller was able to update the target scale to 3", earlier),
			cond("ScalingActive", "True", "ValidMetricFound", "ok", earlier),
		},
	}
	decided := func(c *statusChange) *statusChange {
		c.recreate, c.current, c.desired, c.metrics = true, 3, 3, cpu
		return c
	}
	tests := []struct {
		name string
		old  autoscalingv2.HorizontalPodAutoscalerStatus
		ch   *statusChange
		want autoscalingv2.HorizontalPodAutoscalerStatus
	}{{
		name: "nothing learned: unchanged",
		old:  old,
		ch:   &statusChange{},
		want: old,
	}, {
		name: "first status of a new object: every condition transitions now",
		ch: func() *statusChange {
			c := decided(&statusChange{})
			c.set(condAbleToScale, "True", "ReadyForNewScale", "recommended size matches current size")
			return c
		}(),
		want: autoscalingv2.HorizontalPodAutoscalerStatus{
			CurrentReplicas: 3, DesiredReplicas: 3, ObservedGeneration: ptr(int64(7)), CurrentMetrics: cpu,
			Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{
				cond("AbleToScale", "True", "ReadyForNewScale", "recommended size matches current size", nowS),
			},
		},
	}, {
		name: "reason changes, status does not: the transition time stays; a new type is appended",
		old:  old,
		ch: func() *statusChange {
			c := decided(&statusChange{})
			c.set(condAbleToScale, "True", "ReadyForNewScale", "recommended size matches current size")
			c.set("ScalingLimited", "False", "DesiredWithinRange", "in range")
			return c
		}(),
		want: autoscalingv2.HorizontalPodAutoscalerStatus{
			CurrentReplicas: 3, DesiredReplicas: 3, ObservedGeneration: ptr(int64(7)), CurrentMetrics: cpu,
			LastScaleTime: ptr(metav1.NewTime(earlier)),
			Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{
				cond("AbleToScale", "True", "ReadyForNewScale", "recommended size matches current size", earlier),
				cond("ScalingActive", "True", "ValidMetricFound", "ok", earlier),
				cond("ScalingLimited", "False", "DesiredWithinRange", "in range", nowS),
			},
		},
	}, {
		name: "status changes: new transition time; no decision keeps desiredReplicas",
		old:  old,
		ch: func() *statusChange {
			c := &statusChange{}
			c.noDecision(4)
			c.set(condScalingActive, "False", "FailedGetResourceMetric", "boom")
			return c
		}(),
		want: autoscalingv2.HorizontalPodAutoscalerStatus{
			CurrentReplicas: 4, DesiredReplicas: 3, ObservedGeneration: ptr(int64(7)),
			LastScaleTime: ptr(metav1.NewTime(earlier)),
			Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{
				cond("AbleToScale", "True", "SucceededGetScale", "the HPA controller was able to get the target's current scale", earlier),
				cond("ScalingActive", "False", "FailedGetResourceMetric", "boom", nowS),
			},
		},
	}, {
		name: "rescaled: desired and lastScaleTime",
		old:  old,
		ch: func() *statusChange {
			c := decided(&statusChange{})
			c.desired, c.rescaled = 5, true
			return c
		}(),
		want: autoscalingv2.HorizontalPodAutoscalerStatus{
			CurrentReplicas: 3, DesiredReplicas: 5, ObservedGeneration: ptr(int64(7)), CurrentMetrics: cpu,
			LastScaleTime: ptr(metav1.NewTime(nowS)),
			Conditions:    old.Conditions,
		},
	}, {
		name: "scale not read: only the condition changes (no observedGeneration either)",
		old:  old,
		ch: func() *statusChange {
			c := &statusChange{}
			c.set(condAbleToScale, "False", "FailedGetScale", "no such kind")
			return c
		}(),
		want: autoscalingv2.HorizontalPodAutoscalerStatus{
			CurrentReplicas: 2, DesiredReplicas: 3, ObservedGeneration: ptr(int64(1)),
			LastScaleTime: ptr(metav1.NewTime(earlier)),
			Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{
				cond("AbleToScale", "False", "FailedGetScale", "no such kind", nowS),
				cond("ScalingActive", "True", "ValidMetricFound", "ok", earlier),
			},
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.old.DeepCopy()
			got := nextStatus(tc.old, 7, tc.ch, now)
			if diff := cmp.Diff(got, tc.want); diff != "" {
				t.Errorf("status (-got +want):\n%s", diff)
			}
			if diff := cmp.Diff(&tc.old, before); diff != "" {
				t.Errorf("the old status was modified (-after +before):\n%s", diff)
			}
		})
	}
}

// hpaWorld is a world whose autoscaler is the HorizontalPodAutoscaler object shop/web-hpa in a
// fake clientset (the hpa source), synced against the real service.
type hpaWorld struct {
	*world
	cs *fake.Clientset
}

func newHPAWorld(t *testing.T, manifest string) *hpaWorld {
	t.Helper()
	w := newWorld(t, nil)
	w.c.recorder.IncludeObject = true
	var hpa autoscalingv2.HorizontalPodAutoscaler
	if err := yaml.UnmarshalStrict([]byte(manifest), &hpa); err != nil {
		t.Fatal(err)
	}
	hpa.UID, hpa.Generation, hpa.ResourceVersion = "hpa-uid", 3, "1"
	cs := fake.NewClientset(&hpa)
	w.c.kube.Client = cs
	w.s.SetAutoscalers([]*Autoscaler{hpaAutoscaler(&hpa)})
	return &hpaWorld{world: w, cs: cs}
}

// object is the HPA as the fake API server holds it.
func (w *hpaWorld) object(t *testing.T) *autoscalingv2.HorizontalPodAutoscaler {
	t.Helper()
	h, err := w.cs.AutoscalingV2().HorizontalPodAutoscalers("shop").Get(t.Context(), "web-hpa", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// statusWrites counts status updates sent to the fake API server.
func (w *hpaWorld) statusWrites() int {
	n := 0
	for _, a := range w.cs.Actions() {
		if a.GetVerb() == "update" && a.GetSubresource() == "status" {
			n++
		}
	}
	return n
}

func findCond(cs []autoscalingv2.HorizontalPodAutoscalerCondition, typ string) autoscalingv2.HorizontalPodAutoscalerCondition {
	for _, c := range cs {
		if string(c.Type) == typ {
			return c
		}
	}
	return autoscalingv2.HorizontalPodAutoscalerCondition{}
}

func TestSyncWritesHPAStatusAsUpstream(t *testing.T) {
	w := newHPAWorld(t, webHPA)
	// 2 pods at 100% of their request, target 50%: scale to 4.
	if err := w.sync(t); err != nil {
		t.Fatal(err)
	}
	h := w.object(t)
	st := h.Status
	if st.CurrentReplicas != 2 || st.DesiredReplicas != 4 {
		t.Errorf("current/desired = %d/%d, want 2/4", st.CurrentReplicas, st.DesiredReplicas)
	}
	if st.ObservedGeneration == nil || *st.ObservedGeneration != 3 {
		t.Errorf("observedGeneration = %v, want 3", st.ObservedGeneration)
	}
	if st.LastScaleTime == nil || !st.LastScaleTime.Time.Equal(t0) {
		t.Errorf("lastScaleTime = %v, want %v", st.LastScaleTime, t0)
	}
	if len(st.CurrentMetrics) != 1 || st.CurrentMetrics[0].Resource == nil || st.CurrentMetrics[0].Resource.Current.AverageUtilization == nil ||
		*st.CurrentMetrics[0].Resource.Current.AverageUtilization != 100 {
		t.Errorf("currentMetrics = %+v, want cpu at 100%%", st.CurrentMetrics)
	}
	able := findCond(st.Conditions, "AbleToScale")
	if able.Status != "True" || able.Reason != "SucceededRescale" || able.Message != "the HPA controller was able to update the target scale to 4" {
		t.Errorf("AbleToScale = %+v", able)
	}
	if c := findCond(st.Conditions, "ScalingActive"); c.Status != "True" || c.Reason != "ValidMetricFound" {
		t.Errorf("ScalingActive = %+v", c)
	}
	if c := findCond(st.Conditions, "ScalingLimited"); c.Status != "False" || c.Reason != "DesiredWithinRange" {
		t.Errorf("ScalingLimited = %+v", c)
	}
	// Events go on the HPA object, in upstream's words (no autoscaler name prefix), the reason
	// being the decision's sentence.
	ev := w.c.events()
	if want := "Normal SuccessfulRescale New size: 4; reason: scale up 2 -> 4: cpu utilization 100% of 50% target proposes 4 involvedObject{kind=HorizontalPodAutoscaler,apiVersion=autoscaling/v2}"; !slices.Contains(ev, want) {
		t.Errorf("events = %q, want %q", ev, want)
	}
	if n := w.statusWrites(); n != 1 {
		t.Errorf("%d status writes after one sync, want 1", n)
	}

	// At target: the status changes (desired stays 4, AbleToScale's reason changes) but
	// AbleToScale's status does not, so its transition time stays.
	w.c.setCPU("web", 2, "250m")
	w.clk.Add(15 * time.Second)
	if err := w.sync(t); err != nil {
		t.Fatal(err)
	}
	st2 := w.object(t).Status
	able2 := findCond(st2.Conditions, "AbleToScale")
	if able2.Reason != "ReadyForNewScale" || !able2.LastTransitionTime.Equal(&able.LastTransitionTime) {
		t.Errorf("AbleToScale = %+v, want ReadyForNewScale since %v", able2, able.LastTransitionTime)
	}
	if st2.DesiredReplicas != 4 || st2.CurrentReplicas != 4 || !st2.LastScaleTime.Equal(st.LastScaleTime) {
		t.Errorf("status = %+v, want 4/4 and the first lastScaleTime", st2)
	}
	writes := w.statusWrites()

	// Nothing changes: no status write.
	w.clk.Add(15 * time.Second)
	if err := w.sync(t); err != nil {
		t.Fatal(err)
	}
	if n := w.statusWrites(); n != writes {
		t.Errorf("%d status writes after an unchanged sync, want %d", n, writes)
	}
	if got := testutil.ToFloat64(w.s.tel.statusWrites.WithLabelValues("unchanged")); got != 1 {
		t.Errorf("unchanged status writes = %v, want 1", got)
	}

	// The metric fails: ScalingActive turns False now, desiredReplicas stays.
	w.c.metricErr = errors.New("metrics API down")
	w.clk.Add(15 * time.Second)
	_ = w.sync(t)
	st3 := w.object(t).Status
	active := findCond(st3.Conditions, "ScalingActive")
	if active.Status != "False" || active.Reason != "FailedGetResourceMetric" || !active.LastTransitionTime.Time.Equal(w.clk.Now()) {
		t.Errorf("ScalingActive = %+v, want False FailedGetResourceMetric since %v", active, w.clk.Now())
	}
	if st3.DesiredReplicas != 4 {
		t.Errorf("desiredReplicas = %d with every metric failing, want the previous 4", st3.DesiredReplicas)
	}
}

func TestHPAStatusObjectErrors(t *testing.T) {
	t.Run("unknown target kind: FailedGetScale condition and event, nothing else", func(t *testing.T) {
		w := newHPAWorld(t, strings.Replace(webHPA, "kind: Deployment", "kind: Rollout", 1))
		if err := w.sync(t); err == nil {
			t.Fatal("sync of an HPA whose target kind is unknown succeeded")
		}
		st := w.object(t).Status
		c := findCond(st.Conditions, "AbleToScale")
		if c.Status != "False" || c.Reason != "FailedGetScale" || !strings.Contains(c.Message, "the HPA controller was unable to get the target's current scale: ") || !strings.Contains(c.Message, "Rollout") {
			t.Errorf("AbleToScale = %+v, want False FailedGetScale naming the kind", c)
		}
		if st.ObservedGeneration != nil || st.CurrentReplicas != 0 {
			t.Errorf("status = %+v, want only the condition", st)
		}
		if ev := w.c.events(); !hasEvent(ev, ReasonFailedGetScale) || !strings.Contains(strings.Join(ev, ""), "kind=HorizontalPodAutoscaler") {
			t.Errorf("events = %q, want FailedGetScale on the HPA", ev)
		}
	})
	t.Run("conflict: re-read and written over the fresh object", func(t *testing.T) {
		w := newHPAWorld(t, webHPA)
		conflicts := 1
		w.cs.PrependReactor("update", "horizontalpodautoscalers", func(a k8stesting.Action) (bool, runtime.Object, error) {
			if a.GetSubresource() == "status" && conflicts > 0 {
				conflicts--
				return true, nil, apierrors.NewConflict(hpaResource.GroupResource(), "web-hpa", errors.New("modified"))
			}
			return false, nil, nil
		})
		if err := w.sync(t); err != nil {
			t.Fatal(err)
		}
		if n := w.statusWrites(); n != 2 {
			t.Errorf("%d status writes, want 2 (the conflict, then the retry)", n)
		}
		if st := w.object(t).Status; st.DesiredReplicas != 4 {
			t.Errorf("desiredReplicas = %d, want 4", st.DesiredReplicas)
		}
	})
	t.Run("forbidden: FailedUpdateStatus event, the scale still written", func(t *testing.T) {
		w := newHPAWorld(t, webHPA)
		w.cs.PrependReactor("update", "horizontalpodautoscalers", func(a k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(hpaResource.GroupResource(), "web-hpa", errors.New("no RBAC"))
		})
		if err := w.sync(t); err != nil {
			t.Fatal(err)
		}
		if ev := w.c.events(); !hasEvent(ev, ReasonFailedUpdateStatus) || !hasEvent(ev, ReasonSuccessfulRescale) {
			t.Errorf("events = %q, want FailedUpdateStatus and SuccessfulRescale", ev)
		}
		if got := w.c.replicas("shop", "web"); got != 4 {
			t.Errorf("replicas = %d, want 4", got)
		}
	})
	t.Run("shadow: no status write, no event", func(t *testing.T) {
		w := newHPAWorld(t, strings.Replace(webHPA, "namespace: shop", "namespace: shop\n  annotations: {hpa-recommender.io/mode: shadow}", 1))
		if err := w.sync(t); err != nil {
			t.Fatal(err)
		}
		if n := w.statusWrites(); n != 0 {
			t.Errorf("%d status writes in shadow mode, want 0", n)
		}
		if ev := w.c.events(); len(ev) != 0 {
			t.Errorf("events = %q in shadow mode, want none", ev)
		}
	})
}

// customWorld is a world whose autoscaler is the CentralHorizontalPodAutoscaler shop/web-hpa
// (webHPA under the custom resource's kind) in a fake dynamic client (the custom source).
type customWorld struct {
	*world
	dyn *dynamicfake.FakeDynamicClient
}

func newCustomWorld(t *testing.T, manifest string) *customWorld {
	t.Helper()
	w := newWorld(t, nil)
	var hpa autoscalingv2.HorizontalPodAutoscaler
	if err := yaml.UnmarshalStrict([]byte(manifest), &hpa); err != nil {
		t.Fatal(err)
	}
	hpa.UID, hpa.Generation, hpa.ResourceVersion = "chpa-uid", 3, "1"
	u, err := toCustom(&hpa, customFields{})
	if err != nil {
		t.Fatal(err)
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{v1alpha1.GroupVersionResource: v1alpha1.Kind + "List"}, u)
	w.c.kube.Dynamic = dyn
	a, err := customAutoscaler(u)
	if err != nil {
		t.Fatal(err)
	}
	w.s.SetAutoscalers([]*Autoscaler{a})
	return &customWorld{world: w, dyn: dyn}
}

// object is the custom resource as the fake API server holds it.
func (w *customWorld) object(t *testing.T) *v1alpha1.CentralHorizontalPodAutoscaler {
	t.Helper()
	u, err := w.dyn.Resource(v1alpha1.GroupVersionResource).Namespace("shop").Get(t.Context(), "web-hpa", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var c v1alpha1.CentralHorizontalPodAutoscaler
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.UnstructuredContent(), &c); err != nil {
		t.Fatal(err)
	}
	return &c
}

func (w *customWorld) statusWrites() int {
	n := 0
	for _, a := range w.dyn.Actions() {
		if a.GetVerb() == "update" && a.GetSubresource() == "status" {
			n++
		}
	}
	return n
}

// The custom resource's status is the HPA's plus the explanation and the REFERENCE and
// TARGETS columns as kubectl get hpa prints them; they follow the status, and a sync that
// changes none of them writes nothing.
func TestSyncWritesCustomStatusColumns(t *testing.T) {
	w := newCustomWorld(t, webHPA)
	// 2 pods at 100% of their request, target 50%: scale to 4.
	if err := w.sync(t); err != nil {
		t.Fatal(err)
	}
	st := w.object(t).Status
	if st.Reference != "Deployment/web" || st.Targets != "cpu: 100%/50%" {
		t.Errorf("reference, targets = %q, %q; want Deployment/web, cpu: 100%%/50%%", st.Reference, st.Targets)
	}
	if st.CurrentReplicas != 2 || st.DesiredReplicas != 4 {
		t.Errorf("status = %+v, want current 2, desired 4", st)
	}
	// status.explanation is the decision's sentence, the reason of its SuccessfulRescale event.
	sentence := "scale up 2 -> 4: cpu utilization 100% of 50% target proposes 4"
	if st.Explanation != sentence {
		t.Errorf("status.explanation = %q, want %q", st.Explanation, sentence)
	}
	if ev, want := w.c.events(), "Normal SuccessfulRescale New size: 4; reason: "+sentence; !slices.Contains(ev, want) {
		t.Errorf("events = %q, want %q", ev, want)
	}

	// At target: the columns follow currentMetrics.
	w.c.setCPU("web", 2, "250m")
	w.clk.Add(15 * time.Second)
	if err := w.sync(t); err != nil {
		t.Fatal(err)
	}
	if st := w.object(t).Status; st.Targets != "cpu: 50%/50%" || st.Reference != "Deployment/web" {
		t.Errorf("reference, targets = %q, %q after the scale-up; want Deployment/web, cpu: 50%%/50%%", st.Reference, st.Targets)
	}
	writes := w.statusWrites()

	// Nothing changes: no status write, the columns included.
	w.clk.Add(15 * time.Second)
	if err := w.sync(t); err != nil {
		t.Fatal(err)
	}
	if n := w.statusWrites(); n != writes {
		t.Errorf("%d status writes after an unchanged sync, want %d", n, writes)
	}
	if got := testutil.ToFloat64(w.s.tel.statusWrites.WithLabelValues("unchanged")); got != 1 {
		t.Errorf("unchanged status writes = %v, want 1", got)
	}

	// A status written before the columns existed (a newer resourceVersion without them, the
	// rest as the last write left it): the next sync writes them though nothing else changed.
	old := w.object(t)
	old.ResourceVersion = "2"
	old.Status.Reference, old.Status.Targets = "", ""
	h := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: old.ObjectMeta, Spec: old.Spec, Status: old.Status.HorizontalPodAutoscalerStatus}
	u, err := toCustom(h, customFields{explanation: old.Status.Explanation})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.dyn.Resource(v1alpha1.GroupVersionResource).Namespace("shop").Update(t.Context(), u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	a, err := customAutoscaler(u)
	if err != nil {
		t.Fatal(err)
	}
	w.s.SetAutoscalers([]*Autoscaler{a})
	writes = w.statusWrites()
	w.clk.Add(15 * time.Second)
	if err := w.sync(t); err != nil {
		t.Fatal(err)
	}
	if n := w.statusWrites(); n != writes+1 {
		t.Errorf("%d status writes after a sync over a status without the columns, want %d", n, writes+1)
	}
	got := w.object(t).Status
	if got.Reference != "Deployment/web" || got.Targets != "cpu: 50%/50%" {
		t.Errorf("reference, targets = %q, %q; want them written again", got.Reference, got.Targets)
	}
	if diff := cmp.Diff(got.HorizontalPodAutoscalerStatus, old.Status.HorizontalPodAutoscalerStatus); diff != "" {
		t.Errorf("the HPA status changed (-got +want):\n%s", diff)
	}

	// The metric fails: TARGETS shows it unknown, as kubectl get hpa does.
	w.c.metricErr = errors.New("metrics API down")
	w.clk.Add(15 * time.Second)
	_ = w.sync(t)
	if st := w.object(t).Status; st.Targets != "cpu: <unknown>/50%" {
		t.Errorf("targets = %q with the metric failing, want cpu: <unknown>/50%%", st.Targets)
	}
}
