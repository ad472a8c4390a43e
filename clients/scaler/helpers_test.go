package scaler

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	scalefake "k8s.io/client-go/scale/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	metricsapi "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	metricsfake "k8s.io/metrics/pkg/client/clientset/versioned/fake"
	customfake "k8s.io/metrics/pkg/client/custom_metrics/fake"
	externalfake "k8s.io/metrics/pkg/client/external_metrics/fake"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
	"github.com/hpa-recommender/hpa-recommender/server"
	"github.com/hpa-recommender/hpa-recommender/store"
)

var t0 = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// clock is a settable clock shared by the service and the scaler.
type clock struct {
	mu   sync.Mutex
	t    time.Time
	real bool // follow time.Now
}

func realClock() *clock { return &clock{real: true} }

func (c *clock) Now() time.Time {
	if c.real {
		return time.Now()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }
func newClock() *clock               { return &clock{t: t0} }
func quiet() *slog.Logger            { return slog.New(slog.DiscardHandler) }
func q(s string) resource.Quantity   { return resource.MustParse(s) }
func ptr[T any](v T) *T              { return &v }
func mustSelector(s string) labels.Selector {
	sel, err := labels.Parse(s)
	if err != nil {
		panic(err)
	}
	return sel
}

// service is a real hpa-recommender server (memstore) on a loopback port.
type service struct {
	t      testing.TB
	store  store.Store
	clock  *clock
	addr   string
	client pb.RecommenderServiceClient
	conn   *grpc.ClientConn
	stop   func()
}

// startService runs a real server over st on addr ("127.0.0.1:0" for a free port).
func startService(t testing.TB, st store.Store, clk *clock, addr string) *service {
	t.Helper()
	return startServiceWith(t, st, clk, addr, nil)
}

// startServiceWith is startService with mutate (when not nil) changing the server's
// configuration first.
func startServiceWith(t testing.TB, st store.Store, clk *clock, addr string, mutate func(*server.Config)) *service {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.Store = server.StoreMemory
	cfg.MetricsListen = ""
	if mutate != nil {
		mutate(&cfg)
	}
	srv, err := server.New(cfg, server.Deps{Store: st, Now: clk.Now, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	var lis net.Listener
	for i := 0; ; i++ {
		lis, err = net.Listen("tcp", addr)
		if err == nil || i > 50 {
			break
		}
		time.Sleep(100 * time.Millisecond) // the old listener's port is being released
	}
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, lis) }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	s := &service{t: t, store: st, clock: clk, addr: lis.Addr().String(), client: pb.NewRecommenderServiceClient(conn), conn: conn}
	var once sync.Once
	s.stop = func() {
		once.Do(func() {
			conn.Close()
			cancel()
			if err := <-done; err != nil {
				t.Errorf("serve: %v", err)
			}
		})
	}
	t.Cleanup(s.stop)
	return s
}

func (s *service) getTarget(t *testing.T, ns, name string) *pb.GetTargetResponse {
	t.Helper()
	resp, err := s.client.GetTarget(context.Background(), &pb.GetTargetRequest{Target: &pb.TargetRef{Cluster: "c1", Namespace: ns, Name: name}})
	if err != nil {
		t.Fatalf("GetTarget: %v", err)
	}
	return resp
}

// cluster is a fake cluster: one scalable target per name, pods, and per-pod CPU usage, with
// knobs for error injection.
type cluster struct {
	mu        sync.Mutex
	scales    map[string]*autoscalingv1.Scale // namespace/name
	rv        int
	cpu       map[string]string // pod name -> usage
	metricErr error
	getErr    error
	// conflicts makes the next n updates fail with a Conflict; beforeConflict runs first
	// (e.g. to change replicas as another writer would).
	conflicts      int
	beforeConflict func(sc *autoscalingv1.Scale)
	writes         []int32 // every successful write, in order
	staleWrites    int     // updates whose resourceVersion did not match

	scaleFake *scalefake.FakeScaleClient
	metrics   *metricsfake.Clientset
	custom    *customfake.FakeCustomMetricsClient
	external  *externalfake.FakeExternalMetricsClient
	pods      cache.Indexer
	recorder  *record.FakeRecorder
	kube      *Kube
}

var deploymentsGR = schema.GroupResource{Group: "apps", Resource: "deployments"}

func newCluster() *cluster {
	c := &cluster{
		scales:    map[string]*autoscalingv1.Scale{},
		cpu:       map[string]string{},
		scaleFake: &scalefake.FakeScaleClient{},
		metrics:   metricsfake.NewSimpleClientset(),
		custom:    &customfake.FakeCustomMetricsClient{},
		external:  &externalfake.FakeExternalMetricsClient{},
		pods:      cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}),
		recorder:  record.NewFakeRecorder(1000),
	}
	mapper := meta.NewDefaultRESTMapper([]schema.GroupVersion{{Group: "apps", Version: "v1"}})
	mapper.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, meta.RESTScopeNamespace)
	c.scaleFake.AddReactor("get", "deployments", c.getScale)
	c.scaleFake.AddReactor("update", "deployments", c.updateScale)
	c.metrics.PrependReactor("list", "pods", c.listPodMetrics)
	c.kube = &Kube{
		Scales:          c.scaleFake,
		Mapper:          mapper,
		Pods:            corelisters.NewPodLister(c.pods),
		ResourceMetrics: c.metrics.MetricsV1beta1(),
		CustomMetrics:   c.custom,
		ExternalMetrics: c.external,
		Events:          c.recorder,
	}
	return c
}

func (c *cluster) addDeployment(ns, name string, replicas int32, selector string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rv++
	c.scales[ns+"/"+name] = &autoscalingv1.Scale{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: strconv.Itoa(c.rv), UID: types.UID("uid-" + name)},
		Spec:       autoscalingv1.ScaleSpec{Replicas: replicas},
		Status:     autoscalingv1.ScaleStatus{Replicas: replicas, Selector: selector},
	}
}

func (c *cluster) replicas(ns, name string) int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.scales[ns+"/"+name].Spec.Replicas
}

func (c *cluster) getScale(a k8stesting.Action) (bool, runtime.Object, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.getErr != nil {
		return true, nil, c.getErr
	}
	g := a.(k8stesting.GetAction)
	sc, ok := c.scales[g.GetNamespace()+"/"+g.GetName()]
	if !ok {
		return true, nil, apierrors.NewNotFound(deploymentsGR, g.GetName())
	}
	return true, sc.DeepCopy(), nil
}

func (c *cluster) updateScale(a k8stesting.Action) (bool, runtime.Object, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	in := a.(k8stesting.UpdateAction).GetObject().(*autoscalingv1.Scale)
	key := in.Namespace + "/" + in.Name
	sc, ok := c.scales[key]
	if !ok {
		return true, nil, apierrors.NewNotFound(deploymentsGR, in.Name)
	}
	if c.conflicts > 0 {
		c.conflicts--
		if c.beforeConflict != nil {
			c.beforeConflict(sc)
		}
		c.rv++
		sc.ResourceVersion = strconv.Itoa(c.rv)
		return true, nil, apierrors.NewConflict(deploymentsGR, in.Name, fmt.Errorf("the object has been modified"))
	}
	if in.ResourceVersion != sc.ResourceVersion {
		c.staleWrites++
		return true, nil, apierrors.NewConflict(deploymentsGR, in.Name, fmt.Errorf("stale resourceVersion %s", in.ResourceVersion))
	}
	c.rv++
	sc.Spec.Replicas = in.Spec.Replicas
	sc.Status.Replicas = in.Spec.Replicas
	sc.ResourceVersion = strconv.Itoa(c.rv)
	c.writes = append(c.writes, in.Spec.Replicas)
	return true, sc.DeepCopy(), nil
}

func (c *cluster) listPodMetrics(a k8stesting.Action) (bool, runtime.Object, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.metricErr != nil {
		return true, nil, c.metricErr
	}
	l := a.(k8stesting.ListAction)
	sel := l.GetListRestrictions().Labels
	out := &metricsapi.PodMetricsList{}
	objs, err := c.pods.ByIndex(cache.NamespaceIndex, l.GetNamespace())
	if err != nil {
		return true, nil, err
	}
	for _, obj := range objs {
		p := obj.(*corev1.Pod)
		if !sel.Matches(labels.Set(p.Labels)) {
			continue
		}
		usage, ok := c.cpu[p.Name]
		if !ok {
			continue
		}
		out.Items = append(out.Items, metricsapi.PodMetrics{
			ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name, Labels: p.Labels},
			Timestamp:  metav1.NewTime(t0),
			Window:     metav1.Duration{Duration: 30 * time.Second},
			Containers: []metricsapi.ContainerMetrics{{Name: "app", Usage: corev1.ResourceList{corev1.ResourceCPU: q(usage)}}},
		})
	}
	return true, out, nil
}

// addPods adds n ready running pods with a 500m CPU request labelled app=name, each using cpu.
func (c *cluster) addPods(ns, app string, n int, cpu string) {
	for i := range n {
		name := fmt.Sprintf("%s-%d", app, i)
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": app}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "app", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("500m")}},
			}}},
			Status: corev1.PodStatus{
				Phase:     corev1.PodRunning,
				StartTime: ptr(metav1.NewTime(t0.Add(-time.Hour))),
				Conditions: []corev1.PodCondition{{
					Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(-time.Hour)),
				}},
			},
		}
		if err := c.pods.Add(p); err != nil {
			panic(err)
		}
		c.mu.Lock()
		c.cpu[name] = cpu
		c.mu.Unlock()
	}
}

func (c *cluster) setCPU(app string, n int, cpu string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range n {
		c.cpu[fmt.Sprintf("%s-%d", app, i)] = cpu
	}
}

// events drains the recorded events.
func (c *cluster) events() []string {
	var out []string
	for {
		select {
		case e := <-c.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// updates counts update actions on the scale subresource.
func (c *cluster) updates() int {
	n := 0
	for _, a := range c.scaleFake.Actions() {
		if a.GetVerb() == "update" {
			n++
		}
	}
	return n
}

// recorder wraps a Recommender, records requests and can fail calls.
type recording struct {
	Recommender
	mu       sync.Mutex
	requests []*pb.RecommendRequest
	reports  []*pb.ReportScaleRequest
	failRecs int   // fail the next n Recommend calls
	failReps int   // fail the next n ReportScale calls
	failWith error // the error of failed calls
}

func (r *recording) Recommend(ctx context.Context, req *pb.RecommendRequest, opts ...grpc.CallOption) (*pb.RecommendResponse, error) {
	r.mu.Lock()
	r.requests = append(r.requests, req)
	fail := r.failRecs > 0
	if fail {
		r.failRecs--
	}
	r.mu.Unlock()
	if fail {
		return nil, r.failWith
	}
	return r.Recommender.Recommend(ctx, req, opts...)
}

func (r *recording) ReportScale(ctx context.Context, req *pb.ReportScaleRequest, opts ...grpc.CallOption) (*pb.ReportScaleResponse, error) {
	r.mu.Lock()
	r.reports = append(r.reports, req)
	fail := r.failReps > 0
	if fail {
		r.failReps--
	}
	r.mu.Unlock()
	if fail {
		return nil, r.failWith
	}
	return r.Recommender.ReportScale(ctx, req, opts...)
}

func (r *recording) last() *pb.RecommendRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests[len(r.requests)-1]
}

// newScaler returns a Scaler for cluster c1 over kube and rec, with the manifests given as
// YAML documents.
func newScaler(t testing.TB, kube *Kube, rec Recommender, clk *clock, mutate func(*Config), manifests ...string) *Scaler {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Cluster = "c1"
	cfg.ManifestsDir = t.TempDir()
	if mutate != nil {
		mutate(&cfg)
	}
	s, err := New(cfg, Deps{Kube: kube, Recommender: rec, Logger: quiet(), Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	var as []*Autoscaler
	for i, m := range manifests {
		got, err := parseManifests(fmt.Sprintf("m%d.yaml", i), []byte(m))
		if err != nil {
			t.Fatal(err)
		}
		as = append(as, got...)
	}
	s.SetAutoscalers(as)
	return s
}

func (s *Scaler) mustAutoscaler(t testing.TB, key string) *Autoscaler {
	t.Helper()
	a, ok := s.Autoscaler(key)
	if !ok {
		t.Fatalf("no autoscaler %s", key)
	}
	return a
}

// webHPA is a CPU-utilization HPA (target 50%) on Deployment web with a one-minute
// scale-down window, so scale-down tests need not wait five minutes.
const webHPA = `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: web-hpa
  namespace: shop
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 1
  maxReplicas: 10
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}
  behavior:
    scaleDown: {stabilizationWindowSeconds: 60}
`
