//go:build e2e

package scaler

// End-to-end scenarios against a real etcd, kube-apiserver and kube-controller-manager
// (internal/controlplane; `make e2e` builds them), and a real in-process hpa-recommender on a
// loopback port reached through Dial (goclient). The pods run on a kwok node: kwok makes them
// Running and Ready and reports the CPU the test sets in their usage annotations as the
// kubelet's resource metrics, which the real metrics-server serves as metrics.k8s.io. Custom
// and external metrics come from the loopback metrics adapter. Every clock is real: the HPAs
// use short windows and policy periods, and each step waits until metrics.k8s.io shows the
// load it set (metrics-server's resolution is 10 s) before the scaler syncs.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/scale"

	"github.com/hpa-recommender/hpa-recommender/internal/controlplane"
	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
	"github.com/hpa-recommender/hpa-recommender/store/boltstore"
	"github.com/hpa-recommender/hpa-recommender/store/memstore"
)

type e2eEnv struct {
	cp *controlplane.ControlPlane
	// adapter serves custom.metrics.k8s.io and external.metrics.k8s.io.
	adapter *controlplane.MetricsAdapter
	// kwok runs the pods and metrics-server, which serves metrics.k8s.io.
	kwok *controlplane.Kwok
}

// startE2EEnv starts a control plane, the metrics adapter, then kwok and metrics-server
// (which take metrics.k8s.io over from the adapter).
func startE2EEnv(t *testing.T) *e2eEnv {
	t.Helper()
	start := time.Now()
	cp := controlplane.Start(t, controlplane.Options{})
	e := &e2eEnv{cp: cp, adapter: controlplane.StartMetricsAdapter(t, cp)}
	e.kwok = controlplane.StartKwok(t, cp, controlplane.KwokOptions{})
	t.Logf("control plane, kwok and the metrics APIs ready in %v", time.Since(start).Round(time.Millisecond))
	return e
}

// stopMetricsServer stops metrics-server (metrics.k8s.io answers 503) until the returned
// function, also run at cleanup, starts it again.
func (e *e2eEnv) stopMetricsServer(t *testing.T, ctx context.Context) (restart func()) {
	t.Helper()
	if err := e.kwok.StopMetricsServer(ctx); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	restart = func() {
		once.Do(func() {
			if err := e.kwok.StartMetricsServer(context.WithoutCancel(ctx)); err != nil {
				t.Error(err)
			}
		})
	}
	t.Cleanup(restart)
	return restart
}

func TestE2E(t *testing.T) {
	e := startE2EEnv(t)
	t.Run("LoadRisesScaleUpWithinPolicy", e.scaleUp)
	t.Run("LoadFallsScaleDownAfterWindow", e.scaleDown)
	t.Run("MetricFails", e.metricFails)
	t.Run("ServiceKilledAndRestarted", e.serviceRestart)
	t.Run("TwoReplicasOneActs", e.twoReplicas)
	t.Run("ConflictingManualScale", e.manualScale)
	t.Run("ShadowModeChangesNothing", e.shadow)
	t.Run("CustomResourceScale", e.customResource)
	t.Run("AmbiguousSelector", e.ambiguousSelector)
}

// hpaYAML is a CPU HPA (50% of a 100m request, so 50m per pod) on Deployment web in ns.
func hpaYAML(ns, annotations, behavior string) string {
	return fmt.Sprintf(`apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: web
  namespace: %s
  annotations: {%s}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 1
  maxReplicas: 10
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}
  behavior:
%s
`, ns, annotations, behavior)
}

// fixture is one scenario: a namespace with Deployment web, its load, a service and a scaler.
type fixture struct {
	e      *e2eEnv
	t      *testing.T
	ns     string
	ctx    context.Context
	mu     sync.Mutex
	demand int64 // total CPU millicores across the live pods
	svc    *service
	rec    *recording
	s      *Scaler
	kube   *Kube
	dir    string
}

func (e *e2eEnv) newFixture(t *testing.T, ns string, replicas int32, hpa string, mutate func(*Config)) *fixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	t.Cleanup(cancel)
	f := &fixture{e: e, t: t, ns: ns, ctx: ctx, dir: t.TempDir()}
	cs := e.cp.Client
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	d := deployment(replicas)
	d.Spec.Template.Spec.NodeName = e.kwok.Nodes[0]
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.svc = startService(t, memstore.New(), realClock(), "127.0.0.1:0")
	writeFile(t, f.dir, "hpa.yaml", hpa)
	f.s, f.rec, f.kube = f.newScaler(t, "scaler", mutate)
	return f
}

// newScaler builds a scaler with its own informers, talking to the fixture's service through
// Dial.
func (f *fixture) newScaler(t *testing.T, id string, mutate func(*Config)) (*Scaler, *recording, *Kube) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Cluster = "c1"
	cfg.ManifestsDir = f.dir
	cfg.ServiceAddr = f.svc.addr
	cfg.HTTPListen = ""
	cfg.LeaderElect = false
	cfg.Identity = id
	zero := time.Duration(0)
	cfg.Options.CPUInitializationPeriod = &zero // the test's pods are fresh; judge them by Ready
	cfg.Options.InitialReadinessDelay = &zero
	if mutate != nil {
		mutate(&cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	kube, runner, err := NewKube(f.e.cp.Config, "hpa-scaler")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(f.ctx)
	t.Cleanup(cancel)
	if err := runner.Start(ctx); err != nil {
		t.Fatal(err)
	}
	client, err := Dial(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	rec := &recording{Recommender: client}
	s, err := New(cfg, Deps{Kube: kube, Recommender: rec, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	as, err := LoadManifests(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	s.SetAutoscalers(as)
	return s, rec, kube
}

func deployment(replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": "web"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "app", Image: "registry.example/web:1",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
				}}},
			},
		},
	}
}

func (f *fixture) setDemand(milli int64) {
	f.mu.Lock()
	f.demand = milli
	f.mu.Unlock()
}

// kubelet waits until kwok has made Deployment web's pods Running and Ready, spreads the
// demand over them (their kwok usage annotations), waits until metrics.k8s.io shows each
// pod's share, and until kube's pod cache sees them all Ready.
func (f *fixture) kubelet(kube *Kube) {
	f.t.Helper()
	want := f.runPods(kube)
	ctx, cancel := context.WithTimeout(f.ctx, 2*time.Minute)
	defer cancel()
	if err := f.e.kwok.WaitPodUsage(ctx, f.ns, want); err != nil {
		f.t.Fatal(err)
	}
}

// runPods is kubelet without waiting for metrics.k8s.io (metrics-server may be stopped): it
// returns each pod's usage as set.
func (f *fixture) runPods(kube *Kube) map[string]corev1.ResourceList {
	f.t.Helper()
	cs := f.e.cp.Client
	var pods []corev1.Pod
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		d, err := cs.AppsV1().Deployments(f.ns).Get(f.ctx, "web", metav1.GetOptions{})
		if err != nil {
			f.t.Fatal(err)
		}
		if pods, err = controlplane.DeploymentPods(f.ctx, cs, f.ns, "web"); err != nil {
			f.t.Fatal(err)
		}
		ready := 0
		for i := range pods {
			if pods[i].Status.Phase == corev1.PodRunning && podState(&pods[i]).GetReady() {
				ready++
			}
		}
		if ready == len(pods) && int32(len(pods)) == *d.Spec.Replicas {
			break
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("deployment web: %d pods, %d Running and Ready (kwok), want %d", len(pods), ready, *d.Spec.Replicas)
		}
	}
	f.mu.Lock()
	per := f.demand / int64(max(1, len(pods)))
	f.mu.Unlock()
	want := map[string]corev1.ResourceList{}
	for _, p := range pods {
		usage := corev1.ResourceList{corev1.ResourceCPU: controlplane.KwokCPU(per)}
		if p.Annotations[controlplane.KwokUsageCPUAnnotation] != usage.Cpu().String() {
			if err := controlplane.SetKwokPodUsage(f.ctx, cs, f.ns, p.Name, usage); err != nil {
				f.t.Fatal(err)
			}
		}
		want[p.Name] = usage
	}
	sel := labels.SelectorFromSet(labels.Set{"app": "web"})
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		cached, err := kube.Pods.Pods(f.ns).List(sel)
		if err != nil {
			f.t.Fatal(err)
		}
		ready := 0
		for _, p := range cached {
			if p.DeletionTimestamp == nil && podState(p).GetReady() {
				ready++
			}
		}
		if ready == len(pods) {
			return want
		}
		time.Sleep(50 * time.Millisecond)
	}
	f.t.Fatalf("pod cache never saw %d ready pods", len(pods))
	return nil
}

// step is one reconcile: the kubelet's part, then one sync.
func (f *fixture) step() error {
	f.t.Helper()
	f.kubelet(f.kube)
	return f.s.SyncOne(f.ctx, f.ns+"/web")
}

// stepWithoutMetrics is step while metrics-server is stopped: the pods run, nothing waits for
// metrics.k8s.io.
func (f *fixture) stepWithoutMetrics() error {
	f.t.Helper()
	f.runPods(f.kube)
	return f.s.SyncOne(f.ctx, f.ns+"/web")
}

func (f *fixture) replicas() int32 {
	f.t.Helper()
	sc, err := f.e.cp.Client.AppsV1().Deployments(f.ns).GetScale(f.ctx, "web", metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return sc.Spec.Replicas
}

// events returns the reasons of the scaler's events on Deployment web (polling briefly: the recorder
// sends them asynchronously) once want is among them, or what there is after 10 s.
func (f *fixture) events(want string) []string {
	f.t.Helper()
	var reasons []string
	deadline := time.Now().Add(10 * time.Second)
	for {
		list, err := f.e.cp.Client.CoreV1().Events(f.ns).List(f.ctx, metav1.ListOptions{})
		if err != nil {
			f.t.Fatal(err)
		}
		reasons = reasons[:0]
		for _, ev := range list.Items {
			if ev.Source.Component == "hpa-scaler" && ev.InvolvedObject.Kind == "Deployment" && ev.InvolvedObject.Name == "web" {
				reasons = append(reasons, ev.Reason)
				if want != "" && ev.Reason == want && !strings.Contains(ev.Message, "HorizontalPodAutoscaler web") {
					f.t.Errorf("event %s does not name the autoscaler: %q", ev.Reason, ev.Message)
				}
			}
		}
		if want == "" || contains(reasons, want) || time.Now().After(deadline) {
			return reasons
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// LoadRisesScaleUpWithinPolicy: demand for 5 pods from 2, with scale-up limited to one pod
// per 3 s: three writes of +1, each at least one period after the last.
func (e *e2eEnv) scaleUp(t *testing.T) {
	f := e.newFixture(t, "scale-up", 2, hpaYAML("scale-up", "", `    scaleUp: {policies: [{type: Pods, value: 1, periodSeconds: 3}]}`), nil)
	f.setDemand(100) // 2 pods at target
	if err := f.step(); err != nil {
		t.Fatal(err)
	}
	f.setDemand(250) // 5 pods' worth
	var at []time.Time
	var seen []int32
	last := f.replicas()
	deadline := time.Now().Add(3 * time.Minute) // each new pod's metrics take two scrapes
	for last < 5 && time.Now().Before(deadline) {
		if err := f.step(); err != nil {
			t.Fatal(err)
		}
		if r := f.replicas(); r != last {
			at, seen, last = append(at, time.Now()), append(seen, r), r
		}
		time.Sleep(250 * time.Millisecond)
	}
	if got, want := fmt.Sprint(seen), "[3 4 5]"; got != want {
		t.Fatalf("replicas went %s, want %s (one pod per period)", got, want)
	}
	for i := 1; i < len(at); i++ {
		if gap := at[i].Sub(at[i-1]); gap < 2500*time.Millisecond {
			t.Errorf("scale-ups %d and %d %v apart, want >= the 3 s policy period", i-1, i, gap)
		}
	}
	if ev := f.events(ReasonSuccessfulRescale); !contains(ev, ReasonSuccessfulRescale) {
		t.Errorf("events = %v, want SuccessfulRescale", ev)
	}
	if got := f.svc.getTarget(t, f.ns, "web"); len(got.GetPendingDecisions()) != 0 {
		t.Errorf("pending decisions = %v, want every write reported", got.GetPendingDecisions())
	}
}

// LoadFallsScaleDownAfterWindow: demand falls from 4 pods' worth to 1; nothing happens for
// the 5 s window after metrics.k8s.io shows the fall, then the target scales down.
func (e *e2eEnv) scaleDown(t *testing.T) {
	f := e.newFixture(t, "scale-down", 4, hpaYAML("scale-down", "", `    scaleDown: {stabilizationWindowSeconds: 5}`), nil)
	f.setDemand(200)
	for i := 0; i < 3; i++ {
		if err := f.step(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
	}
	if r := f.replicas(); r != 4 {
		t.Fatalf("replicas = %d at steady load, want 4", r)
	}
	f.setDemand(40)
	f.runPods(f.kube)
	// The load fell, for the scaler, at the start of the first sync whose metrics show it: it
	// syncs all along, so the recommendations of 4 before are at most one sync older.
	var fell, down time.Time
	for start := time.Now(); time.Since(start) < time.Minute; time.Sleep(250 * time.Millisecond) {
		began := time.Now()
		if err := f.s.SyncOne(f.ctx, f.ns+"/web"); err != nil {
			t.Fatal(err)
		}
		if fell.IsZero() && fellIn(f.rec.last(), 50) {
			fell = began
		}
		if f.replicas() < 4 {
			down = time.Now()
			break
		}
	}
	if fell.IsZero() {
		t.Fatal("metrics.k8s.io never showed the fall")
	}
	if down.IsZero() {
		t.Fatal("never scaled down")
	}
	if d := down.Sub(fell); d < 4*time.Second {
		t.Errorf("scaled down %v after the load fell, want after the 5 s window", d)
	}
	if r := f.replicas(); r != 1 {
		t.Errorf("replicas = %d, want 1", r)
	}
}

// fellIn: some pod's value of the request's first metric is below milli millicores.
func fellIn(req *pb.RecommendRequest, milli int64) bool {
	for _, pv := range req.GetMetrics()[0].GetPodValues() {
		if q, err := resource.ParseQuantity(pv.GetValue()); err == nil && q.MilliValue() < milli {
			return true
		}
	}
	return false
}

// MetricFails: metrics-server is down, so metrics.k8s.io answers 503; the scaler sends the
// error, nothing scales, and the in-tree event reasons appear on the Deployment; when
// metrics-server is back (and has scraped the pods), scaling resumes.
func (e *e2eEnv) metricFails(t *testing.T) {
	f := e.newFixture(t, "metric-fails", 2, hpaYAML("metric-fails", "", `    scaleDown: {stabilizationWindowSeconds: 5}`), nil)
	f.setDemand(200) // wants 4
	restart := e.stopMetricsServer(t, f.ctx)
	for i := 0; i < 3; i++ {
		if err := f.stepWithoutMetrics(); err != nil {
			t.Fatal(err)
		}
	}
	if obs := f.rec.last().GetMetrics()[0]; obs.GetError() == "" || len(obs.GetPodValues()) != 0 {
		t.Errorf("observation = %v, want only an error", obs)
	}
	if r := f.replicas(); r != 2 {
		t.Fatalf("replicas = %d with the metric failing, want 2", r)
	}
	for _, want := range []string{"FailedGetResourceMetric", ReasonFailedComputeMetricsReplicas} {
		if ev := f.events(want); !contains(ev, want) {
			t.Errorf("events = %v, want %s", ev, want)
		}
	}
	restart()
	if err := f.step(); err != nil {
		t.Fatal(err)
	}
	if r := f.replicas(); r != 4 {
		t.Errorf("replicas = %d after the metric recovered, want 4", r)
	}
}

// AmbiguousSelector: a second Deployment, web-canary, selects web's pods (app=web) and has an
// autoscaler of its own. Neither autoscaler acts, the first to sync included: no request to
// the service, web keeps its count, and the AmbiguousSelector event appears on it; when the
// canary's autoscaler is removed, web scales as before.
func (e *e2eEnv) ambiguousSelector(t *testing.T) {
	f := e.newFixture(t, "ambiguous", 2, hpaYAML("ambiguous", "", `    scaleDown: {stabilizationWindowSeconds: 5}`), nil)
	canary := deployment(0) // no pods of its own: its selector is web's
	canary.Name = "web-canary"
	if _, err := e.cp.Client.AppsV1().Deployments(f.ns).Create(f.ctx, canary, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	canaryHPA := strings.NewReplacer("name: web\n", "name: canary\n", "name: web}", "name: web-canary}").Replace(hpaYAML(f.ns, "", `    scaleDown: {stabilizationWindowSeconds: 5}`))
	writeFile(t, f.dir, "canary.yaml", canaryHPA)
	reload := func() {
		t.Helper()
		as, err := LoadManifests(f.dir)
		if err != nil {
			t.Fatal(err)
		}
		f.s.SetAutoscalers(as)
	}
	reload()
	f.setDemand(200) // wants 4
	if err := f.step(); err != nil {
		t.Fatal(err)
	}
	if err := f.s.SyncOne(f.ctx, f.ns+"/canary"); err != nil {
		t.Fatalf("sync canary: %v", err)
	}
	if n := len(f.rec.requests); n != 0 {
		t.Errorf("%d requests while two autoscalers select the pods, want 0", n)
	}
	if r := f.replicas(); r != 2 {
		t.Errorf("replicas = %d while two autoscalers select the pods, want 2", r)
	}
	if ev := f.events(ReasonAmbiguousSelector); !contains(ev, ReasonAmbiguousSelector) {
		t.Errorf("events = %v, want %s", ev, ReasonAmbiguousSelector)
	}
	if err := os.Remove(filepath.Join(f.dir, "canary.yaml")); err != nil {
		t.Fatal(err)
	}
	reload()
	if err := f.step(); err != nil {
		t.Fatal(err)
	}
	if r := f.replicas(); r != 4 {
		t.Errorf("replicas = %d once the canary's autoscaler is gone, want 4", r)
	}
}

// ServiceKilledAndRestarted: the service (bbolt) stops mid-run. Load rises; the scaler fails
// static. The service restarts on the same address over the same file; the scale-up rate
// limit recorded before the outage still holds (a fresh history would allow +1 at once).
func (e *e2eEnv) serviceRestart(t *testing.T) {
	ns := "restart"
	f := e.newFixture(t, ns, 2, hpaYAML(ns, "", `    scaleUp: {policies: [{type: Pods, value: 1, periodSeconds: 120}]}`), nil)
	// Replace the fixture's memstore service by a bbolt one at a fixed address.
	f.svc.stop()
	path := filepath.Join(t.TempDir(), "hpa.db")
	start := func(addr string) (*service, func()) {
		st, err := boltstore.Open(path, boltstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var once sync.Once
		var svc *service
		stop := func() { once.Do(func() { svc.stop(); st.Close() }) }
		t.Cleanup(stop)
		svc = startService(t, st, realClock(), addr)
		return svc, stop
	}
	svc, stop := start("127.0.0.1:0")
	f.svc = svc
	f.s, f.rec, f.kube = f.newScaler(t, "scaler2", nil) // Dial the new address

	f.setDemand(250) // wants 5
	if err := f.step(); err != nil {
		t.Fatal(err)
	}
	if r := f.replicas(); r != 3 {
		t.Fatalf("replicas = %d, want 3 (+1 per 120 s)", r)
	}
	stop() // kill
	f.setDemand(1000)
	for i := 0; i < 3; i++ {
		if err := f.step(); err == nil {
			t.Fatal("sync succeeded with the service down")
		}
	}
	if r := f.replicas(); r != 3 {
		t.Fatalf("replicas = %d during the outage, want 3 (fail static)", r)
	}
	if ev := f.events(ReasonRecommenderUnavailable); !contains(ev, ReasonRecommenderUnavailable) {
		t.Errorf("events = %v, want RecommenderUnavailable", ev)
	}
	svc, _ = start(svc.addr)
	f.svc = svc
	// gRPC reconnects with backoff: sync until the service answers.
	deadline := time.Now().Add(60 * time.Second)
	var err error
	for err = f.step(); err != nil && time.Now().Before(deadline); err = f.step() {
		time.Sleep(500 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("the service never answered after the restart: %v", err)
	}
	if r := f.replicas(); r != 3 {
		t.Errorf("replicas = %d after the restart, want 3: the stored scale-up event limits the rate", r)
	}
	got := svc.getTarget(t, ns, "web")
	if ev := got.GetHistory().GetScaleUpEvents(); len(ev) != 1 || ev[0].GetChange() != 1 {
		t.Errorf("scale-up events = %v, want the +1 from before the outage", ev)
	}
	if c := condition(got.GetLastDecision().GetResponse().GetConditions(), "ScalingLimited"); c.GetReason() != "ScaleUpLimit" {
		t.Errorf("ScalingLimited = %v, want ScaleUpLimit", c)
	}
	if ev := f.events(ReasonRecommenderAvailable); !contains(ev, ReasonRecommenderAvailable) {
		t.Errorf("events = %v, want RecommenderAvailable", ev)
	}
}

// TwoReplicasOneActs: two scalers with leader election on one Lease in the real API server;
// only the leader calls the service or writes; when it stops, the standby takes over.
func (e *e2eEnv) twoReplicas(t *testing.T) {
	ns := "two-replicas"
	f := e.newFixture(t, ns, 2, hpaYAML(ns, "", `    scaleDown: {stabilizationWindowSeconds: 5}`), nil)
	f.setDemand(200) // wants 4
	elect := func(c *Config) {
		c.LeaderElect = true
		c.LeaderElectionNamespace = ns
		c.LeaderElectionName = "hpa-scaler"
		c.LeaseDuration, c.RenewDeadline, c.RetryPeriod = 4*time.Second, 2*time.Second, 500*time.Millisecond
		c.SyncPeriod = 500 * time.Millisecond
	}
	type replica struct {
		s      *Scaler
		rec    *recording
		id     string
		cancel context.CancelFunc
		done   chan struct{}
	}
	var reps []*replica
	for _, id := range []string{"replica-a", "replica-b"} {
		s, rec, _ := f.newScaler(t, id, elect)
		ctx, cancel := context.WithCancel(f.ctx)
		r := &replica{s, rec, id, cancel, make(chan struct{})}
		reps = append(reps, r)
		go func() {
			defer close(r.done)
			if err := s.Run(ctx, RunDeps{LeaseClient: e.cp.Client}); err != nil {
				t.Errorf("%s: %v", id, err)
			}
		}()
		t.Cleanup(func() { cancel(); <-r.done })
	}
	calls := func(r *replica) int {
		r.rec.mu.Lock()
		defer r.rec.mu.Unlock()
		return len(r.rec.requests)
	}
	deadline := time.Now().Add(60 * time.Second)
	for (f.replicas() != 4 || calls(reps[0])+calls(reps[1]) < 6) && time.Now().Before(deadline) {
		f.kubelet(f.kube)
		time.Sleep(200 * time.Millisecond)
	}
	if r := f.replicas(); r != 4 {
		t.Fatalf("replicas = %d, want 4", r)
	}
	a, b := calls(reps[0]), calls(reps[1])
	if (a == 0) == (b == 0) {
		t.Fatalf("Recommend calls: %s=%d %s=%d; want exactly one replica acting", reps[0].id, a, reps[1].id, b)
	}
	leader := reps[0]
	if b > 0 {
		leader = reps[1]
	}
	lease, err := e.cp.Client.CoordinationV1().Leases(ns).Get(f.ctx, "hpa-scaler", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h := lease.Spec.HolderIdentity; h == nil || *h != leader.id {
		t.Errorf("lease holder = %v, want %s", h, leader.id)
	}
	var writes float64
	for _, r := range reps {
		writes += testutil.ToFloat64(r.s.tel.scaleWrites.WithLabelValues(modeService, "success"))
	}
	if writes != 1 {
		t.Errorf("successful scale writes = %v across both replicas, want 1", writes)
	}

	// The leader stops (a rolling update): it releases the Lease and the standby takes over.
	standby := reps[0]
	if standby == leader {
		standby = reps[1]
	}
	leader.cancel()
	<-leader.done
	n := calls(leader)
	deadline = time.Now().Add(30 * time.Second)
	for calls(standby) == 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if calls(standby) == 0 {
		t.Fatal("the standby never took over")
	}
	if calls(leader) != n {
		t.Error("the stopped leader kept syncing")
	}
}

// interceptScales runs before() ahead of the first Update, e.g. to scale the target as a
// person would just before the scaler's write.
type interceptScales struct {
	scale.ScalesGetter
	once   sync.Once
	before func()
}

func (i *interceptScales) Scales(ns string) scale.ScaleInterface {
	return &interceptScale{ScaleInterface: i.ScalesGetter.Scales(ns), i: i}
}

type interceptScale struct {
	scale.ScaleInterface
	i *interceptScales
}

func (s *interceptScale) Update(ctx context.Context, gr schema.GroupResource, sc *autoscalingv1.Scale, opts metav1.UpdateOptions) (*autoscalingv1.Scale, error) {
	s.i.once.Do(s.i.before)
	return s.ScaleInterface.Update(ctx, gr, sc, opts)
}

// ConflictingManualScale: someone runs `kubectl scale --replicas 7` between the scaler's read
// and its write. The API server refuses the stale write; the scaler re-reads, sees another
// writer's count and leaves it; the next decision starts from 7 (and, with the load 7 pods
// carry, keeps it).
func (e *e2eEnv) manualScale(t *testing.T) {
	ns := "manual-scale"
	f := e.newFixture(t, ns, 2, hpaYAML(ns, "", `    scaleDown: {stabilizationWindowSeconds: 60}`), nil)
	f.setDemand(200) // wants 4
	f.kube.Scales = &interceptScales{ScalesGetter: f.kube.Scales, before: func() {
		sc, err := e.cp.Client.AppsV1().Deployments(ns).GetScale(f.ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Error(err)
			return
		}
		sc.Spec.Replicas = 7
		if _, err := e.cp.Client.AppsV1().Deployments(ns).UpdateScale(f.ctx, "web", sc, metav1.UpdateOptions{}); err != nil {
			t.Error(err)
		}
	}}
	err := f.step()
	if err == nil || !strings.Contains(err.Error(), errScaleChanged.Error()) {
		t.Fatalf("sync = %v, want the decision abandoned (%v)", err, errScaleChanged)
	}
	if r := f.replicas(); r != 7 {
		t.Fatalf("replicas = %d, want the manual 7", r)
	}
	if ev := f.events(ReasonFailedRescale); !contains(ev, ReasonFailedRescale) {
		t.Errorf("events = %v, want FailedRescale", ev)
	}
	if got := f.svc.getTarget(t, ns, "web"); len(got.GetPendingDecisions()) != 0 {
		t.Errorf("pending = %v, want the failure reported", got.GetPendingDecisions())
	}
	f.setDemand(350) // what 7 pods at target use: the manual count is right
	if err := f.step(); err != nil {
		t.Fatal(err)
	}
	if cur := f.rec.last().GetCurrentReplicas(); cur != 7 {
		t.Errorf("next request currentReplicas = %d, want 7", cur)
	}
	if r := f.replicas(); r != 7 {
		t.Errorf("replicas = %d, want the manual 7 kept", r)
	}
}

// ShadowModeChangesNothing: with the shadow annotation the scaler asks with dryRun and
// counts what it would do; the Deployment, the events and the service's store stay as they
// were.
func (e *e2eEnv) shadow(t *testing.T) {
	ns := "shadow"
	f := e.newFixture(t, ns, 2, hpaYAML(ns, ModeAnnotation+": shadow", `    scaleDown: {stabilizationWindowSeconds: 5}`), nil)
	f.setDemand(400) // wants 8
	for i := 0; i < 3; i++ {
		if err := f.step(); err != nil {
			t.Fatal(err)
		}
	}
	if r := f.replicas(); r != 2 {
		t.Fatalf("replicas = %d in shadow mode, want 2", r)
	}
	if n := testutil.ToFloat64(f.s.tel.decisions.WithLabelValues(modeShadow, "up")); n != 3 {
		t.Errorf("decisions{shadow,up} = %v, want 3", n)
	}
	// 8 wanted; the default scale-up policy (4 pods or 100% per 15 s) allows 6 from 2.
	if n := testutil.ToFloat64(f.s.tel.desired.WithLabelValues(ns, "web", modeShadow)); n != 6 {
		t.Errorf("desired{shadow} = %v, want 6", n)
	}
	time.Sleep(time.Second)
	if ev := f.events(""); len(ev) != 0 {
		t.Errorf("events in shadow mode: %v", ev)
	}
	_, err := f.svc.client.GetTarget(f.ctx, &pb.GetTargetRequest{Target: &pb.TargetRef{Cluster: "c1", Namespace: ns, Name: "web"}})
	if status.Code(err) != codes.NotFound {
		t.Errorf("GetTarget = %v, want NotFound: a dry run stores nothing", err)
	}
}

// CustomResourceScale: a custom resource with a scale subresource, whose CRD is installed
// after the scaler started (its discovery cache must be refreshed), scaled on an External
// metric: 100 / 25 per replica wants 4.
func (e *e2eEnv) customResource(t *testing.T) {
	ns := "custom-resource"
	hpa := fmt.Sprintf(`apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: worker, namespace: %s}
spec:
  scaleTargetRef: {apiVersion: example.com/v1, kind: Worker, name: w}
  maxReplicas: 10
  metrics:
  - type: External
    external: {metric: {name: queue_depth}, target: {type: AverageValue, averageValue: "25"}}
`, ns)
	f := e.newFixture(t, ns, 1, hpa, nil)
	dyn, err := dynamic.NewForConfig(e.cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": "workers.example.com"},
		"spec": map[string]any{
			"group": "example.com",
			"names": map[string]any{"kind": "Worker", "plural": "workers", "singular": "worker", "listKind": "WorkerList"},
			"scope": "Namespaced",
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
				"subresources": map[string]any{
					"status": map[string]any{},
					"scale":  map[string]any{"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas", "labelSelectorPath": ".status.selector"},
				},
			}},
		},
	}}
	crdGVR := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	if _, err := dyn.Resource(crdGVR).Create(f.ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	workers := dyn.Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "workers"}).Namespace(ns)
	w := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Worker",
		"metadata": map[string]any{"name": "w"},
		"spec":     map[string]any{"replicas": int64(2)},
	}}
	deadline := time.Now().Add(60 * time.Second)
	for {
		created, err := workers.Create(f.ctx, w, metav1.CreateOptions{})
		if err == nil {
			w = created
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("create the custom resource: %v", err)
		}
		time.Sleep(200 * time.Millisecond) // the CRD is not established yet
	}
	w.Object["status"] = map[string]any{"replicas": int64(2), "selector": "app=worker"}
	if _, err := workers.UpdateStatus(f.ctx, w, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("worker-%d", i), Labels: map[string]string{"app": "worker"}},
			Spec: corev1.PodSpec{NodeName: e.kwok.Nodes[0], // kwok makes it Running and Ready
				Containers: []corev1.Container{{Name: "app", Image: "registry.example/worker:1"}}},
		}
		if _, err := e.cp.Client.CoreV1().Pods(ns).Create(f.ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	e.adapter.SetExternalMetric(ns, "queue_depth", controlplane.ExternalValue{Value: resource.MustParse("100")})

	var syncErr error
	replicas := func() int64 {
		got, err := workers.Get(f.ctx, "w", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n, _, _ := unstructured.NestedInt64(got.Object, "spec", "replicas")
		return n
	}
	for deadline = time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		if syncErr = f.s.SyncOne(f.ctx, ns+"/worker"); syncErr == nil && replicas() == 4 {
			break
		}
	}
	if r := replicas(); r != 4 {
		t.Fatalf("Worker spec.replicas = %d, want 4 (last sync: %v)", r, syncErr)
	}
	req := f.rec.last()
	if req.GetCurrentReplicas() != 2 || len(req.GetPods()) != 2 || len(req.GetMetrics()[0].GetValues()) != 1 {
		t.Errorf("request current=%d pods=%d values=%v; want 2, 2, one series", req.GetCurrentReplicas(), len(req.GetPods()), req.GetMetrics()[0].GetValues())
	}
}
