package scaler

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
	"github.com/hpa-recommender/hpa-recommender/server"
	"github.com/hpa-recommender/hpa-recommender/store/memstore"
)

// world is one test's cluster, service and scaler.
type world struct {
	clk *clock
	c   *cluster
	svc *service
	rec *recording
	s   *Scaler
}

func newWorld(t *testing.T, mutate func(*Config), manifests ...string) *world {
	t.Helper()
	w := &world{clk: newClock(), c: newCluster()}
	w.svc = startService(t, memstore.New(), w.clk, "127.0.0.1:0")
	w.rec = &recording{Recommender: w.svc.client, failWith: status.Error(codes.Unavailable, "injected")}
	if len(manifests) == 0 {
		manifests = []string{webHPA}
	}
	w.s = newScaler(t, w.c.kube, w.rec, w.clk, mutate, manifests...)
	w.c.addDeployment("shop", "web", 2, "app=web")
	w.c.addPods("shop", "web", 2, "500m") // 100% of the 500m request
	return w
}

func (w *world) sync(t *testing.T) error {
	t.Helper()
	return w.s.syncOne(t.Context(), w.s.mustAutoscaler(t, "shop/web-hpa"))
}

func hasEvent(events []string, reason string) bool {
	for _, e := range events {
		if strings.Contains(e, " "+reason+" ") {
			return true
		}
	}
	return false
}

func TestSyncScalesUpAndReports(t *testing.T) {
	w := newWorld(t, nil)
	if err := w.sync(t); err != nil {
		t.Fatal(err)
	}
	if got, want := w.c.writes, []int32{4}; !equal(got, want) {
		t.Fatalf("writes = %v, want %v", got, want)
	}
	if w.c.staleWrites != 0 {
		t.Errorf("%d writes without the read resourceVersion", w.c.staleWrites)
	}
	ev := w.c.events()
	if !hasEvent(ev, ReasonSuccessfulRescale) {
		t.Errorf("events = %q, want SuccessfulRescale", ev)
	}
	// Upstream's rescale message, naming the autoscaler, with the decision's sentence as reason.
	if want := "Normal SuccessfulRescale HorizontalPodAutoscaler web-hpa: New size: 4; reason: scale up 2 -> 4: cpu utilization 100% of 50% target proposes 4"; !slices.Contains(ev, want) {
		t.Errorf("events = %q, want %q", ev, want)
	}
	// What the scaler sent: the request the service decided from.
	req := w.rec.last()
	if req.GetTarget().GetCluster() != "c1" || req.GetTarget().GetName() != "web-hpa" || req.GetCurrentReplicas() != 2 || req.GetDryRun() {
		t.Errorf("request target/current/dryRun = %v %d %v", req.GetTarget(), req.GetCurrentReplicas(), req.GetDryRun())
	}
	if n := len(req.GetPods()); n != 2 {
		t.Errorf("request pods = %d, want 2", n)
	}
	if pv := req.GetMetrics()[0].GetPodValues(); len(pv) != 2 || pv[0].GetValue() != "500m" || pv[0].GetWindow().AsDuration() != 30*time.Second {
		t.Errorf("pod values = %v", pv)
	}
	// The outcome reached the service: no pending decision, one scale-up event stored.
	got := w.svc.getTarget(t, "shop", "web-hpa")
	if len(got.GetPendingDecisions()) != 0 {
		t.Errorf("pending decisions = %v, want none (ReportScale delivered)", got.GetPendingDecisions())
	}
	if ev := got.GetHistory().GetScaleUpEvents(); len(ev) != 1 || ev[0].GetChange() != 2 {
		t.Errorf("scale-up events = %v, want one of +2", ev)
	}
	// A second sync with the same load changes nothing.
	w.clk.Add(15 * time.Second)
	if err := w.sync(t); err != nil {
		t.Fatal(err)
	}
	if len(w.c.writes) != 1 {
		t.Errorf("writes = %v, want exactly one", w.c.writes)
	}
	if n := testutil.ToFloat64(w.s.tel.scaleWrites.WithLabelValues(modeService, "success")); n != 1 {
		t.Errorf("scale_writes{service,success} = %v, want 1", n)
	}
}

func equal(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestScaleDownWaitsForStabilizationWindow(t *testing.T) {
	w := newWorld(t, nil)
	w.c.setCPU("web", 2, "100m") // 20%: proposes 1
	for i := 0; i < 4; i++ {     // 0s, 15s, 30s, 45s: inside the 60s window
		if err := w.sync(t); err != nil {
			t.Fatal(err)
		}
		w.clk.Add(15 * time.Second)
	}
	if len(w.c.writes) != 0 {
		t.Fatalf("writes = %v inside the window, want none", w.c.writes)
	}
	w.clk.Add(15 * time.Second) // 75s: the seed recommendation (2) has left the window
	if err := w.sync(t); err != nil {
		t.Fatal(err)
	}
	if got, want := w.c.writes, []int32{1}; !equal(got, want) {
		t.Fatalf("writes = %v, want %v", got, want)
	}
}

func TestConflictRetriedWhileReplicasUnchanged(t *testing.T) {
	w := newWorld(t, nil)
	w.c.conflicts = 2 // e.g. a status update moved the resourceVersion twice
	if err := w.sync(t); err != nil {
		t.Fatal(err)
	}
	if got, want := w.c.writes, []int32{4}; !equal(got, want) {
		t.Fatalf("writes = %v, want %v", got, want)
	}
	if n := w.c.updates(); n != 3 {
		t.Errorf("update attempts = %d, want 3", n)
	}
	if got := w.svc.getTarget(t, "shop", "web-hpa"); len(got.GetPendingDecisions()) != 0 {
		t.Errorf("pending = %v", got.GetPendingDecisions())
	}
}

func TestConflictingManualScaleWins(t *testing.T) {
	w := newWorld(t, nil)
	w.c.conflicts = 1
	w.c.beforeConflict = func(sc *autoscalingv1.Scale) { sc.Spec.Replicas = 7 } // kubectl scale --replicas 7
	err := w.sync(t)
	if !errors.Is(err, errScaleChanged) {
		t.Fatalf("sync error = %v, want errScaleChanged", err)
	}
	if len(w.c.writes) != 0 || w.c.replicas("shop", "web") != 7 {
		t.Fatalf("writes = %v, replicas = %d: the manual scale must stand", w.c.writes, w.c.replicas("shop", "web"))
	}
	// Upstream's FailedRescale message with the sentence as reason, then the write's error.
	if ev, want := w.c.events(), "Warning FailedRescale HorizontalPodAutoscaler web-hpa: New size: 4; reason: scale up 2 -> 4: cpu utilization 100% of 50% target proposes 4; error: the target's replicas changed since the decision: spec.replicas is 7, the decision was made at 2"; !slices.Contains(ev, want) {
		t.Errorf("events = %q, want %q", ev, want)
	}
	got := w.svc.getTarget(t, "shop", "web-hpa")
	if len(got.GetPendingDecisions()) != 0 {
		t.Errorf("pending = %v, want the failure reported", got.GetPendingDecisions())
	}
	if c := condition(got.GetConditions(), "AbleToScale"); c.GetStatus() != "False" || c.GetReason() != "FailedUpdateScale" {
		t.Errorf("AbleToScale = %v, want False FailedUpdateScale", c)
	}
	if n := testutil.ToFloat64(w.s.tel.scaleWrites.WithLabelValues(modeService, "changed")); n != 1 {
		t.Errorf("scale_writes{service,changed} = %v, want 1", n)
	}
}

func condition(cs []*pb.Condition, typ string) *pb.Condition {
	for _, c := range cs {
		if c.GetType() == typ {
			return c
		}
	}
	return nil
}

func TestScaleGetFailure(t *testing.T) {
	w := newWorld(t, nil)
	w.c.getErr = apierrors.NewServiceUnavailable("etcd is sad")
	if err := w.sync(t); err == nil {
		t.Fatal("sync succeeded without a scale")
	}
	if ev := w.c.events(); !hasEvent(ev, ReasonFailedGetScale) {
		t.Errorf("events = %q, want FailedGetScale", ev)
	}
	if len(w.rec.requests) != 0 {
		t.Errorf("Recommend called %d times without a scale", len(w.rec.requests))
	}
}

func TestMetricFailureIsSentAsError(t *testing.T) {
	w := newWorld(t, nil)
	w.c.metricErr = apierrors.NewServiceUnavailable("metrics-server down")
	if err := w.sync(t); err != nil {
		t.Fatal(err)
	}
	obs := w.rec.last().GetMetrics()[0]
	if obs.GetError() == "" || len(obs.GetPodValues()) != 0 {
		t.Fatalf("observation = %v, want only an error", obs)
	}
	if !strings.Contains(obs.GetError(), "unable to fetch metrics from resource metrics API") {
		t.Errorf("error = %q", obs.GetError())
	}
	if len(w.c.writes) != 0 {
		t.Errorf("writes = %v, want none", w.c.writes)
	}
	ev := w.c.events()
	if !hasEvent(ev, "FailedGetResourceMetric") || !hasEvent(ev, ReasonFailedComputeMetricsReplicas) {
		t.Errorf("events = %q, want FailedGetResourceMetric and FailedComputeMetricsReplicas", ev)
	}
}

// twoMetricHPA adds an External metric (proposal ceil(value / 10)) to webHPA.
const twoMetricHPA = `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web-hpa, namespace: shop}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 10
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}
  - type: External
    external: {metric: {name: queue}, target: {type: AverageValue, averageValue: "10"}}
`

func TestPartialMetricFailureStillScalesUp(t *testing.T) {
	w := newWorld(t, nil, twoMetricHPA)
	w.c.external.AddReactor("list", "queue", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("adapter down")
	})
	if err := w.sync(t); err != nil {
		t.Fatal(err)
	}
	if m := w.rec.last().GetMetrics(); m[1].GetError() == "" || m[0].GetError() != "" {
		t.Fatalf("observations = %v", m)
	}
	// Upstream: with an invalid metric the valid ones may still scale up.
	if got, want := w.c.writes, []int32{4}; !equal(got, want) {
		t.Fatalf("writes = %v, want %v", got, want)
	}
	if ev := w.c.events(); !hasEvent(ev, "FailedGetExternalMetric") {
		t.Errorf("events = %q, want FailedGetExternalMetric", ev)
	}
}

const shadowHPA = `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: web-hpa
  namespace: shop
  annotations: {hpa-recommender.io/mode: shadow}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 10
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}
`

func TestShadowModeWritesNothing(t *testing.T) {
	for _, tc := range []struct {
		name     string
		mutate   func(*Config)
		manifest string
	}{
		{"annotation", nil, shadowHPA},
		{"dry-run flag", func(c *Config) { c.DryRun = true }, webHPA},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, tc.mutate, tc.manifest)
			if err := w.sync(t); err != nil {
				t.Fatal(err)
			}
			if n := w.c.updates(); n != 0 {
				t.Fatalf("%d scale updates in shadow mode", n)
			}
			if !w.rec.last().GetDryRun() {
				t.Error("request without dryRun")
			}
			if len(w.rec.reports) != 0 {
				t.Errorf("%d ReportScale calls in shadow mode", len(w.rec.reports))
			}
			if ev := w.c.events(); len(ev) != 0 {
				t.Errorf("events in shadow mode: %q", ev)
			}
			if n := testutil.ToFloat64(w.s.tel.decisions.WithLabelValues(modeShadow, "up")); n != 1 {
				t.Errorf("decisions{shadow,up} = %v, want 1", n)
			}
			if n := testutil.ToFloat64(w.s.tel.desired.WithLabelValues("shop", "web-hpa", modeShadow)); n != 4 {
				t.Errorf("desired{shadow} = %v, want 4", n)
			}
			_, err := w.svc.client.GetTarget(t.Context(), &pb.GetTargetRequest{Target: &pb.TargetRef{Cluster: "c1", Namespace: "shop", Name: "web-hpa"}})
			if status.Code(err) != codes.NotFound {
				t.Errorf("GetTarget after a dry run = %v, want NotFound (nothing stored)", err)
			}
		})
	}
}

func TestFailStaticWhenServiceUnreachable(t *testing.T) {
	w := newWorld(t, nil)
	w.svc.stop()
	for i := 0; i < 3; i++ {
		err := w.sync(t)
		if err == nil {
			t.Fatal("sync succeeded without the service")
		}
		w.clk.Add(time.Hour)
	}
	if n := w.c.updates(); n != 0 {
		t.Fatalf("%d scale updates while the service is unreachable (fail static)", n)
	}
	ev := w.c.events()
	n := 0
	for _, e := range ev {
		if strings.Contains(e, ReasonRecommenderUnavailable) {
			n++
		}
	}
	if n != 1 {
		t.Errorf("RecommenderUnavailable events = %d, want one per outage: %q", n, ev)
	}
}

// TestRefusedIsNotUnreachable: a Recommend the service refuses (here over the cluster's rate)
// fails the sync with a FailedGetRecommendation event, writes no scale, and leaves
// hpa_scaler_service_reachable at 1: the service answered.
func TestRefusedIsNotUnreachable(t *testing.T) {
	w := newWorld(t, nil)
	w.svc.stop()
	w.svc = startServiceWith(t, memstore.New(), w.clk, "127.0.0.1:0", func(c *server.Config) { c.RateLimit, c.RateBurst = 0.001, 1 })
	w.rec.Recommender = w.svc.client
	if err := w.sync(t); err != nil {
		t.Fatalf("first sync, within the burst: %v", err)
	}
	updates := w.c.updates()
	err := w.sync(t)
	if status.Code(errors.Unwrap(err)) != codes.ResourceExhausted {
		t.Fatalf("second sync over the rate: error %v, want ResourceExhausted", err)
	}
	if !hasEvent(w.c.events(), ReasonFailedGetRecommendation) {
		t.Errorf("events %q, want %s", w.c.events(), ReasonFailedGetRecommendation)
	}
	if n := w.c.updates(); n != updates {
		t.Errorf("%d scale updates after a refused Recommend, want %d", n, updates)
	}
	if v := testutil.ToFloat64(w.s.tel.serviceReachable); v != 1 {
		t.Errorf("hpa_scaler_service_reachable = %v after the service answered with a refusal, want 1", v)
	}
	w.svc.stop()
	if err := w.sync(t); err == nil {
		t.Fatal("sync succeeded without the service")
	}
	if v := testutil.ToFloat64(w.s.tel.serviceReachable); v != 0 {
		t.Errorf("hpa_scaler_service_reachable = %v with the service stopped, want 0", v)
	}
}

func TestFallbackDecidesLocallyScaleUpOnly(t *testing.T) {
	w := newWorld(t, func(c *Config) { c.FallbackAfter = time.Minute })
	w.c.setCPU("web", 2, "250m") // 50%: at target, no change; seeds the local mirror
	if err := w.sync(t); err != nil {
		t.Fatal(err)
	}
	w.rec.failRecs = 1000 // the service becomes unreachable

	w.clk.Add(30 * time.Second)
	w.c.setCPU("web", 2, "500m")
	if err := w.sync(t); err == nil || w.c.updates() != 0 {
		t.Fatalf("before the staleness threshold: err = %v, updates = %d; want fail static", err, w.c.updates())
	}
	w.clk.Add(45 * time.Second) // 75s without an answer
	if err := w.sync(t); err != nil {
		t.Fatal(err)
	}
	if got, want := w.c.writes, []int32{4}; !equal(got, want) {
		t.Fatalf("writes = %v, want %v (local scale-up)", got, want)
	}
	ev := strings.Join(w.c.events(), "\n")
	if !strings.Contains(ev, "deciding locally") || !strings.Contains(ev, "decided locally") {
		t.Errorf("events do not say the decision was local: %s", ev)
	}
	if n := testutil.ToFloat64(w.s.tel.fallbackTargets); n != 1 {
		t.Errorf("fallback_targets = %v, want 1", n)
	}
	// Load falls: the local decision to scale down is not applied.
	w.c.setCPU("web", 2, "10m")
	for i := 0; i < 30; i++ {
		w.clk.Add(15 * time.Second)
		if err := w.sync(t); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := w.c.writes, []int32{4}; !equal(got, want) {
		t.Fatalf("writes = %v, want %v (no local scale-down)", got, want)
	}
	if n := testutil.ToFloat64(w.s.tel.scaleWrites.WithLabelValues(modeFallback, "suppressed")); n == 0 {
		t.Error("no suppressed local scale-down counted")
	}
	// The service answers again: its history rules; the outage is over.
	w.rec.mu.Lock()
	w.rec.failRecs = 0
	w.rec.mu.Unlock()
	w.clk.Add(15 * time.Second)
	if err := w.sync(t); err != nil {
		t.Fatal(err)
	}
	if n := testutil.ToFloat64(w.s.tel.fallbackTargets); n != 0 {
		t.Errorf("fallback_targets = %v after the service returned, want 0", n)
	}
	if ev := w.c.events(); !hasEvent(ev, ReasonRecommenderAvailable) {
		t.Errorf("events = %q, want RecommenderAvailable", ev)
	}
}

func TestFallbackScaleDownWhenAllowed(t *testing.T) {
	w := newWorld(t, func(c *Config) { c.FallbackAfter = time.Minute; c.FallbackScaleDown = true })
	w.rec.failRecs = 1000
	w.c.setCPU("web", 2, "50m") // 10%
	for i := 0; i < 12; i++ {
		if err := w.sync(t); err != nil && i > 4 {
			t.Fatalf("sync %d: %v", i, err)
		}
		w.clk.Add(15 * time.Second)
	}
	if got := w.c.replicas("shop", "web"); got != 1 {
		t.Fatalf("replicas = %d, want 1 (local scale-down after the 60s window)", got)
	}
}

func TestReportRetriedNotRescaled(t *testing.T) {
	w := newWorld(t, nil)
	w.rec.failReps = 3 // goclient would retry; the scaler keeps it for the next sync
	if err := w.sync(t); err != nil {
		t.Fatal(err)
	}
	if got := w.svc.getTarget(t, "shop", "web-hpa"); len(got.GetPendingDecisions()) != 1 {
		t.Fatalf("pending = %v, want the undelivered decision", got.GetPendingDecisions())
	}
	if n := testutil.ToFloat64(w.s.tel.reportsPending); n != 1 {
		t.Errorf("reports_pending = %v, want 1", n)
	}
	for i := 0; i < 3; i++ {
		w.clk.Add(15 * time.Second)
		if err := w.sync(t); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := w.c.writes, []int32{4}; !equal(got, want) {
		t.Fatalf("writes = %v, want %v: one write per decision", got, want)
	}
	got := w.svc.getTarget(t, "shop", "web-hpa")
	if len(got.GetPendingDecisions()) != 0 {
		t.Errorf("pending = %v, want the report delivered", got.GetPendingDecisions())
	}
	if n := testutil.ToFloat64(w.s.tel.reportsPending); n != 0 {
		t.Errorf("reports_pending = %v, want 0", n)
	}
}

func TestServiceRestartKeepsHistory(t *testing.T) {
	w := newWorld(t, nil)
	st := w.svc.store
	if err := w.sync(t); err != nil { // 2 -> 4, a scale-up event stored
		t.Fatal(err)
	}
	addr := w.svc.addr
	w.svc.stop()
	w.clk.Add(15 * time.Second)
	if err := w.sync(t); err == nil {
		t.Fatal("sync succeeded without the service")
	}
	w.svc = startService(t, st, w.clk, addr) // same store, same address
	w.rec.Recommender = w.svc.client
	w.c.setCPU("web", 2, "100m") // load falls
	w.clk.Add(15 * time.Second)
	if err := w.sync(t); err != nil {
		t.Fatal(err)
	}
	// The service still remembers the recommendation of 4 from 30s ago: the 60s window holds.
	if got, want := w.c.writes, []int32{4}; !equal(got, want) {
		t.Fatalf("writes = %v, want %v (history survived the restart)", got, want)
	}
	if ev := w.svc.getTarget(t, "shop", "web-hpa").GetHistory().GetScaleUpEvents(); len(ev) != 1 {
		t.Errorf("scale-up events = %v, want the one from before the restart", ev)
	}
}

func TestShadowModeRecordsNoEvents(t *testing.T) {
	w := newWorld(t, nil, shadowHPA)
	w.c.metricErr = apierrors.NewServiceUnavailable("metrics-server down")
	if err := w.sync(t); err != nil {
		t.Fatal(err)
	}
	w.c.getErr = apierrors.NewServiceUnavailable("apiserver")
	if err := w.sync(t); err == nil {
		t.Fatal("sync succeeded without a scale")
	}
	if ev := w.c.events(); len(ev) != 0 {
		t.Errorf("events in shadow mode: %q", ev)
	}
}

func TestRemovedAutoscalerLeavesFallback(t *testing.T) {
	w := newWorld(t, func(c *Config) { c.FallbackAfter = time.Second })
	w.rec.failRecs = 100
	w.clk.Add(time.Minute)
	_ = w.sync(t)
	w.clk.Add(time.Minute)
	if err := w.sync(t); err != nil {
		t.Fatal(err)
	}
	if n := testutil.ToFloat64(w.s.tel.fallbackTargets); n != 1 {
		t.Fatalf("fallback_targets = %v, want 1", n)
	}
	w.s.SetAutoscalers(nil)
	if n := testutil.ToFloat64(w.s.tel.fallbackTargets); n != 0 {
		t.Errorf("fallback_targets = %v after the autoscaler left, want 0", n)
	}
}

// TestAmbiguousSelector: two autoscalers whose targets select the same pods. Neither acts, the
// first to sync included (it reads the other's selector from its target's scale): no request
// to the service, no scale write, an AmbiguousSelector event naming both. Once one of them is
// removed the other scales again.
func TestAmbiguousSelector(t *testing.T) {
	web2 := strings.NewReplacer("name: web-hpa", "name: web2-hpa", "name: web}", "name: web2}").Replace(webHPA)
	w := newWorld(t, nil, webHPA, web2)
	w.c.addDeployment("shop", "web2", 2, "app=web") // the same pods as web
	sync := func(key string) {
		t.Helper()
		if err := w.s.syncOne(t.Context(), w.s.mustAutoscaler(t, key)); err != nil {
			t.Fatalf("sync %s: %v", key, err)
		}
	}
	for _, key := range []string{"shop/web-hpa", "shop/web2-hpa", "shop/web-hpa"} {
		sync(key)
	}
	if n := len(w.rec.requests); n != 0 {
		t.Errorf("%d requests to the service while two autoscalers select the pods, want 0", n)
	}
	if len(w.c.writes) != 0 {
		t.Errorf("writes = %v, want none while two autoscalers select the pods", w.c.writes)
	}
	ev := strings.Join(w.c.events(), "\n")
	want := "Warning AmbiguousSelector HorizontalPodAutoscaler web-hpa: pods by selector app=web are controlled by more than one HPA (e.g. [HorizontalPodAutoscaler shop/web-hpa (manifest m0.yaml), HorizontalPodAutoscaler shop/web2-hpa (manifest m1.yaml)])"
	if !strings.Contains(ev, want) || !strings.Contains(ev, "Warning AmbiguousSelector HorizontalPodAutoscaler web2-hpa: ") {
		t.Errorf("events =\n%s\nwant on both, as %q", ev, want)
	}

	w.s.SetAutoscalers([]*Autoscaler{w.s.mustAutoscaler(t, "shop/web2-hpa")})
	sync("shop/web2-hpa")
	if req := w.rec.last(); len(req.GetPods()) == 0 || req.GetMetrics()[0].GetError() != "" {
		t.Errorf("after web-hpa was removed: request pods=%d metrics=%v; want the pods and the CPU samples", len(req.GetPods()), req.GetMetrics())
	}
	if got, want := w.c.writes, []int32{4}; !equal(got, want) {
		t.Errorf("writes = %v, want %v once web2-hpa is alone", got, want)
	}
}

// TestAmbiguousSelectorWithinNamespace: an autoscaler of another namespace whose selector
// would match the pods' labels selects none of them (pods are namespaced): neither holds.
func TestAmbiguousSelectorWithinNamespace(t *testing.T) {
	staging := strings.Replace(webHPA, "namespace: shop", "namespace: staging", 1)
	w := newWorld(t, nil, webHPA, staging)
	w.c.addDeployment("staging", "web", 2, "app=web")
	w.c.addPods("staging", "web", 2, "500m")
	for _, key := range []string{"staging/web-hpa", "shop/web-hpa"} {
		if err := w.s.syncOne(t.Context(), w.s.mustAutoscaler(t, key)); err != nil {
			t.Fatalf("sync %s: %v", key, err)
		}
	}
	if got, want := w.c.writes, []int32{4, 4}; !equal(got, want) {
		t.Errorf("writes = %v, want %v (one per namespace)", got, want)
	}
	if ev := w.c.events(); hasEvent(ev, ReasonAmbiguousSelector) {
		t.Errorf("events = %q, want no AmbiguousSelector", ev)
	}
}

// TestMissingSelector: without a selector every metric fails (upstream: SelectorRequired),
// yet a count above maxReplicas is still corrected, as upstream does before metrics.
func TestMissingSelector(t *testing.T) {
	w := newWorld(t, nil)
	w.c.addDeployment("shop", "web", 20, "")
	if err := w.sync(t); err != nil {
		t.Fatal(err)
	}
	req := w.rec.last()
	if len(req.GetPods()) != 0 || req.GetMetrics()[0].GetError() != "selector is required" {
		t.Errorf("request pods=%d metrics=%v; want no pods and the selector error", len(req.GetPods()), req.GetMetrics())
	}
	if got, want := w.c.writes, []int32{10}; !equal(got, want) {
		t.Errorf("writes = %v, want %v (above maxReplicas)", got, want)
	}
	ev := w.c.events()
	for _, want := range []string{
		"Warning SelectorRequired HorizontalPodAutoscaler web-hpa: selector is required",
		"Normal SuccessfulRescale HorizontalPodAutoscaler web-hpa: New size: 10; reason: scale down 20 -> 10: current number of replicas above Spec.MaxReplicas (min 1, max 10)",
	} {
		if !slices.Contains(ev, want) {
			t.Errorf("events = %q, want %q", ev, want)
		}
	}
}
