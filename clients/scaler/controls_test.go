package scaler

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
	"github.com/hpa-recommender/hpa-recommender/store/memstore"
)

func TestParseControls(t *testing.T) {
	tests := []struct {
		name string
		ann  map[string]string
		want Controls
		// problems are substrings, one per expected problem, in order.
		problems []string
	}{
		{name: "none", ann: nil, want: Controls{}},
		{name: "other annotations ignored", ann: map[string]string{"example.com/x": "1", "hpa-recommender.io/unknown-key": "x"}, want: Controls{}},
		{name: "shadow", ann: map[string]string{ModeAnnotation: "Shadow"}, want: Controls{Shadow: true}},
		{name: "unknown mode holds", ann: map[string]string{ModeAnnotation: "shadwo"}, want: Controls{Paused: true},
			problems: []string{`annotation hpa-recommender.io/mode: "shadwo" is not a mode`}},
		{name: "paused", ann: map[string]string{PausedAnnotation: "true"}, want: Controls{Paused: true}},
		{name: "paused false", ann: map[string]string{PausedAnnotation: "false"}, want: Controls{}},
		{name: "paused unreadable holds", ann: map[string]string{PausedAnnotation: "yes please"}, want: Controls{Paused: true},
			problems: []string{`annotation hpa-recommender.io/paused: "yes please" is not "true" or "false"; read as "true" (held at the current count)`}},
		{name: "paused-replicas", ann: map[string]string{PausedReplicasAnnotation: "0"}, want: Controls{PausedReplicas: ptr(int32(0))}},
		{name: "paused-replicas negative holds", ann: map[string]string{PausedReplicasAnnotation: "-2"}, want: Controls{Paused: true},
			problems: []string{`annotation hpa-recommender.io/paused-replicas: "-2" is not a replica count`}},
		{name: "paused-replicas wins over paused", ann: map[string]string{PausedAnnotation: "true", PausedReplicasAnnotation: "4"},
			want: Controls{Paused: true, PausedReplicas: ptr(int32(4))}},
		{name: "one direction", ann: map[string]string{PausedScaleInAnnotation: "true", PausedScaleOutAnnotation: "False"}, want: Controls{PausedScaleIn: true}},
		{name: "one direction unreadable pauses it", ann: map[string]string{PausedScaleOutAnnotation: "on"}, want: Controls{PausedScaleOut: true},
			problems: []string{`paused-scale-out: "on" is not "true" or "false"; read as "true" (no scale-out)`}},
		{name: "fallback to a count, default after", ann: map[string]string{FallbackReplicasAnnotation: "5"},
			want: Controls{Fallback: &FallbackControl{Replicas: 5, After: 3}}},
		{name: "fallback current after 1", ann: map[string]string{FallbackReplicasAnnotation: "current", FallbackAfterAnnotation: "1"},
			want: Controls{Fallback: &FallbackControl{Mode: FallbackCurrent, After: 1}}},
		{name: "fallback current-if-higher", ann: map[string]string{FallbackReplicasAnnotation: "current-if-higher"},
			want: Controls{Fallback: &FallbackControl{Mode: FallbackCurrentIfHigher, After: 3}}},
		{name: "fallback unreadable is off", ann: map[string]string{FallbackReplicasAnnotation: "max"}, want: Controls{},
			problems: []string{`fallback-replicas: "max" is not a replica count, "current" or "current-if-higher"; the metrics fallback is off`}},
		{name: "fallback-after zero turns it off", ann: map[string]string{FallbackReplicasAnnotation: "5", FallbackAfterAnnotation: "0"}, want: Controls{},
			problems: []string{`fallback-after: "0" is not a number of syncs`}},
		{name: "fallback-after alone does nothing", ann: map[string]string{FallbackAfterAnnotation: "2"}, want: Controls{}},
		{name: "sync-period", ann: map[string]string{SyncPeriodAnnotation: "5s"}, want: Controls{SyncPeriod: 5 * time.Second}},
		{name: "sync-period bounds are inclusive", ann: map[string]string{SyncPeriodAnnotation: "10m"}, want: Controls{SyncPeriod: 10 * time.Minute}},
		{name: "sync-period too short", ann: map[string]string{SyncPeriodAnnotation: "500ms"}, want: Controls{},
			problems: []string{`sync-period: "500ms" is outside [1s, 10m0s]; --sync-period applies`}},
		{name: "sync-period not a duration", ann: map[string]string{SyncPeriodAnnotation: "5"}, want: Controls{},
			problems: []string{`sync-period: "5" is not a duration`}},
		{name: "every problem listed", ann: map[string]string{PausedAnnotation: "?", SyncPeriodAnnotation: "1h", FallbackReplicasAnnotation: "-1"},
			want: Controls{Paused: true}, problems: []string{"fallback-replicas", "paused", "sync-period"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := parseControls(tc.ann)
			if diff := cmp.Diff(got, tc.want, cmpopts.IgnoreFields(Controls{}, "Problems")); diff != "" {
				t.Errorf("controls (-got +want):\n%s", diff)
			}
			if len(got.Problems) != len(tc.problems) {
				t.Fatalf("problems = %q, want %d", got.Problems, len(tc.problems))
			}
			for i, p := range tc.problems {
				if !strings.Contains(got.Problems[i], p) {
					t.Errorf("problem %d = %q, want it to contain %q", i, got.Problems[i], p)
				}
			}
		})
	}
}

func TestControlsOnEverySource(t *testing.T) {
	meta := metav1.ObjectMeta{Namespace: "shop", Name: "web-hpa", Annotations: map[string]string{PausedAnnotation: "true", SyncPeriodAnnotation: "2s"}}
	spec := autoscalingv2.HorizontalPodAutoscalerSpec{ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: "web"}, MaxReplicas: 3}
	fromHPA := hpaAutoscaler(&autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: meta, Spec: spec})
	u, err := toCustom(&autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: meta, Spec: spec}, customFields{})
	if err != nil {
		t.Fatal(err)
	}
	fromCustom, err := customAutoscaler(&unstructured.Unstructured{Object: u.Object})
	if err != nil {
		t.Fatal(err)
	}
	manifests, err := parseManifests("m.yaml", []byte(annotate(webHPA, `hpa-recommender.io/paused: "true", hpa-recommender.io/sync-period: 2s`)))
	if err != nil {
		t.Fatal(err)
	}
	want := Controls{Paused: true, SyncPeriod: 2 * time.Second}
	for name, a := range map[string]*Autoscaler{"hpa": fromHPA, "custom": fromCustom, "manifests": manifests[0]} {
		if diff := cmp.Diff(a.Controls, want); diff != "" {
			t.Errorf("%s: controls (-got +want):\n%s", name, diff)
		}
	}
}

func TestFallbackReplicas(t *testing.T) {
	tests := []struct {
		name                string
		f                   FallbackControl
		cur, lastGood, want int32
	}{
		{"count", FallbackControl{Replicas: 5}, 2, 3, 5},
		{"count above max", FallbackControl{Replicas: 50}, 2, 3, 10},
		{"count below min", FallbackControl{Replicas: 0}, 2, 3, 1},
		{"current", FallbackControl{Mode: FallbackCurrent}, 7, 3, 7},
		{"current outside the range", FallbackControl{Mode: FallbackCurrent}, 12, 3, 10},
		{"current-if-higher: current higher", FallbackControl{Mode: FallbackCurrentIfHigher}, 7, 4, 7},
		{"current-if-higher: last decision higher", FallbackControl{Mode: FallbackCurrentIfHigher}, 2, 4, 4},
		{"current-if-higher: no decision yet", FallbackControl{Mode: FallbackCurrentIfHigher}, 2, -1, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := fallbackReplicas(&tc.f, tc.cur, tc.lastGood, 1, 10); got != tc.want {
				t.Errorf("fallbackReplicas = %d, want %d", got, tc.want)
			}
		})
	}
}

// annotate adds annotations (a YAML flow mapping's contents) to a manifest of namespace shop.
func annotate(manifest, annotations string) string {
	return strings.Replace(manifest, "namespace: shop\n", "namespace: shop\n  annotations: {"+annotations+"}\n", 1)
}

// setAnnotations replaces the HPA object's annotations, as kubectl annotate would, and hands
// the scaler the new version, as its informer would.
func (w *hpaWorld) setAnnotations(t *testing.T, ann map[string]string) {
	t.Helper()
	h := w.object(t)
	h.Annotations = ann
	h, err := w.cs.AutoscalingV2().HorizontalPodAutoscalers("shop").Update(t.Context(), h, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.s.SetAutoscalers([]*Autoscaler{hpaAutoscaler(h)})
}

func countEvents(events []string, reason string) int {
	n := 0
	for _, e := range events {
		if strings.Contains(e, " "+reason+" ") {
			n++
		}
	}
	return n
}

// TestPausedHoldsAndStillExplains: paused "true" on an HPA object whose load wants 4 of 2:
// nothing is written to the scale, the service is asked with dryRun (it stores nothing), the
// status shows the current metrics, desired = current and ScalingActive False ScalingPaused;
// one ScalingPaused event. Removing the annotation resumes scaling, with ScalingResumed.
func TestPausedHoldsAndStillExplains(t *testing.T) {
	w := newHPAWorld(t, annotate(webHPA, `hpa-recommender.io/paused: "true"`))
	for range 2 {
		if err := w.sync(t); err != nil {
			t.Fatal(err)
		}
		w.clk.Add(15 * time.Second)
	}
	if n := w.c.updates(); n != 0 {
		t.Fatalf("%d scale writes while paused", n)
	}
	if !w.rec.last().GetDryRun() {
		t.Error("a paused autoscaler asked without dryRun")
	}
	if _, err := w.svc.client.GetTarget(t.Context(), &pb.GetTargetRequest{Target: &pb.TargetRef{Cluster: "c1", Namespace: "shop", Name: "web-hpa"}}); status.Code(err) != codes.NotFound {
		t.Errorf("GetTarget while paused = %v, want NotFound (a dry run stores nothing)", err)
	}
	st := w.object(t).Status
	if st.CurrentReplicas != 2 || st.DesiredReplicas != 2 {
		t.Errorf("current/desired = %d/%d, want 2/2", st.CurrentReplicas, st.DesiredReplicas)
	}
	if len(st.CurrentMetrics) != 1 || st.CurrentMetrics[0].Resource == nil || *st.CurrentMetrics[0].Resource.Current.AverageUtilization != 100 {
		t.Errorf("currentMetrics = %+v, want cpu at 100%% (the dry run's)", st.CurrentMetrics)
	}
	active := findCond(st.Conditions, "ScalingActive")
	if active.Status != "False" || active.Reason != ReasonScalingPaused || !strings.Contains(active.Message, PausedAnnotation) {
		t.Errorf("ScalingActive = %+v, want False ScalingPaused naming the annotation", active)
	}
	if c := findCond(st.Conditions, string(condAnnotationsValid)); c.Type != "" {
		t.Errorf("AnnotationsValid = %+v on an object whose annotations were always valid, want none", c)
	}
	ev := w.c.events()
	if n := countEvents(ev, ReasonScalingPaused); n != 1 {
		t.Errorf("events = %q, want one ScalingPaused", ev)
	}

	w.setAnnotations(t, nil)
	if err := w.sync(t); err != nil {
		t.Fatal(err)
	}
	if got, want := w.c.writes, []int32{4}; !equal(got, want) {
		t.Errorf("writes after the pause = %v, want %v", got, want)
	}
	if ev := w.c.events(); !hasEvent(ev, ReasonScalingResumed) || !hasEvent(ev, ReasonSuccessfulRescale) {
		t.Errorf("events = %q, want ScalingResumed and SuccessfulRescale", ev)
	}
	if c := findCond(w.object(t).Status.Conditions, "ScalingActive"); c.Status != "True" {
		t.Errorf("ScalingActive = %+v after the pause, want True", c)
	}
}

// TestPausedReplicas: paused-replicas "6" scales to 6 once and holds there, whatever the load
// and even while the service is unreachable.
func TestPausedReplicas(t *testing.T) {
	w := newHPAWorld(t, annotate(webHPA, `hpa-recommender.io/paused-replicas: "6"`))
	if err := w.sync(t); err != nil {
		t.Fatal(err)
	}
	if got, want := w.c.writes, []int32{6}; !equal(got, want) {
		t.Fatalf("writes = %v, want %v", got, want)
	}
	ev := strings.Join(w.c.events(), "\n")
	if !strings.Contains(ev, "SuccessfulRescale New size: 6; reason: paused at 6 by annotation hpa-recommender.io/paused-replicas") {
		t.Errorf("events = %q, want SuccessfulRescale naming the annotation", ev)
	}
	st := w.object(t).Status
	if st.DesiredReplicas != 6 || st.LastScaleTime == nil {
		t.Errorf("status = %+v, want desired 6 and a lastScaleTime", st)
	}
	w.c.setCPU("web", 2, "50m") // 10%: the service would scale in
	w.svc.stop()
	for range 2 {
		w.clk.Add(time.Minute)
		if err := w.sync(t); err != nil {
			t.Fatal(err)
		}
	}
	if got := w.c.replicas("shop", "web"); got != 6 || len(w.c.writes) != 1 {
		t.Errorf("replicas = %d, writes = %v: want held at 6 with one write", got, w.c.writes)
	}
	if c := findCond(w.object(t).Status.Conditions, "ScalingActive"); c.Reason != ReasonScalingPaused {
		t.Errorf("ScalingActive = %+v with the service down, want ScalingPaused", c)
	}
}

// TestPausedDirection: paused-scale-out holds a scale-up the load asks for (the service
// decides with scaleUp's selectPolicy Disabled, ScalingLimited names the pause) and lets a
// scale-down through; paused-scale-in holds even upstream's correction of a count above
// maxReplicas, and reports that decision as not applied.
func TestPausedDirection(t *testing.T) {
	t.Run("scale-out paused", func(t *testing.T) {
		w := newHPAWorld(t, annotate(webHPA, `hpa-recommender.io/paused-scale-out: "true"`))
		if err := w.sync(t); err != nil {
			t.Fatal(err)
		}
		if n := w.c.updates(); n != 0 {
			t.Fatalf("%d scale writes with scale-out paused and load wanting 4", n)
		}
		if p := w.rec.last().GetSpec().GetBehavior().GetScaleUp().GetSelectPolicy(); p != "Disabled" {
			t.Errorf("scaleUp selectPolicy sent = %q, want Disabled", p)
		}
		if p := w.rec.last().GetSpec().GetBehavior().GetScaleDown().GetSelectPolicy(); p != "" {
			t.Errorf("scaleDown selectPolicy sent = %q, want unset", p)
		}
		c := findCond(w.object(t).Status.Conditions, "ScalingLimited")
		if c.Status != "True" || c.Reason != reasonScaleOutPaused || !strings.Contains(c.Message, PausedScaleOutAnnotation) {
			t.Errorf("ScalingLimited = %+v, want True ScaleOutPaused", c)
		}
		// Scale-in still works (the one-minute window of webHPA passes first).
		w.c.setCPU("web", 2, "50m")
		for range 6 {
			w.clk.Add(15 * time.Second)
			if err := w.sync(t); err != nil {
				t.Fatal(err)
			}
		}
		if got, want := w.c.writes, []int32{1}; !equal(got, want) {
			t.Errorf("writes = %v, want %v (scale-in is not paused)", got, want)
		}
	})
	t.Run("scale-in paused above maxReplicas", func(t *testing.T) {
		w := newWorld(t, nil, annotate(webHPA, `hpa-recommender.io/paused-scale-in: "true"`))
		w.c.addDeployment("shop", "web", 12, "app=web")
		if err := w.sync(t); err != nil {
			t.Fatal(err)
		}
		if n := w.c.updates(); n != 0 || w.c.replicas("shop", "web") != 12 {
			t.Fatalf("%d scale writes, replicas %d: want 12 held", n, w.c.replicas("shop", "web"))
		}
		if len(w.rec.reports) != 1 || w.rec.reports[0].GetSucceeded() || !strings.Contains(w.rec.reports[0].GetError(), PausedScaleInAnnotation) {
			t.Errorf("reports = %v, want the decision reported as not applied, naming the annotation", w.rec.reports)
		}
	})
}

// fallbackWorld is an HPA object with the metrics API failing from the second sync on; the
// first sync, with working metrics, scales 2 -> 4.
func fallbackWorld(t *testing.T, annotations string) *hpaWorld {
	t.Helper()
	w := newHPAWorld(t, annotate(webHPA, annotations))
	if err := w.sync(t); err != nil {
		t.Fatal(err)
	}
	if got := w.c.replicas("shop", "web"); got != 4 {
		t.Fatalf("replicas = %d after the first sync, want 4", got)
	}
	w.c.metricErr = errors.New("metrics API down")
	w.c.events()
	return w
}

// TestMetricsFallback: with fallback-replicas "7" and fallback-after "2", the first failed sync
// holds (upstream's rule), the second scales to 7 with a FallbackActive event and the Fallback
// condition True; later failed syncs hold 7; when the metric works again the fallback ends
// (FallbackEnded, Fallback False) and the autoscaler decides from its metrics again.
func TestMetricsFallback(t *testing.T) {
	w := fallbackWorld(t, `hpa-recommender.io/fallback-replicas: "7", hpa-recommender.io/fallback-after: "2"`)
	step := func() {
		t.Helper()
		w.clk.Add(15 * time.Second)
		if err := w.sync(t); err != nil {
			t.Fatal(err)
		}
	}
	step()
	if got := w.c.replicas("shop", "web"); got != 4 {
		t.Fatalf("replicas = %d after one failed sync, want 4 (held)", got)
	}
	if c := findCond(w.object(t).Status.Conditions, string(condFallback)); c.Type != "" {
		t.Errorf("Fallback = %+v before the fallback, want none", c)
	}
	step()
	if got, want := w.c.writes, []int32{4, 7}; !equal(got, want) {
		t.Fatalf("writes = %v, want %v", got, want)
	}
	st := w.object(t).Status
	fb := findCond(st.Conditions, string(condFallback))
	if fb.Status != "True" || fb.Reason != ReasonFallbackActive || !strings.Contains(fb.Message, `hpa-recommender.io/fallback-replicas: "7"`) {
		t.Errorf("Fallback = %+v, want True FallbackActive naming the annotation", fb)
	}
	if st.DesiredReplicas != 7 {
		t.Errorf("desiredReplicas = %d, want 7", st.DesiredReplicas)
	}
	ev := w.c.events()
	if !hasEvent(ev, ReasonFallbackActive) || !strings.Contains(strings.Join(ev, "\n"), "New size: 7; reason: metrics fallback") {
		t.Errorf("events = %q, want FallbackActive and the rescale naming the fallback", ev)
	}
	step()
	if n := len(w.c.writes); n != 2 {
		t.Errorf("writes = %v, want the fallback held without another write", w.c.writes)
	}
	if ev := w.c.events(); hasEvent(ev, ReasonFallbackActive) {
		t.Errorf("events = %q, want FallbackActive only when the fallback starts", ev)
	}

	// Recovery: 7 pods at 250m of 500m (50%) is at target: no scale; the fallback ends.
	w.c.metricErr = nil
	w.c.addPods("shop", "web", 7, "250m")
	step()
	if n := len(w.c.writes); n != 2 {
		t.Errorf("writes = %v after recovery at target, want none more", w.c.writes)
	}
	if ev := w.c.events(); !hasEvent(ev, ReasonFallbackEnded) {
		t.Errorf("events = %q, want FallbackEnded", ev)
	}
	if c := findCond(w.object(t).Status.Conditions, string(condFallback)); c.Status != "False" {
		t.Errorf("Fallback = %+v after recovery, want False", c)
	}
}

// TestMetricsFallbackModes: "current" keeps the count (the condition still says the fallback
// decides); "current-if-higher" restores the last count decided from working metrics after a
// manual scale-in, and keeps a higher count; without the annotation upstream's hold applies
// and no Fallback condition appears. A selector problem never counts as a metric failure.
func TestMetricsFallbackModes(t *testing.T) {
	run := func(t *testing.T, w *hpaWorld, syncs int) {
		t.Helper()
		for range syncs {
			w.clk.Add(15 * time.Second)
			if err := w.sync(t); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Run("current", func(t *testing.T) {
		w := fallbackWorld(t, `hpa-recommender.io/fallback-replicas: current, hpa-recommender.io/fallback-after: "1"`)
		run(t, w, 2)
		if got := w.c.replicas("shop", "web"); got != 4 || len(w.c.writes) != 1 {
			t.Errorf("replicas = %d, writes %v: want 4 kept", got, w.c.writes)
		}
		if c := findCond(w.object(t).Status.Conditions, string(condFallback)); c.Status != "True" {
			t.Errorf("Fallback = %+v, want True", c)
		}
	})
	t.Run("current-if-higher below the last decision", func(t *testing.T) {
		w := fallbackWorld(t, `hpa-recommender.io/fallback-replicas: current-if-higher, hpa-recommender.io/fallback-after: "1"`)
		w.c.addDeployment("shop", "web", 2, "app=web") // kubectl scale --replicas 2
		run(t, w, 1)
		if got := w.c.replicas("shop", "web"); got != 4 {
			t.Errorf("replicas = %d, want 4 (the last decision from working metrics)", got)
		}
	})
	t.Run("current-if-higher above the last decision", func(t *testing.T) {
		w := fallbackWorld(t, `hpa-recommender.io/fallback-replicas: current-if-higher, hpa-recommender.io/fallback-after: "1"`)
		w.c.addDeployment("shop", "web", 6, "app=web")
		run(t, w, 1)
		if got := w.c.replicas("shop", "web"); got != 6 {
			t.Errorf("replicas = %d, want 6 kept", got)
		}
	})
	t.Run("off", func(t *testing.T) {
		w := fallbackWorld(t, `hpa-recommender.io/fallback-after: "1"`)
		run(t, w, 4)
		if got := w.c.replicas("shop", "web"); got != 4 || len(w.c.writes) != 1 {
			t.Errorf("replicas = %d, writes %v: want 4 held", got, w.c.writes)
		}
		if c := findCond(w.object(t).Status.Conditions, string(condFallback)); c.Type != "" {
			t.Errorf("Fallback = %+v without the annotation, want none", c)
		}
	})
	t.Run("selector problem", func(t *testing.T) {
		ts := &targetState{}
		countMetricFailures(ts, &gathered{req: &pb.RecommendRequest{Metrics: []*pb.MetricObservation{{Error: "x"}}}})
		countMetricFailures(ts, &gathered{req: &pb.RecommendRequest{Metrics: []*pb.MetricObservation{{Error: "x"}}}, selectorProblem: true})
		if ts.failedSyncs != 0 {
			t.Errorf("failedSyncs = %d after an ambiguous selector, want the run broken", ts.failedSyncs)
		}
	})
}

// TestInvalidAnnotations: an unreadable pause and an out-of-range sync-period on an HPA object:
// the object is still synced, held (the safe reading of the pause), with AnnotationsValid
// False naming both and one InvalidAnnotation event; once fixed, AnnotationsValid is True.
func TestInvalidAnnotations(t *testing.T) {
	w := newHPAWorld(t, annotate(webHPA, `hpa-recommender.io/paused: "yes", hpa-recommender.io/sync-period: 1h`))
	for range 2 {
		if err := w.sync(t); err != nil {
			t.Fatal(err)
		}
		w.clk.Add(15 * time.Second)
	}
	if n := w.c.updates(); n != 0 {
		t.Errorf("%d scale writes with an unreadable pause, want it held", n)
	}
	c := findCond(w.object(t).Status.Conditions, string(condAnnotationsValid))
	if c.Status != "False" || c.Reason != ReasonInvalidAnnotation || !strings.Contains(c.Message, PausedAnnotation+`: "yes"`) || !strings.Contains(c.Message, SyncPeriodAnnotation+`: "1h" is outside`) {
		t.Errorf("AnnotationsValid = %+v, want False InvalidAnnotation naming both", c)
	}
	if n := countEvents(w.c.events(), ReasonInvalidAnnotation); n != 1 {
		t.Errorf("InvalidAnnotation events = %d over two syncs, want 1", n)
	}
	if p := w.s.periods()["shop/web-hpa"]; p != w.s.cfg.SyncPeriod {
		t.Errorf("period = %v, want --sync-period %v", p, w.s.cfg.SyncPeriod)
	}
	w.setAnnotations(t, map[string]string{SyncPeriodAnnotation: "20s"})
	if err := w.sync(t); err != nil {
		t.Fatal(err)
	}
	if c := findCond(w.object(t).Status.Conditions, string(condAnnotationsValid)); c.Status != "True" {
		t.Errorf("AnnotationsValid = %+v once fixed, want True", c)
	}
	if p := w.s.periods()["shop/web-hpa"]; p != 20*time.Second {
		t.Errorf("period = %v, want 20s", p)
	}
}

// TestSyncPeriodAnnotation runs the sync loop with a one-hour --sync-period: the autoscaler
// annotated sync-period 1s is synced every second, the other at most once.
func TestSyncPeriodAnnotation(t *testing.T) {
	clk := newClock()
	c := newCluster()
	svc := startService(t, memstore.New(), clk, "127.0.0.1:0")
	rec := &concurrency{Recommender: svc.client, perTarget: map[string]int{}}
	var manifests []string
	for _, name := range []string{"fast", "slow"} {
		c.addDeployment("shop", name, 2, "app="+name)
		c.addPods("shop", name, 2, "250m")
		m := strings.ReplaceAll(webHPA, "name: web-hpa", "name: "+name)
		m = strings.ReplaceAll(m, "name: web}", "name: "+name+"}")
		if name == "fast" {
			m = annotate(m, `hpa-recommender.io/sync-period: 1s`)
		}
		manifests = append(manifests, m)
	}
	s := newScaler(t, c.kube, rec, clk, func(cfg *Config) { cfg.SyncPeriod = time.Hour; cfg.SyncJitter = 0 }, manifests...)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); s.syncLoop(ctx) }()
	time.Sleep(3500 * time.Millisecond)
	cancel()
	<-done
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if n := rec.perTarget["fast"]; n < 3 || n > 5 {
		t.Errorf("fast synced %d times in 3.5 s with sync-period 1s, want 3 to 5", n)
	}
	if n := rec.perTarget["slow"]; n > 1 {
		t.Errorf("slow synced %d times in 3.5 s with --sync-period 1h, want at most 1", n)
	}
}
