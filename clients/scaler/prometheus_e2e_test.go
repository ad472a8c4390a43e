//go:build e2e

package scaler

import (
	"context"
	"fmt"
	"net"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/model"
	"google.golang.org/protobuf/testing/protocmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/hpa-recommender/hpa-recommender/internal/controlplane"
	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

// exporter is a small /metrics endpoint on loopback that a real Prometheus scrapes: gauges
// whose values the test sets.
type exporter struct {
	srv *httptest.Server
	// rps is requests_per_second{pod}; queue is queue_depth{queue}; latency is
	// latency_seconds{pod,path} (two series per pod).
	rps, queue, latency *prometheus.GaugeVec
}

func startExporter(t testing.TB) *exporter {
	t.Helper()
	reg := prometheus.NewRegistry()
	e := &exporter{
		rps:     prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "requests_per_second", Help: "Requests per second of a pod."}, []string{"pod"}),
		queue:   prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "queue_depth", Help: "Messages waiting in a queue."}, []string{"queue"}),
		latency: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "latency_seconds", Help: "Latency of a pod's path."}, []string{"pod", "path"}),
	}
	reg.MustRegister(e.rps, e.queue, e.latency)
	e.srv = httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(e.srv.Close)
	return e
}

func (e *exporter) addr() string { return strings.TrimPrefix(e.srv.URL, "http://") }

// startPrometheusFor starts a real Prometheus scraping e every second and returns a client of
// it (through DialPrometheus, as hpa-scaler builds it).
func startPrometheusFor(t testing.TB, e *exporter) (*controlplane.Prometheus, PrometheusAPI) {
	t.Helper()
	p := controlplane.StartPrometheus(t, controlplane.PrometheusOptions{Targets: []string{e.addr()}})
	cfg := DefaultConfig()
	cfg.PrometheusURL = p.URL
	api, err := DialPrometheus(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p, api
}

// waitQuery polls query until its single value is want (Prometheus has scraped what the test
// set).
func waitQuery(t testing.TB, api PrometheusAPI, query string, want float64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var last string
	for {
		v, _, _, err := api.Query(ctx, query, time.Now())
		if vec, ok := v.(model.Vector); err == nil && ok && len(vec) == 1 && float64(vec[0].Value) == want {
			return
		}
		last = fmt.Sprintf("%v (error %v)", v, err)
		select {
		case <-ctx.Done():
			t.Fatalf("query %s never returned %v; last %s", query, want, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func podsMetric(name string) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: name},
		Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr(q("10"))},
	}}
}

func objectMetric(name string, sel *metav1.LabelSelector) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ObjectMetricSourceType, Object: &autoscalingv2.ObjectMetricSource{
		DescribedObject: autoscalingv2.CrossVersionObjectReference{APIVersion: "v1", Kind: "Service", Name: "front"},
		Metric:          autoscalingv2.MetricIdentifier{Name: name, Selector: sel},
		Target:          autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: ptr(q("10"))},
	}}
}

// TestPrometheusObservations reads each kind of metric from a real Prometheus scraping a real
// exporter: values, the per-pod mapping, the selector template, and every error.
func TestPrometheusObservations(t *testing.T) {
	e := startExporter(t)
	e.rps.WithLabelValues("web-0").Set(12)
	e.rps.WithLabelValues("web-1").Set(0.25)
	e.rps.WithLabelValues("other-0").Set(99) // not a pod of the target
	e.queue.WithLabelValues("orders").Set(30)
	e.queue.WithLabelValues("mail").Set(5)
	e.queue.WithLabelValues("audit").Set(1)
	e.latency.WithLabelValues("web-0", "/a").Set(1)
	e.latency.WithLabelValues("web-0", "/b").Set(2)
	_, api := startPrometheusFor(t, e)
	waitQuery(t, api, "count(requests_per_second) + count(queue_depth) + count(latency_seconds)", 8)

	k := &Kube{Prometheus: api}
	pods := sets.New("web-0", "web-1")
	observe := func(ann string, m autoscalingv2.MetricSpec) *pb.MetricObservation {
		t.Helper()
		id, _ := promMetricID(&m)
		qs, probs := parsePrometheusQueries("shop", map[string]string{PrometheusQueryAnnotationPrefix + id.Name: ann}, []autoscalingv2.MetricSpec{m})
		if len(probs) > 0 {
			t.Fatalf("problems %q", probs)
		}
		return k.prometheusObservation(t.Context(), qs[0], &m, pods)
	}
	orders := &metav1.LabelSelector{MatchLabels: map[string]string{"queue": "orders"}}
	twoQueues := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "queue", Operator: metav1.LabelSelectorOpIn, Values: []string{"orders", "mail"}}}}
	notAudit := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "queue", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"audit"}}}}

	values := []struct {
		name string
		ann  string
		m    autoscalingv2.MetricSpec
		want *pb.MetricObservation
	}{
		{"external, matchLabels selector", `queue_depth{ {{.Selector}} }`, externalMetric("queue_depth", orders), &pb.MetricObservation{Values: []string{"30"}}},
		{"external, In selector summed", `sum(queue_depth{ {{.Selector}} })`, externalMetric("queue_depth", twoQueues), &pb.MetricObservation{Values: []string{"35"}}},
		{"external, NotIn selector and the metric's name", `sum({__name__="{{.Metric}}",{{.Selector}}})`, externalMetric("queue_depth", notAudit), &pb.MetricObservation{Values: []string{"35"}}},
		{"external, an empty selector after a comma", `sum(queue_depth{queue!="audit",{{.Selector}}})`, externalMetric("queue_depth", nil), &pb.MetricObservation{Values: []string{"35"}}},
		{"external, no selector", `sum(queue_depth{ {{.Selector}} })`, externalMetric("queue_depth", nil), &pb.MetricObservation{Values: []string{"36"}}},
		{"external, a scalar", `scalar(queue_depth{queue="mail"}) / 2`, externalMetric("half", nil), &pb.MetricObservation{Values: []string{"2500m"}}},
		{"object", `queue_depth{ {{.Selector}} }`, objectMetric("queue_depth", orders), &pb.MetricObservation{Value: ptr("30")}},
	}
	for _, tc := range values {
		t.Run(tc.name, func(t *testing.T) {
			got := observe(tc.ann, tc.m)
			if diff := cmp.Diff(got, tc.want, protocmp.Transform()); diff != "" {
				t.Errorf("observation (-got +want):\n%s", diff)
			}
		})
	}

	t.Run("pods: one value per pod of the target, from the pod label", func(t *testing.T) {
		got := observe(`requests_per_second`, podsMetric("rps"))
		if got.Error != "" || len(got.PodValues) != 2 {
			t.Fatalf("observation %v, want web-0 and web-1", got)
		}
		for i, want := range []struct{ pod, value string }{{"web-0", "12"}, {"web-1", "250m"}} {
			pv := got.PodValues[i]
			if pv.Pod != want.pod || pv.Value != want.value {
				t.Errorf("pod value %d = %s %s, want %s %s", i, pv.Pod, pv.Value, want.pod, want.value)
			}
			if age := time.Since(pv.Timestamp.AsTime()); age < 0 || age > time.Minute {
				t.Errorf("pod value %d timestamp %v is not the sample's (%v old)", i, pv.Timestamp.AsTime(), age)
			}
		}
	})

	errorsCases := []struct {
		name string
		ann  string
		m    autoscalingv2.MetricSpec
		want string
	}{
		{"several series where one is needed", `queue_depth`, externalMetric("queue_depth", nil), "the Prometheus query returned 3 series; an External metric needs exactly one"},
		{"several series, object", `queue_depth{ {{.Selector}} }`, objectMetric("queue_depth", twoQueues), "the Prometheus query returned 2 series; an Object metric needs exactly one"},
		{"no sample", `queue_depth{queue="none"}`, externalMetric("queue_depth", nil), "the Prometheus query returned no sample"},
		{"a query Prometheus refuses", `sum(queue_depth`, externalMetric("queue_depth", nil), "unable to query Prometheus: bad_data"},
		{"not a number", `queue_depth{queue="orders"} / 0 * 0`, externalMetric("queue_depth", nil), "not a finite number"},
		{"a range vector", `queue_depth{queue="orders"}[1m]`, externalMetric("queue_depth", nil), "returned a matrix, not an instant vector or a scalar"},
		{"pods without the pod label", `sum(requests_per_second)`, podsMetric("rps"), `a series of the Prometheus query has no label "pod"`},
		{"pods with two series for one pod", `latency_seconds`, podsMetric("latency"), "the Prometheus query returned several series for pod web-0"},
		{"pods, only other pods", `requests_per_second{pod="other-0"}`, podsMetric("rps"), "no sample for the target's pods (1 series for other pods)"},
	}
	for _, tc := range errorsCases {
		t.Run(tc.name, func(t *testing.T) {
			got := observe(tc.ann, tc.m)
			if !strings.Contains(got.Error, tc.want) || got.Value != nil || len(got.Values) > 0 || len(got.PodValues) > 0 {
				t.Errorf("observation %v, want only the error %q", got, tc.want)
			}
		})
	}

	t.Run("a value changes with the exporter's", func(t *testing.T) {
		e.queue.WithLabelValues("orders").Set(31)
		waitQuery(t, api, `queue_depth{queue="orders"}`, 31)
		if got := observe(`queue_depth{ {{.Selector}} }`, externalMetric("queue_depth", orders)); len(got.Values) != 1 || got.Values[0] != "31" {
			t.Errorf("observation %v, want 31", got)
		}
	})
}

// TestPrometheusUnavailable: a Prometheus that does not answer in time, or is not there, is an
// error observation.
func TestPrometheusUnavailable(t *testing.T) {
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn // accepted, never answered
	t.Cleanup(func() {
		silent.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedURL := "http://" + closed.Addr().String()
	closed.Close()
	m := externalMetric("queue_depth", nil)
	q := PrometheusQuery{Query: "queue_depth"}
	for _, tc := range []struct{ name, url, want string }{
		{"timeout", "http://" + silent.Addr().String(), "context deadline exceeded"},
		{"refused", closedURL, "connection refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.PrometheusURL = tc.url
			api, err := DialPrometheus(cfg)
			if err != nil {
				t.Fatal(err)
			}
			k := &Kube{Prometheus: api, PrometheusTimeout: 300 * time.Millisecond}
			got := k.prometheusObservation(t.Context(), q, &m, nil)
			if !strings.HasPrefix(got.Error, "unable to query Prometheus: ") || !strings.Contains(got.Error, tc.want) || len(got.Values) > 0 {
				t.Errorf("observation %v, want only an error with %q", got, tc.want)
			}
		})
	}
}

// promHPA is an HPA object whose External metric queue_depth{queue=orders} (target average
// value 10 per replica) is read from Prometheus.
const promHPA = `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: web-hpa
  namespace: shop
  annotations:
    hpa-recommender.io/prometheus-query.queue_depth: 'sum(queue_depth{ {{.Selector}} })'
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 1
  maxReplicas: 10
  metrics:
  - type: External
    external:
      metric:
        name: queue_depth
        selector: {matchLabels: {queue: orders}}
      target: {type: AverageValue, averageValue: "10"}
`

// TestSyncDecidesOnPrometheus: the scaler scales on a query's value and, when the query fails,
// the object shows ScalingActive False with the query's error, as for a failing metrics API.
func TestSyncDecidesOnPrometheus(t *testing.T) {
	e := startExporter(t)
	e.queue.WithLabelValues("orders").Set(35)
	_, api := startPrometheusFor(t, e)
	waitQuery(t, api, `queue_depth{queue="orders"}`, 35)

	w := newHPAWorld(t, promHPA)
	w.c.kube.Prometheus = api
	if err := w.sync(t); err != nil {
		t.Fatal(err)
	}
	// 35 messages at 10 per replica: 4 replicas.
	if got := w.c.replicas("shop", "web"); got != 4 {
		t.Errorf("replicas = %d, want 4 (35 / 10, rounded up); status %+v", got, w.object(t).Status)
	}
	st := w.object(t).Status
	if len(st.CurrentMetrics) != 1 || st.CurrentMetrics[0].External == nil || st.CurrentMetrics[0].External.Current.AverageValue == nil ||
		st.CurrentMetrics[0].External.Current.AverageValue.String() != "17500m" {
		t.Errorf("currentMetrics = %+v, want queue_depth at 35 / 2 replicas", st.CurrentMetrics)
	}
	// The query now finds nothing: an error observation, never a value.
	e.queue.DeleteLabelValues("orders")
	waitQuery(t, api, `absent(queue_depth{queue="orders"})`, 1)
	w.clk.Add(15 * time.Second)
	_ = w.sync(t)
	active := findCond(w.object(t).Status.Conditions, "ScalingActive")
	if active.Status != "False" || active.Reason != "FailedGetExternalMetric" || !strings.Contains(active.Message, "the Prometheus query returned no sample") {
		t.Errorf("ScalingActive = %+v, want False FailedGetExternalMetric with the query's error", active)
	}
	if got := w.c.replicas("shop", "web"); got != 4 {
		t.Errorf("replicas = %d after the query failed, want 4 kept", got)
	}
	if ev := strings.Join(w.c.events(), "\n"); !strings.Contains(ev, "FailedGetExternalMetric") {
		t.Errorf("events %q, want FailedGetExternalMetric", ev)
	}
}

// promShadowHPAs are HPAs whose metrics the scaler reads from Prometheus (their
// prometheus-query annotations) while the in-tree controller reads the same values from the
// metrics APIs (the test's adapter).
var promShadowHPAs = []diffHPA{
	{name: "prom-pods", pods: true, annotations: `{hpa-recommender.io/prometheus-query.rps: 'requests_per_second'}`, spec: `
  minReplicas: 1
  maxReplicas: 8
  metrics:
  - {type: Pods, pods: {metric: {name: rps}, target: {type: AverageValue, averageValue: "10"}}}
  behavior:
    scaleUp: {stabilizationWindowSeconds: 0, policies: [{type: Pods, value: 2, periodSeconds: 10}]}`},
	{name: "prom-external-avg", external: true, annotations: `{hpa-recommender.io/prometheus-query.ext-prom-external-avg: 'sum(queue_depth{ {{.Selector}} })'}`, spec: `
  minReplicas: 1
  maxReplicas: 8
  metrics:
  - type: External
    external: {metric: {name: ext-prom-external-avg, selector: {matchLabels: {queue: prom-external-avg}}}, target: {type: AverageValue, averageValue: "30"}}`},
	{name: "prom-external-value", external: true, annotations: `{hpa-recommender.io/prometheus-query.ext-prom-external-value: 'queue_depth{ {{.Selector}} }'}`, spec: `
  minReplicas: 1
  maxReplicas: 8
  metrics:
  - type: External
    external: {metric: {name: ext-prom-external-value, selector: {matchLabels: {queue: prom-external-value}}}, target: {type: Value, value: "30"}}`},
	{name: "prom-object-avg", object: true, annotations: `{hpa-recommender.io/prometheus-query.queue: 'queue_depth{queue="prom-object-avg"}'}`, spec: `
  minReplicas: 1
  maxReplicas: 8
  metrics:
  - type: Object
    object: {describedObject: {apiVersion: apps/v1, kind: Deployment, name: prom-object-avg}, metric: {name: queue}, target: {type: AverageValue, averageValue: "30"}}`},
}

// exporterMirror exports what the feeder gives the metrics adapter: a pod's rps as
// requests_per_second{pod}, an HPA's Object or External value as queue_depth{queue=<HPA>}.
type exporterMirror struct{ e *exporter }

func (m exporterMirror) podMetric(_ diffHPA, pod string, q resource.Quantity) {
	m.e.rps.WithLabelValues(pod).Set(float64(q.MilliValue()) / 1000)
}

func (m exporterMirror) value(h diffHPA, q resource.Quantity) {
	m.e.queue.WithLabelValues(h.name).Set(float64(q.MilliValue()) / 1000)
}

// countingPrometheus counts the queries the scaler sends, by query.
type countingPrometheus struct {
	PrometheusAPI
	mu sync.Mutex
	n  map[string]int
}

func (c *countingPrometheus) Query(ctx context.Context, query string, ts time.Time, opts ...promv1.Option) (model.Value, promv1.Warnings, promv1.Infos, error) {
	c.mu.Lock()
	c.n[query]++
	c.mu.Unlock()
	return c.PrometheusAPI.Query(ctx, query, ts, opts...)
}

// TestPrometheusShadowAgreesWithInTree is the live differential with the Prometheus source:
// hpa-scaler decides on the queries' values (a real Prometheus scraping the test's exporter)
// while the in-tree controller reads the same values through the metrics APIs, and every
// comparable decision must agree.
func TestPrometheusShadowAgreesWithInTree(t *testing.T) {
	e := startExporter(t)
	p := controlplane.StartPrometheus(t, controlplane.PrometheusOptions{Targets: []string{e.addr()}})
	counter := &countingPrometheus{n: map[string]int{}}
	runShadow(t, shadowRun{
		hpas:   promShadowHPAs,
		levels: []float64{2, 6, 1},
		flags:  []string{"--prometheus-url=" + p.URL},
		mirror: exporterMirror{e},
		onKube: func(k *Kube) { counter.PrometheusAPI = k.Prometheus; k.Prometheus = counter },
	})
	counter.mu.Lock()
	defer counter.mu.Unlock()
	for _, q := range []string{
		`requests_per_second`,
		`sum(queue_depth{ queue="prom-external-avg" })`,
		`queue_depth{ queue="prom-external-value" }`,
		`queue_depth{queue="prom-object-avg"}`,
	} {
		if counter.n[q] == 0 {
			t.Errorf("the scaler never sent the query %s (sent: %v)", q, counter.n)
		}
	}
}
