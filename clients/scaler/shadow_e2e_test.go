//go:build e2e

package scaler

// The live differential: kube-controller-manager's in-tree HPA controller decides a fleet of
// HPAs while hpa-scaler (--source hpa) shadows them beside it, and every comparable decision
// of the service must equal the in-tree controller's status.desiredReplicas.

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"

	"github.com/hpa-recommender/hpa-recommender/internal/controlplane"
	"github.com/hpa-recommender/hpa-recommender/recommender"
	"github.com/hpa-recommender/hpa-recommender/store/memstore"
)

// The settings both controllers share: the in-tree controller's flags and the scaler's
// options sent to the service.
const (
	shadowNS          = "shadow"
	inTreeSyncPeriod  = 2 * time.Second
	cpuInitPeriod     = 20 * time.Second
	readinessDelay    = 10 * time.Second
	downscaleWindow   = 20 * time.Second
	shadowStep        = 30 * time.Second // one level of the load timeline: longer than downscaleWindow
	defaultReadyAfter = 3 * time.Second  // the fake kubelet's delay from start to Ready
)

// loadLevels is the timeline: how many pods' worth of load each HPA sees, one level per
// shadowStep. It scales every HPA up (2 -> 6), down (3, 1) and up again (4).
var loadLevels = []float64{2, 6, 3, 1, 4}

// diffHPA is one HPA of the differential and how its metrics follow the load.
type diffHPA struct {
	name string
	// spec is the HPA's spec below scaleTargetRef (metrics, bounds, behavior), as YAML.
	spec string
	// readyAfter is how long the fake kubelet (or kwok, KwokReadyAfterAnnotation) keeps this
	// workload's started pods unready.
	readyAfter time.Duration
	// missing: the workload's oldest pod, when it has more than one, gets no resource
	// metrics; the load is spread over the others.
	missing bool
	// cpu, memory, pods, object and external say which metrics the feeder sets.
	cpu, memory, pods, object, external bool
	// annotations are the HPA's metadata.annotations, as a YAML flow mapping ("" for none).
	annotations string
}

// shadowRun is one live differential: its HPAs, the load timeline, the scaler's extra flags,
// and mirror, when set, is told every value the feeder gives the metrics adapter (the
// Prometheus differential's exporter).
type shadowRun struct {
	hpas   []diffHPA
	levels []float64
	flags  []string
	mirror metricMirror
	// onKube, when set, sees the scaler's Kube before the scaler starts.
	onKube func(*Kube)
	// kwok: the pods run on a kwok node and their resource metrics come from metrics-server
	// (the feeder sets kwok's usage annotations) instead of the adapter.
	kwok bool
}

// metricMirror receives the values the feeder sets: a pod's Pods metric, and the Object or
// External value of an HPA.
type metricMirror interface {
	podMetric(h diffHPA, pod string, q resource.Quantity)
	value(h diffHPA, q resource.Quantity)
}

// Targets: CPU 50% of 100m (50m per pod's worth), memory 50Mi, Pods metric rps 10, Object
// and External 30 (Value: ratio level/3, so 6 grows to max and 1 shrinks to min).
var shadowHPAs = []diffHPA{
	{name: "cpu-legacy", cpu: true, spec: `
  minReplicas: 1
  maxReplicas: 8
  metrics:
  - {type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}}`},
	{name: "cpu-unready", cpu: true, readyAfter: 12 * time.Second, spec: `
  minReplicas: 1
  maxReplicas: 8
  metrics:
  - {type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}}`},
	{name: "cpu-missing", cpu: true, missing: true, spec: `
  minReplicas: 1
  maxReplicas: 8
  metrics:
  - {type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}}
  behavior:
    scaleDown: {stabilizationWindowSeconds: 0}`},
	{name: "memory", memory: true, spec: `
  minReplicas: 1
  maxReplicas: 8
  metrics:
  - {type: Resource, resource: {name: memory, target: {type: AverageValue, averageValue: 50Mi}}}`},
	{name: "pods", pods: true, spec: `
  minReplicas: 1
  maxReplicas: 8
  metrics:
  - {type: Pods, pods: {metric: {name: rps}, target: {type: AverageValue, averageValue: "10"}}}
  behavior:
    scaleUp: {stabilizationWindowSeconds: 0, policies: [{type: Pods, value: 2, periodSeconds: 10}]}`},
	{name: "object-value", object: true, spec: `
  minReplicas: 1
  maxReplicas: 8
  metrics:
  - type: Object
    object: {describedObject: {apiVersion: apps/v1, kind: Deployment, name: object-value}, metric: {name: queue}, target: {type: Value, value: "30"}}`},
	{name: "object-avg", object: true, spec: `
  minReplicas: 1
  maxReplicas: 8
  metrics:
  - type: Object
    object: {describedObject: {apiVersion: apps/v1, kind: Deployment, name: object-avg}, metric: {name: queue}, target: {type: AverageValue, averageValue: "30"}}`},
	{name: "external-value", external: true, spec: `
  minReplicas: 1
  maxReplicas: 8
  metrics:
  - type: External
    external: {metric: {name: ext-external-value, selector: {matchLabels: {queue: external-value}}}, target: {type: Value, value: "30"}}`},
	{name: "external-avg", external: true, spec: `
  minReplicas: 1
  maxReplicas: 8
  metrics:
  - type: External
    external: {metric: {name: ext-external-avg, selector: {matchLabels: {queue: external-avg}}}, target: {type: AverageValue, averageValue: "30"}}`},
	{name: "multi", cpu: true, pods: true, external: true, spec: `
  minReplicas: 1
  maxReplicas: 8
  metrics:
  - {type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}}
  - {type: Pods, pods: {metric: {name: rps}, target: {type: AverageValue, averageValue: "10"}}}
  - type: External
    external: {metric: {name: ext-multi, selector: {matchLabels: {queue: multi}}}, target: {type: AverageValue, averageValue: "30"}}`},
	{name: "behavior-max", cpu: true, spec: `
  minReplicas: 1
  maxReplicas: 8
  metrics:
  - {type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}}
  behavior:
    scaleUp:
      stabilizationWindowSeconds: 5
      selectPolicy: Max
      policies: [{type: Pods, value: 1, periodSeconds: 10}, {type: Percent, value: 100, periodSeconds: 10}]
    scaleDown:
      stabilizationWindowSeconds: 10
      policies: [{type: Percent, value: 50, periodSeconds: 10}]`},
	{name: "behavior-min", pods: true, spec: `
  minReplicas: 1
  maxReplicas: 8
  metrics:
  - {type: Pods, pods: {metric: {name: rps}, target: {type: AverageValue, averageValue: "10"}}}
  behavior:
    scaleUp:
      selectPolicy: Min
      policies: [{type: Pods, value: 3, periodSeconds: 10}, {type: Percent, value: 50, periodSeconds: 10}]
    scaleDown:
      stabilizationWindowSeconds: 0
      policies: [{type: Pods, value: 1, periodSeconds: 5}]`},
}

var (
	podName = regexp.MustCompile(`pod \S+`)
	digits  = regexp.MustCompile(`[0-9]+`)
)

// shadowLog collects the scaler's shadow comparisons from its log, per HPA.
type shadowLog struct {
	t             *testing.T
	mu            sync.Mutex
	results       map[string]map[string]int // autoscaler -> result -> count
	reasons       map[string]int            // not comparable: the reason's first words -> count
	disagreements []string
}

type shadowHandler struct {
	l     *shadowLog
	attrs []slog.Attr
}

func (h shadowHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h shadowHandler) WithGroup(string) slog.Handler            { return h }
func (h shadowHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return shadowHandler{l: h.l, attrs: append(slices.Clone(h.attrs), as...)}
}

func (h shadowHandler) Handle(_ context.Context, r slog.Record) error {
	attrs := map[string]string{}
	var line strings.Builder
	line.WriteString(r.Message)
	add := func(a slog.Attr) bool {
		attrs[a.Key] = a.Value.String()
		fmt.Fprintf(&line, " %s=%q", a.Key, a.Value.String())
		return true
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(add)
	key := attrs["autoscaler"]
	h.l.mu.Lock()
	defer h.l.mu.Unlock()
	count := func(result string) {
		if h.l.results[key] == nil {
			h.l.results[key] = map[string]int{}
		}
		h.l.results[key][result]++
	}
	switch r.Message {
	case "shadow: agrees with the in-tree controller":
		count(shadowAgree)
	case "shadow: not comparable with the in-tree controller":
		count(shadowNotComparable)
		// The reason without names, times and counts, e.g. "pod P changed readiness".
		why := podName.ReplaceAllString(attrs["why"], "pod P")
		if i := strings.Index(why, " at "); i > 0 && !strings.HasPrefix(why, "the in-tree controller decided") {
			why = why[:i]
		}
		why = digits.ReplaceAllString(why, "N")
		if i := strings.Index(why, ": "); i > 0 && strings.HasPrefix(why, "the metrics differ") {
			why = why[:i]
		}
		h.l.reasons[why]++
	case "shadow: disagrees with the in-tree controller":
		count(shadowDisagree)
		h.l.disagreements = append(h.l.disagreements, time.Now().Format("15:04:05.000")+" "+line.String())
	default:
		if r.Level >= slog.LevelWarn && !strings.HasPrefix(r.Message, "HPA controlled by another manager") {
			h.l.t.Logf("scaler: %s", line.String())
		}
	}
	return nil
}

// TestShadowAgreesWithInTree is the differential on the HPAs of shadowHPAs without a resource
// metric (Pods, Object, External), whose metrics come from the test's metrics adapter; a fake
// kubelet binds their pods and makes them Ready. TestShadowOnMetricsServer has the others.
func TestShadowAgreesWithInTree(t *testing.T) {
	var hpas []diffHPA
	for _, h := range shadowHPAs {
		if !h.cpu && !h.memory {
			hpas = append(hpas, h)
		}
	}
	runShadow(t, shadowRun{hpas: hpas, levels: loadLevels})
}

// TestShadowOnMetricsServer is the differential with the resource metrics users have, on the
// HPAs of shadowHPAs with a CPU or memory metric: the pods run on a kwok node (kwok makes them
// Running and Ready, cpu-unready's 12 s after their start through the kwok-ready-after stage),
// their CPU and memory come from kwok's emulated kubelet /metrics/resource (cpu-missing's
// oldest pod reports none: kwok gives it no CPU time or memory, which metrics-server drops),
// and both controllers read them from the real metrics-server.
func TestShadowOnMetricsServer(t *testing.T) {
	var hpas []diffHPA
	for _, h := range shadowHPAs {
		if h.cpu || h.memory {
			hpas = append(hpas, h)
		}
	}
	runShadow(t, shadowRun{hpas: hpas, levels: loadLevels, kwok: true})
}

// runShadow runs the differential r.
func runShadow(t *testing.T, r shadowRun) {
	// The in-tree controller is the kube-controller-manager of KUBE_BIN_DIR (`make e2e` runs
	// this test on v1.34.4 and again on v1.37.2, both from `make kube-binaries`); the service
	// decides as that release: --kubernetes-version=auto reads it from the API server, of the
	// same build, and the test checks that it did.
	start := time.Now()
	cp := controlplane.Start(t, controlplane.Options{InTreeHPA: true, ControllerManagerFlags: []string{
		"--horizontal-pod-autoscaler-sync-period=" + inTreeSyncPeriod.String(),
		"--horizontal-pod-autoscaler-cpu-initialization-period=" + cpuInitPeriod.String(),
		"--horizontal-pod-autoscaler-initial-readiness-delay=" + readinessDelay.String(),
		"--horizontal-pod-autoscaler-downscale-stabilization=" + downscaleWindow.String(),
	}})
	adapter := controlplane.StartMetricsAdapter(t, cp) // custom and external metrics
	var k *controlplane.Kwok
	if r.kwok {
		k = controlplane.StartKwok(t, cp, controlplane.KwokOptions{})
	}
	for _, h := range r.hpas {
		if (h.cpu || h.memory) && !r.kwok {
			t.Fatalf("%s has a resource metric: metrics.k8s.io comes from metrics-server on kwok (shadowRun.kwok)", h.name)
		}
	}
	cs := cp.Client
	sv, err := cs.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("control plane %s (kube-controller-manager from the same build, HPA controller on) ready in %v", sv.GitVersion, time.Since(start).Round(time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: shadowNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if !r.kwok {
		if _, err := controlplane.EnsureNode(ctx, cs, "node-1"); err != nil {
			t.Fatal(err)
		}
	}

	var wg sync.WaitGroup
	bg, stop := context.WithCancel(ctx)
	defer func() { stop(); wg.Wait() }()
	readyAfter := map[string]time.Duration{}
	for _, h := range r.hpas {
		d := shadowDeployment(h.name)
		if r.kwok {
			d.Spec.Template.Spec.NodeName = k.Nodes[0]
			if h.readyAfter > 0 {
				d.Spec.Template.Annotations = map[string]string{
					controlplane.KwokReadyAfterAnnotation: strconv.Itoa(int(h.readyAfter / time.Second))}
			}
		}
		if _, err := cs.AppsV1().Deployments(shadowNS).Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		readyAfter[h.name] = h.readyAfter
	}
	if !r.kwok {
		wg.Add(1)
		go func() { defer wg.Done(); fakeKubelet(bg, t, cs, readyAfter) }()
	}
	timelineStart := time.Now()
	level := func() float64 {
		i := int(time.Since(timelineStart) / shadowStep)
		return r.levels[min(i, len(r.levels)-1)]
	}
	wg.Add(1)
	go func() { defer wg.Done(); feedMetrics(bg, t, cs, adapter, level, r.hpas, r.mirror, r.kwok) }()

	// The scaler, configured by its flags, on the hpa source.
	cfg := DefaultConfig()
	fs := flag.NewFlagSet("hpa-scaler", flag.ContinueOnError)
	cfg.RegisterFlags(fs)
	svc := startService(t, memstore.New(), realClock(), "127.0.0.1:0")
	if err := fs.Parse(append([]string{
		"--cluster=c1", "--service-addr=" + svc.addr, "--source=hpa", "--namespaces=" + shadowNS,
		"--http-listen=", "--leader-elect=false", "--sync-period=1s",
		"--kubernetes-version=auto",
		"--cpu-initialization-period=" + cpuInitPeriod.String(),
		"--initial-readiness-delay=" + readinessDelay.String(),
		"--downscale-stabilization=" + downscaleWindow.String(),
		"--shadow-settle=" + (2*inTreeSyncPeriod + time.Second).String(),
	}, r.flags...)); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.Options.KubernetesVersion, err = ResolveKubernetesVersion(cfg.Options.KubernetesVersion, cs.Discovery()); err != nil {
		t.Fatal(err)
	}
	if want := recommender.KubernetesVersionOf(sv.Major, sv.Minor); cfg.Options.KubernetesVersion != want {
		t.Fatalf("--kubernetes-version=auto resolved to %q on a %s control plane, want %q", cfg.Options.KubernetesVersion, sv.GitVersion, want)
	}
	t.Logf("the service decides as Kubernetes %s", cfg.Options.KubernetesVersion)
	kube, runner, err := NewKube(cp.Config, "hpa-scaler")
	if err != nil {
		t.Fatal(err)
	}
	if kube.Prometheus, err = DialPrometheus(cfg); err != nil {
		t.Fatal(err)
	}
	kube.PrometheusTimeout = cfg.PrometheusTimeout
	if r.onKube != nil {
		r.onKube(kube)
	}
	if err := runner.Start(bg); err != nil {
		t.Fatal(err)
	}
	client, err := Dial(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	logs := &shadowLog{t: t, results: map[string]map[string]int{}, reasons: map[string]int{}}
	s, err := New(cfg, Deps{Kube: kube, Recommender: client, Logger: slog.New(shadowHandler{l: logs})})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.startObjectSource(bg, &wg, SourceHPA); err != nil {
		t.Fatal(err)
	}

	for _, h := range r.hpas {
		var obj autoscalingv2.HorizontalPodAutoscaler
		ann := h.annotations
		if ann == "" {
			ann = "{}"
		}
		doc := fmt.Sprintf("apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: %s, namespace: %s, annotations: %s}\nspec:\n  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: %s}%s\n", h.name, shadowNS, ann, h.name, h.spec)
		if err := yaml.UnmarshalStrict([]byte(doc), &obj); err != nil {
			t.Fatalf("%s: %v", h.name, err)
		}
		if _, err := cs.AutoscalingV2().HorizontalPodAutoscalers(shadowNS).Create(ctx, &obj, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Shadow only once the in-tree controller owns every status: before its first write the
	// scaler would take the HPA over.
	for _, h := range r.hpas {
		waitAutoscaler(t, s, shadowNS+"/"+h.name, func(a *Autoscaler) bool { return foreignStatusManager(a.HPA) == "kube-controller-manager" })
	}
	t.Logf("every HPA's status is written by kube-controller-manager; shadowing for %v", time.Duration(len(r.levels))*shadowStep-time.Since(timelineStart))

	minR, maxR, peakAt := map[string]int32{}, map[string]int32{}, map[string]time.Time{}
	downAfterPeak := map[string]bool{}
	for time.Since(timelineStart) < time.Duration(len(r.levels))*shadowStep {
		tick := time.Now()
		for _, h := range r.hpas {
			key := shadowNS + "/" + h.name
			if err := s.SyncOne(ctx, key); err != nil {
				t.Logf("sync %s: %v", key, err)
			}
			d, err := cs.AppsV1().Deployments(shadowNS).Get(ctx, h.name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			r := *d.Spec.Replicas
			if r > maxR[h.name] {
				maxR[h.name], peakAt[h.name] = r, time.Now()
			} else if r < maxR[h.name] {
				downAfterPeak[h.name] = true
			}
			if m, ok := minR[h.name]; !ok || r < m {
				minR[h.name] = r
			}
		}
		time.Sleep(time.Until(tick.Add(time.Second)))
	}

	count := func(result string) int {
		return int(testutil.ToFloat64(s.tel.shadowComparisons.WithLabelValues(result)))
	}
	agree, disagree, notComparable := count(shadowAgree), count(shadowDisagree), count(shadowNotComparable)
	t.Logf("shadow comparisons over %d HPAs: agree %d, disagree %d, not comparable %d", len(r.hpas), agree, disagree, notComparable)
	logs.mu.Lock()
	defer logs.mu.Unlock()
	for _, h := range r.hpas {
		res := logs.results[shadowNS+"/"+h.name]
		t.Logf("  %-15s agree %3d  disagree %3d  not comparable %3d  replicas %d..%d", h.name, res[shadowAgree], res[shadowDisagree], res[shadowNotComparable], minR[h.name], maxR[h.name])
		if res[shadowAgree] == 0 {
			t.Errorf("%s: no comparable decision agreed", h.name)
		}
		if maxR[h.name] <= 2 || !downAfterPeak[h.name] {
			t.Errorf("%s: the in-tree controller did not scale it up and down (replicas %d..%d, down after the peak: %v)", h.name, minR[h.name], maxR[h.name], downAfterPeak[h.name])
		}
	}
	reasons := make([]string, 0, len(logs.reasons))
	for r := range logs.reasons {
		reasons = append(reasons, r)
	}
	sort.Slice(reasons, func(i, j int) bool { return logs.reasons[reasons[i]] > logs.reasons[reasons[j]] })
	for _, r := range reasons {
		t.Logf("  not comparable: %4d  %s", logs.reasons[r], r)
	}
	for _, d := range logs.disagreements {
		t.Errorf("disagreement: %s", d)
	}
	if disagree != 0 || agree == 0 {
		t.Errorf("agree %d, disagree %d: want every comparable decision to agree", agree, disagree)
	}
}

// shadowDeployment is Deployment name with 2 replicas of pods labelled app=name, requesting
// 100m CPU and 100Mi memory.
func shadowDeployment(name string) *appsv1.Deployment {
	d := deployment(2)
	d.Name = name
	l := map[string]string{"app": name}
	d.Spec.Selector = &metav1.LabelSelector{MatchLabels: l}
	d.Spec.Template.Labels = l
	d.Spec.Template.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse("100Mi")
	return d
}

// fakeKubelet takes the pods of shadowNS through what a kubelet would: bound to node-1 (the
// scheduler's part), Running and unready one second later, Ready after their workload's
// readyAfter (default defaultReadyAfter). It renews the node every 10 s.
func fakeKubelet(ctx context.Context, t *testing.T, cs kubernetes.Interface, readyAfter map[string]time.Duration) {
	bound := map[string]time.Time{}
	lastNode := time.Now()
	for ctx.Err() == nil {
		if time.Since(lastNode) > 10*time.Second {
			if _, err := controlplane.EnsureNode(ctx, cs, "node-1"); err != nil && ctx.Err() == nil {
				t.Logf("renew node: %v", err)
			}
			lastNode = time.Now()
		}
		pods, err := cs.CoreV1().Pods(shadowNS).List(ctx, metav1.ListOptions{})
		if err != nil {
			continue
		}
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.DeletionTimestamp != nil {
				continue
			}
			switch {
			case p.Spec.NodeName == "":
				if err := controlplane.BindPod(ctx, cs, p, "node-1"); err == nil {
					bound[p.Name] = time.Now()
				}
			case p.Status.Phase != corev1.PodRunning:
				if time.Since(bound[p.Name]) >= time.Second {
					_, _ = controlplane.SetPodStatus(ctx, cs, p, controlplane.PodState{Ready: false})
				}
			case !podState(p).GetReady():
				delay := readyAfter[p.Labels["app"]]
				if delay == 0 {
					delay = defaultReadyAfter
				}
				if st := p.Status.StartTime; st != nil && time.Since(st.Time) >= delay {
					_, _ = controlplane.SetPodStatus(ctx, cs, p, controlplane.PodState{Ready: true, StartTime: st.Time, IP: p.Status.PodIP})
				}
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// feedMetrics sets, every second, each workload's metrics for the load level: the level's
// pods' worth spread evenly over the started pods (resource and Pods metrics), or one value
// (Object and External). The resource metrics go into the pods' kwok usage annotations
// (patched when they change), which metrics-server reads from kwok; a missing pod's usage is
// controlplane.KwokNoUsage.
func feedMetrics(ctx context.Context, t *testing.T, cs kubernetes.Interface, a *controlplane.MetricsAdapter, level func() float64, hpas []diffHPA, mirror metricMirror, kwok bool) {
	annotated := map[string]string{} // pod -> the usage last set in its annotations
	for ctx.Err() == nil {
		v := level()
		pods, err := cs.CoreV1().Pods(shadowNS).List(ctx, metav1.ListOptions{})
		if err == nil {
			started := map[string][]string{}
			oldest := map[string]corev1.Pod{} // per workload: its oldest live pod
			for _, p := range pods.Items {
				if p.DeletionTimestamp != nil {
					continue
				}
				app := p.Labels["app"]
				if o, ok := oldest[app]; !ok || p.CreationTimestamp.Before(&o.CreationTimestamp) ||
					(p.CreationTimestamp.Equal(&o.CreationTimestamp) && p.Name < o.Name) {
					oldest[app] = p
				}
				if p.Status.StartTime != nil {
					started[app] = append(started[app], p.Name)
				}
			}
			for _, h := range hpas {
				names := started[h.name]
				missing := func(pod string) bool { return h.missing && len(names) > 1 && pod == oldest[h.name].Name }
				reporting := 0
				for _, pod := range names {
					if !missing(pod) {
						reporting++
					}
				}
				n := float64(max(1, reporting)) // the load is on the pods that report it
				for _, pod := range names {
					usage := corev1.ResourceList{}
					if h.cpu {
						usage[corev1.ResourceCPU] = *resource.NewMilliQuantity(int64(v*50/n), resource.DecimalSI)
					}
					if h.memory {
						usage[corev1.ResourceMemory] = *resource.NewQuantity(int64(v*50*1024*1024/n), resource.BinarySI)
					} else if h.missing {
						usage[corev1.ResourceMemory] = resource.MustParse("1Mi") // kwok's default, set again after KwokNoUsage
					}
					if missing(pod) {
						usage = controlplane.KwokNoUsage()
					}
					if kwok && len(usage) > 0 {
						setKwokUsage(ctx, cs, annotated, pod, usage)
					}
					if h.pods {
						q := *resource.NewMilliQuantity(int64(v*10000/n), resource.DecimalSI)
						a.SetPodMetric(shadowNS, pod, "rps", q)
						if mirror != nil {
							mirror.podMetric(h, pod, q)
						}
					}
				}
				value := v * 30 // AverageValue: level pods' worth in total
				if strings.HasSuffix(h.name, "-value") {
					value = v * 30 / 3 // Value: the ratio is level/3
				}
				q := *resource.NewMilliQuantity(int64(value*1000), resource.DecimalSI)
				if h.object {
					a.SetObjectMetric(controlplane.ObjectRef{Namespace: shadowNS, Resource: "deployments.apps", Name: h.name}, "queue", q)
				}
				if h.external {
					a.SetExternalMetric(shadowNS, "ext-"+h.name, controlplane.ExternalValue{Labels: map[string]string{"queue": h.name}, Value: q})
				}
				if mirror != nil && (h.object || h.external) {
					mirror.value(h, q)
				}
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// setKwokUsage sets pod's kwok usage annotations to usage unless they already hold it.
func setKwokUsage(ctx context.Context, cs kubernetes.Interface, annotated map[string]string, pod string, usage corev1.ResourceList) {
	key := fmt.Sprint(usage.Cpu(), usage.Memory())
	if annotated[pod] == key {
		return
	}
	if err := controlplane.SetKwokPodUsage(ctx, cs, shadowNS, pod, usage); err == nil {
		annotated[pod] = key
	}
}
