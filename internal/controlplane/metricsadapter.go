package controlplane

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	custommetricsv1beta2 "k8s.io/metrics/pkg/apis/custom_metrics/v1beta2"
	externalmetricsv1beta1 "k8s.io/metrics/pkg/apis/external_metrics/v1beta1"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"

	"github.com/hpa-recommender/hpa-recommender/internal/certgen"
)

// The API group versions a MetricsAdapter serves.
var (
	CustomMetricsGV   = custommetricsv1beta2.SchemeGroupVersion   // custom.metrics.k8s.io/v1beta2
	ExternalMetricsGV = externalmetricsv1beta1.SchemeGroupVersion // external.metrics.k8s.io/v1beta1
	ResourceMetricsGV = metricsv1beta1.SchemeGroupVersion         // metrics.k8s.io/v1beta1
)

// MetricsAdapter is a test metrics API server on a loopback HTTPS port serving
// custom.metrics.k8s.io/v1beta2, external.metrics.k8s.io/v1beta1 and metrics.k8s.io/v1beta1
// (PodMetrics) with values the test sets. Register it with kube-apiserver's aggregation
// layer (StartMetricsAdapter does) or call URL directly.
//
// The e2e tests use it for the custom and external metrics APIs, whose values a test must
// choose and no real component serves; resource metrics come from the real metrics-server on
// kwok nodes (StartKwok, which takes v1beta1.metrics.k8s.io over). Its metrics.k8s.io
// (SetPodUsage) remains for the fleet benchmark (cmd/hpa-bench/internal/fleet), whose
// thousands of pods no kwok node runs, and for tests of the adapter itself.
//
// Wildcard requests (pods/* custom metrics, PodMetrics lists) select pods by listing them
// with the request's labelSelector through the Pods client given at construction (nil: every
// pod with a value, selector ignored). metricLabelSelector is not applied to custom metrics
// (one value per object and metric); it is recorded in Requests. External values are
// filtered by their labels.
type MetricsAdapter struct {
	// URL is https://127.0.0.1:Port; CAPEM verifies its serving certificate, which is valid
	// for 127.0.0.1, localhost and the registration service's DNS names.
	URL   string
	Port  int
	CAPEM []byte

	pods     kubernetes.Interface
	cached   atomic.Bool // list pods from the API server's watch cache (ListPodsFromCache)
	listener net.Listener
	srv      *http.Server

	mu       sync.Mutex
	objects  map[objectKey]resource.Quantity
	external map[nsName][]ExternalValue
	usage    map[nsName][]metricsv1beta1.ContainerMetrics
	failures map[string]int // API group -> HTTP status
	requests []Request
	now      func() time.Time
	window   time.Duration
}

// ObjectRef names the object a custom metric describes. Resource is the qualified
// resource the custom metrics client puts in the URL: "pods", "services",
// "deployments.apps", "ingresses.networking.k8s.io", "namespaces". Namespace is empty for
// cluster-scoped objects (and for a namespace's own metrics: Resource "namespaces", Name
// the namespace).
type ObjectRef struct {
	Namespace, Resource, Name string
}

// ExternalValue is one series of an external metric.
type ExternalValue struct {
	Labels map[string]string
	Value  resource.Quantity
}

// Request is what the adapter saw of one request: the user is the X-Remote-User the
// aggregator forwards (empty for direct calls).
type Request struct {
	Method, Path string
	Query        url.Values
	User         string
	Groups       []string
	// ClientCN is the verified client certificate's common name (FrontProxyClientName
	// through the aggregator).
	ClientCN string
}

type objectKey struct {
	ObjectRef
	metric string
}

type nsName struct{ namespace, name string }

// SetObjectMetric sets custom metric for obj (replacing any previous value).
func (a *MetricsAdapter) SetObjectMetric(obj ObjectRef, metric string, v resource.Quantity) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.objects[objectKey{obj, metric}] = v
}

// SetPodMetric sets custom metric for a pod (a Pods metric source reads these through
// pods/*).
func (a *MetricsAdapter) SetPodMetric(namespace, pod, metric string, v resource.Quantity) {
	a.SetObjectMetric(ObjectRef{Namespace: namespace, Resource: "pods", Name: pod}, metric, v)
}

// DeleteObjectMetric removes a custom metric value: reads of it answer 404 (or leave the
// pod out of a pods/* list).
func (a *MetricsAdapter) DeleteObjectMetric(obj ObjectRef, metric string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.objects, objectKey{obj, metric})
}

// SetExternalMetric sets every series of the external metric in namespace. No values:
// an empty list; never set (or deleted): 404.
func (a *MetricsAdapter) SetExternalMetric(namespace, metric string, values ...ExternalValue) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.external[nsName{namespace, metric}] = append([]ExternalValue{}, values...)
}

// DeleteExternalMetric removes the external metric (404 afterwards).
func (a *MetricsAdapter) DeleteExternalMetric(namespace, metric string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.external, nsName{namespace, metric})
}

// SetPodUsage sets the resource usage metrics.k8s.io reports for a pod, per container.
// nil removes the pod's metrics.
func (a *MetricsAdapter) SetPodUsage(namespace, pod string, containers map[string]corev1.ResourceList) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if containers == nil {
		delete(a.usage, nsName{namespace, pod})
		return
	}
	var cms []metricsv1beta1.ContainerMetrics
	for _, name := range slices.Sorted(maps.Keys(containers)) {
		cms = append(cms, metricsv1beta1.ContainerMetrics{Name: name, Usage: containers[name].DeepCopy()})
	}
	a.usage[nsName{namespace, pod}] = cms
}

// SetFailure makes every request for the API group (e.g. CustomMetricsGV.Group) answer
// status (a metav1.Status error) except discovery; 0 clears it.
func (a *MetricsAdapter) SetFailure(group string, status int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if status == 0 {
		delete(a.failures, group)
	} else {
		a.failures[group] = status
	}
}

// SetClock sets the timestamp reported with every value (default time.Now) and the window
// (default 1 minute).
func (a *MetricsAdapter) SetClock(now func() time.Time, window time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.now, a.window = now, window
}

// Requests returns the metric (non-discovery) requests served so far.
func (a *MetricsAdapter) Requests() []Request {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.requests)
}

// NewMetricsAdapter starts an adapter on a free 127.0.0.1 port with a serving certificate
// from its own CA. pods (may be nil) resolves label selectors. Close it when done.
func NewMetricsAdapter(pods kubernetes.Interface) (*MetricsAdapter, error) {
	servingCA, err := certgen.NewCA("kubetest-metrics-ca")
	if err != nil {
		return nil, err
	}
	return newMetricsAdapter(pods, servingCA, nil)
}

// StartMetricsAdapter starts an adapter whose serving certificate comes from the control
// plane's CA and which verifies the aggregator's front-proxy client certificate, registers
// it for all three APIs (Register with DefaultRegistration) and waits until kube-apiserver
// reports the APIServices Available. Cleanup closes it.
func StartMetricsAdapter(t testing.TB, cp *ControlPlane) *MetricsAdapter {
	t.Helper()
	a, err := newMetricsAdapter(cp.Client, cp.servingCA, cp.frontProxyCA)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := a.Register(ctx, cp, DefaultRegistration); err != nil {
		t.Fatal(err)
	}
	return a
}

// Close stops the server.
func (a *MetricsAdapter) Close() { _ = a.srv.Close() }

func newMetricsAdapter(pods kubernetes.Interface, servingCA, clientCA *certgen.CA) (*MetricsAdapter, error) {
	hosts := []string{"127.0.0.1", "localhost"}
	for _, ns := range []string{DefaultRegistration.ServiceNamespace} {
		svc := DefaultRegistration.ServiceName
		hosts = append(hosts, svc+"."+ns+".svc", svc+"."+ns+".svc.cluster.local")
	}
	certPEM, keyPEM, err := servingCA.SignServer("kubetest-metrics-adapter", hosts...)
	if err != nil {
		return nil, err
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	tlsCfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if clientCA != nil {
		tlsCfg.ClientCAs = clientCA.Pool()
		tlsCfg.ClientAuth = tls.VerifyClientCertIfGiven
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	a := &MetricsAdapter{
		Port:     l.Addr().(*net.TCPAddr).Port,
		CAPEM:    servingCA.CertPEM,
		pods:     pods,
		listener: l,
		objects:  map[objectKey]resource.Quantity{},
		external: map[nsName][]ExternalValue{},
		usage:    map[nsName][]metricsv1beta1.ContainerMetrics{},
		failures: map[string]int{},
		now:      time.Now,
		window:   time.Minute,
	}
	a.URL = "https://" + hostPort(a.Port)
	a.srv = &http.Server{Handler: a, TLSConfig: tlsCfg, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = a.srv.ServeTLS(l, "", "") }()
	return a, nil
}

// ServeHTTP implements the three metrics APIs and their discovery documents.
func (a *MetricsAdapter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		writeStatus(w, apierrors.NewMethodNotSupported(schema.GroupResource{}, r.Method))
		return
	}
	path := strings.Trim(r.URL.Path, "/")
	switch path {
	case "healthz", "readyz", "livez":
		w.Write([]byte("ok"))
		return
	case "apis":
		writeJSON(w, a.groupList())
		return
	}
	parts := strings.Split(path, "/")
	if len(parts) < 2 || parts[0] != "apis" {
		writeStatus(w, apierrors.NewNotFound(schema.GroupResource{}, path))
		return
	}
	var gv schema.GroupVersion
	for _, g := range []schema.GroupVersion{CustomMetricsGV, ExternalMetricsGV, ResourceMetricsGV} {
		if g.Group == parts[1] {
			gv = g
		}
	}
	if gv.Empty() || (len(parts) > 2 && parts[2] != gv.Version) {
		writeStatus(w, apierrors.NewNotFound(schema.GroupResource{}, path))
		return
	}
	switch len(parts) {
	case 2:
		writeJSON(w, apiGroup(gv))
		return
	case 3:
		writeJSON(w, apiResources(gv))
		return
	}

	rest := parts[3:]
	req := Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), User: r.Header.Get("X-Remote-User"), Groups: r.Header.Values("X-Remote-Group")}
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		req.ClientCN = r.TLS.PeerCertificates[0].Subject.CommonName
	}
	a.mu.Lock()
	a.requests = append(a.requests, req)
	failure := a.failures[gv.Group]
	a.mu.Unlock()
	if failure != 0 {
		writeStatus(w, apierrors.FromObject(&metav1.Status{
			Status: metav1.StatusFailure, Code: int32(failure), Reason: metav1.StatusReason(http.StatusText(failure)),
			Message: fmt.Sprintf("controlplane: %s fails with %d (SetFailure)", gv.Group, failure),
		}))
		return
	}
	selector, err := labels.Parse(r.URL.Query().Get("labelSelector"))
	if err != nil {
		writeStatus(w, apierrors.NewBadRequest(err.Error()))
		return
	}
	var obj any
	switch gv {
	case CustomMetricsGV:
		obj, err = a.custom(r.Context(), rest, selector)
	case ExternalMetricsGV:
		obj, err = a.externalMetric(rest, selector)
	case ResourceMetricsGV:
		obj, err = a.resourceMetrics(r.Context(), rest, selector)
	}
	if err != nil {
		writeStatus(w, err)
		return
	}
	writeJSON(w, obj)
}

// custom serves custom.metrics.k8s.io/v1beta2 paths:
//
//	namespaces/{ns}/{resource}/{name|*}/{metric}   namespaced objects
//	namespaces/{ns}/metrics/{metric}               the namespace itself
//	{resource}/{name|*}/{metric}                   cluster-scoped objects
func (a *MetricsAdapter) custom(ctx context.Context, p []string, selector labels.Selector) (any, error) {
	var ref ObjectRef
	var metric string
	switch {
	case len(p) == 5 && p[0] == "namespaces":
		ref, metric = ObjectRef{Namespace: p[1], Resource: p[2], Name: p[3]}, p[4]
	case len(p) == 4 && p[0] == "namespaces" && p[2] == "metrics":
		ref, metric = ObjectRef{Resource: "namespaces", Name: p[1]}, p[3]
	case len(p) == 3:
		ref, metric = ObjectRef{Resource: p[0], Name: p[1]}, p[2]
	default:
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: CustomMetricsGV.Group}, strings.Join(p, "/"))
	}
	var names []string
	if ref.Name == custommetricsv1beta2.AllObjects {
		var err error
		if names, err = a.matchingNames(ctx, ref, metric, selector); err != nil {
			return nil, err
		}
	} else {
		names = []string{ref.Name}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	now, window := metav1.NewTime(a.now()), int64(a.window/time.Second)
	list := &custommetricsv1beta2.MetricValueList{TypeMeta: metav1.TypeMeta{Kind: "MetricValueList", APIVersion: CustomMetricsGV.String()}, Items: []custommetricsv1beta2.MetricValue{}}
	for _, name := range names {
		o := ref
		o.Name = name
		v, ok := a.objects[objectKey{o, metric}]
		if !ok {
			if ref.Name != custommetricsv1beta2.AllObjects {
				return nil, apierrors.NewNotFound(schema.GroupResource{Group: CustomMetricsGV.Group, Resource: ref.Resource}, name+"/"+metric)
			}
			continue
		}
		gr := schema.ParseGroupResource(ref.Resource)
		list.Items = append(list.Items, custommetricsv1beta2.MetricValue{
			DescribedObject: corev1.ObjectReference{
				Kind: kindOf(gr), APIVersion: gr.Group + "/", Namespace: ref.Namespace, Name: name,
			},
			Metric:        custommetricsv1beta2.MetricIdentifier{Name: metric},
			Timestamp:     now,
			WindowSeconds: &window,
			Value:         v,
		})
	}
	return list, nil
}

// matchingNames lists the objects of ref.Resource in ref.Namespace that have metric set
// and, for pods with a client, match selector.
func (a *MetricsAdapter) matchingNames(ctx context.Context, ref ObjectRef, metric string, selector labels.Selector) ([]string, error) {
	if ref.Resource == "pods" && a.pods != nil {
		return a.podNames(ctx, ref.Namespace, selector)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var names []string
	for k := range a.objects {
		if k.Namespace == ref.Namespace && k.Resource == ref.Resource && k.metric == metric {
			names = append(names, k.Name)
		}
	}
	slices.Sort(names)
	return names, nil
}

// ListPodsFromCache makes the adapter resolve pod selectors from kube-apiserver's watch cache
// (resourceVersion "0") instead of a quorum read from etcd, as a metrics server answers from
// memory: for load runs with thousands of pods (hpa-bench's fleet), where a read from etcd per
// metrics request would load the control plane more than the client under test. A pod created
// a moment ago may be missing from such a list.
func (a *MetricsAdapter) ListPodsFromCache() { a.cached.Store(true) }

func (a *MetricsAdapter) listOptions(selector labels.Selector) metav1.ListOptions {
	o := metav1.ListOptions{LabelSelector: selector.String()}
	if a.cached.Load() {
		o.ResourceVersion = "0"
	}
	return o
}

func (a *MetricsAdapter) podNames(ctx context.Context, namespace string, selector labels.Selector) ([]string, error) {
	pods, err := a.pods.CoreV1().Pods(namespace).List(ctx, a.listOptions(selector))
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("controlplane: list pods: %w", err))
	}
	var names []string
	for _, p := range pods.Items {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	return names, nil
}

// externalMetric serves namespaces/{ns}/{metric}.
func (a *MetricsAdapter) externalMetric(p []string, selector labels.Selector) (any, error) {
	if len(p) != 3 || p[0] != "namespaces" {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: ExternalMetricsGV.Group}, strings.Join(p, "/"))
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	values, ok := a.external[nsName{p[1], p[2]}]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: ExternalMetricsGV.Group}, p[2])
	}
	now, window := metav1.NewTime(a.now()), int64(a.window/time.Second)
	list := &externalmetricsv1beta1.ExternalMetricValueList{TypeMeta: metav1.TypeMeta{Kind: "ExternalMetricValueList", APIVersion: ExternalMetricsGV.String()}, Items: []externalmetricsv1beta1.ExternalMetricValue{}}
	for _, v := range values {
		if !selector.Matches(labels.Set(v.Labels)) {
			continue
		}
		list.Items = append(list.Items, externalmetricsv1beta1.ExternalMetricValue{
			MetricName: p[2], MetricLabels: maps.Clone(v.Labels), Timestamp: now, WindowSeconds: &window, Value: v.Value,
		})
	}
	return list, nil
}

// resourceMetrics serves namespaces/{ns}/pods[/{name}], pods and nodes (always empty).
func (a *MetricsAdapter) resourceMetrics(ctx context.Context, p []string, selector labels.Selector) (any, error) {
	notFound := apierrors.NewNotFound(schema.GroupResource{Group: ResourceMetricsGV.Group, Resource: "pods"}, strings.Join(p, "/"))
	var namespace, name string
	switch {
	case len(p) == 1 && p[0] == "nodes":
		return &metricsv1beta1.NodeMetricsList{TypeMeta: metav1.TypeMeta{Kind: "NodeMetricsList", APIVersion: ResourceMetricsGV.String()}, Items: []metricsv1beta1.NodeMetrics{}}, nil
	case len(p) == 1 && p[0] == "pods":
	case len(p) == 3 && p[0] == "namespaces" && p[2] == "pods":
		namespace = p[1]
	case len(p) == 4 && p[0] == "namespaces" && p[2] == "pods":
		namespace, name = p[1], p[3]
	default:
		return nil, notFound
	}
	var keys []nsName
	if name != "" {
		keys = []nsName{{namespace, name}}
	} else if a.pods != nil {
		pods, err := a.pods.CoreV1().Pods(namespace).List(ctx, a.listOptions(selector))
		if err != nil {
			return nil, apierrors.NewInternalError(fmt.Errorf("controlplane: list pods: %w", err))
		}
		for _, p := range pods.Items {
			keys = append(keys, nsName{p.Namespace, p.Name})
		}
	} else {
		a.mu.Lock()
		for k := range a.usage {
			if namespace == "" || k.namespace == namespace {
				keys = append(keys, k)
			}
		}
		a.mu.Unlock()
	}
	slices.SortFunc(keys, func(x, y nsName) int { return strings.Compare(x.namespace+"/"+x.name, y.namespace+"/"+y.name) })
	a.mu.Lock()
	defer a.mu.Unlock()
	now, window := metav1.NewTime(a.now()), metav1.Duration{Duration: a.window}
	list := &metricsv1beta1.PodMetricsList{TypeMeta: metav1.TypeMeta{Kind: "PodMetricsList", APIVersion: ResourceMetricsGV.String()}, Items: []metricsv1beta1.PodMetrics{}}
	for _, k := range keys {
		cms, ok := a.usage[k]
		if !ok {
			continue
		}
		pm := metricsv1beta1.PodMetrics{
			TypeMeta:   metav1.TypeMeta{Kind: "PodMetrics", APIVersion: ResourceMetricsGV.String()},
			ObjectMeta: metav1.ObjectMeta{Name: k.name, Namespace: k.namespace, CreationTimestamp: now},
			Timestamp:  now, Window: window,
		}
		for _, c := range cms {
			pm.Containers = append(pm.Containers, metricsv1beta1.ContainerMetrics{Name: c.Name, Usage: c.Usage.DeepCopy()})
		}
		if name != "" {
			return &pm, nil
		}
		pm.TypeMeta = metav1.TypeMeta{}
		list.Items = append(list.Items, pm)
	}
	if name != "" {
		return nil, notFound
	}
	return list, nil
}

func kindOf(gr schema.GroupResource) string {
	switch gr.Resource {
	case "pods":
		return "Pod"
	case "services":
		return "Service"
	case "namespaces":
		return "Namespace"
	case "nodes":
		return "Node"
	case "deployments":
		return "Deployment"
	case "replicasets":
		return "ReplicaSet"
	case "statefulsets":
		return "StatefulSet"
	case "ingresses":
		return "Ingress"
	}
	return ""
}

func (a *MetricsAdapter) groupList() *metav1.APIGroupList {
	l := &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
	for _, gv := range []schema.GroupVersion{CustomMetricsGV, ExternalMetricsGV, ResourceMetricsGV} {
		g := apiGroup(gv)
		g.TypeMeta = metav1.TypeMeta{}
		l.Groups = append(l.Groups, *g)
	}
	return l
}

func apiGroup(gv schema.GroupVersion) *metav1.APIGroup {
	v := metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version}
	return &metav1.APIGroup{
		TypeMeta: metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"},
		Name:     gv.Group, Versions: []metav1.GroupVersionForDiscovery{v}, PreferredVersion: v,
	}
}

func apiResources(gv schema.GroupVersion) *metav1.APIResourceList {
	l := &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv.String()}
	switch gv {
	case CustomMetricsGV:
		l.APIResources = []metav1.APIResource{{Name: "metrics", Namespaced: true, Kind: "MetricValueList", Verbs: []string{"get"}}}
	case ExternalMetricsGV:
		l.APIResources = []metav1.APIResource{{Name: "externalmetrics", Namespaced: true, Kind: "ExternalMetricValueList", Verbs: []string{"get"}}}
	case ResourceMetricsGV:
		l.APIResources = []metav1.APIResource{
			{Name: "pods", Namespaced: true, Kind: "PodMetrics", Verbs: []string{"get", "list"}},
			{Name: "nodes", Namespaced: false, Kind: "NodeMetrics", Verbs: []string{"get", "list"}},
		}
	}
	return l
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func writeStatus(w http.ResponseWriter, err error) {
	var se apierrors.APIStatus
	if !errors.As(err, &se) {
		se = apierrors.NewInternalError(err)
	}
	st := se.Status()
	st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(st.Code))
	_ = json.NewEncoder(w).Encode(st)
}

// NewMetricsAdapterFor is StartMetricsAdapter without registering or a testing.TB: an
// adapter trusted by cp (serving certificate from cp's CA, front-proxy client certificates
// verified) whose pod selectors resolve through pods, a client of cp (nil: cp.Client, whose
// rate limit of 100 requests/s is also the adapter's rate of pod metrics; a load run passes
// a faster one). Register it, and Close it.
func NewMetricsAdapterFor(cp *ControlPlane, pods kubernetes.Interface) (*MetricsAdapter, error) {
	if pods == nil {
		pods = cp.Client
	}
	return newMetricsAdapter(pods, cp.servingCA, cp.frontProxyCA)
}
