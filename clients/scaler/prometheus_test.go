package scaler

import (
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The queries against a real Prometheus are in prometheus_e2e_test.go (they need its binary,
// `make prometheus`); these need none.

func TestExpandPromQuery(t *testing.T) {
	id := func(sel *metav1.LabelSelector) *autoscalingv2.MetricIdentifier {
		return &autoscalingv2.MetricIdentifier{Name: "queue_depth", Selector: sel}
	}
	tests := []struct {
		name, text string
		sel        *metav1.LabelSelector
		want       string
		err        string
	}{
		{name: "no template", text: `sum(rate(x[1m]))`, want: `sum(rate(x[1m]))`},
		{name: "namespace and metric", text: `{{.Metric}}{namespace="{{.Namespace}}"}`, want: `queue_depth{namespace="shop"}`},
		{name: "no selector is empty", text: `m{ {{.Selector}} }`, want: `m{  }`},
		{name: "matchLabels sorted and quoted", text: `m{ {{.Selector}} }`,
			sel:  &metav1.LabelSelector{MatchLabels: map[string]string{"queue": "orders", "env": `a"b`}},
			want: `m{ env="a\"b",queue="orders" }`},
		{name: "every operator", text: `{{.Selector}}`,
			sel: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "queue", Operator: metav1.LabelSelectorOpIn, Values: []string{"orders", "a.b"}},
				{Key: "tier", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"x"}},
				{Key: "team", Operator: metav1.LabelSelectorOpExists},
				{Key: "legacy", Operator: metav1.LabelSelectorOpDoesNotExist},
			}},
			want: `queue=~"a\\.b|orders",tier!~"x",team!="",legacy=""`},
		{name: "a Kubernetes key is quoted", text: `{{.Selector}}`,
			sel:  &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "web"}},
			want: `"app.kubernetes.io/name"="web"`},
		{name: "labels before expressions", text: `{{.Selector}}`,
			sel: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "1"},
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "b", Operator: metav1.LabelSelectorOpExists}}},
			want: `a="1",b!=""`},
		{name: "empty", text: "  ", err: "is empty"},
		{name: "bad template", text: `m{ {{.Selector }`, err: "is not a valid query template"},
		{name: "unknown field", text: `m{ {{.Labels}} }`, err: "it may use .Namespace, .Metric and .Selector"},
		{name: "bad operator", text: `m`,
			sel: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "b", Operator: "Gt"}}},
			err: `selector operator "Gt"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := expandPromQuery(tc.text, "shop", id(tc.sel))
			switch {
			case tc.err != "":
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("error %v, want %q", err, tc.err)
				}
			case err != nil:
				t.Errorf("error %v", err)
			case got != tc.want:
				t.Errorf("query %s, want %s", got, tc.want)
			}
		})
	}
}

func TestParsePrometheusQueries(t *testing.T) {
	metrics := []autoscalingv2.MetricSpec{
		{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{Name: "cpu"}},
		{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: "queue",
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"q": "orders"}}}}},
		{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: "rps"}}},
		{Type: autoscalingv2.ObjectMetricSourceType, Object: &autoscalingv2.ObjectMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: "rps"}}},
	}
	p := PrometheusQueryAnnotationPrefix
	got, probs := parsePrometheusQueries("shop", map[string]string{
		p + "queue":      `sum(queue{ {{.Selector}} })`,
		p + "rps":        `sum by (pod) (rate(http_requests_total{namespace="{{.Namespace}}"}[1m]))`,
		p + "cpu":        `x`,
		p + "missing":    `y`,
		PausedAnnotation: "true",
	}, metrics)
	want := map[int]PrometheusQuery{
		1: {Query: `sum(queue{ q="orders" })`},
		2: {Query: `sum by (pod) (rate(http_requests_total{namespace="shop"}[1m]))`},
		3: {Query: `sum by (pod) (rate(http_requests_total{namespace="shop"}[1m]))`},
	}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("queries (-got +want):\n%s", diff)
	}
	wantProbs := []string{
		"annotation hpa-recommender.io/prometheus-query.cpu: metric cpu is a Resource metric, read from metrics.k8s.io; only External, Object and Pods metrics can be read from Prometheus; ignored",
		`annotation hpa-recommender.io/prometheus-query.missing: the spec has no External, Object or Pods metric named "missing"; ignored`,
	}
	if diff := cmp.Diff(probs, wantProbs); diff != "" {
		t.Errorf("problems (-got +want):\n%s", diff)
	}

	// A bad template claims its metrics (they fail), one problem for the annotation.
	got, probs = parsePrometheusQueries("shop", map[string]string{p + "rps": `{{.Nope}}`}, metrics)
	if len(got) != 2 || got[2].Query != "" || !strings.Contains(got[2].Err, "invalid annotation "+p+"rps: the query is not a valid query template") || got[3] != got[2] {
		t.Errorf("queries %+v, want metrics 2 and 3 failing with the annotation's problem", got)
	}
	if len(probs) != 1 || !strings.Contains(probs[0], `annotation hpa-recommender.io/prometheus-query.rps: "{{.Nope}}" is not a valid query template`) ||
		!strings.HasSuffix(probs[0], "metric rps fails until it is fixed") {
		t.Errorf("problems %q, want one naming the annotation", probs)
	}
	if got, probs := parsePrometheusQueries("shop", map[string]string{"other/x": "1"}, metrics); got != nil || probs != nil {
		t.Errorf("no annotation: %v %v, want nothing", got, probs)
	}
}

// TestInvalidPrometheusAnnotation: a query annotation on a metric the spec does not have is
// reported on the object (AnnotationsValid False) and in one event; the object is still served.
func TestInvalidPrometheusAnnotation(t *testing.T) {
	w := newHPAWorld(t, annotate(webHPA, `hpa-recommender.io/prometheus-query.cpu: "sum(x)", hpa-recommender.io/prometheus-query.queue: "sum(y)"`))
	for range 2 {
		if err := w.sync(t); err != nil {
			t.Fatal(err)
		}
		w.clk.Add(15 * time.Second)
	}
	if got := w.c.replicas("shop", "web"); got != 4 {
		t.Errorf("replicas = %d, want 4: the CPU metric is still read from metrics.k8s.io", got)
	}
	c := findCond(w.object(t).Status.Conditions, string(condAnnotationsValid))
	if c.Status != "False" || c.Reason != ReasonInvalidAnnotation || !strings.Contains(c.Message, "prometheus-query.cpu: metric cpu is a Resource metric") ||
		!strings.Contains(c.Message, `prometheus-query.queue: the spec has no External, Object or Pods metric named "queue"`) {
		t.Errorf("AnnotationsValid = %+v, want False InvalidAnnotation naming both", c)
	}
	if n := countEvents(w.c.events(), ReasonInvalidAnnotation); n != 1 {
		t.Errorf("InvalidAnnotation events = %d over two syncs, want 1", n)
	}
}

// TestPrometheusWithoutURL: an annotated metric with no --prometheus-url fails (ScalingActive
// False naming the flag); it is never read from the metrics APIs instead.
func TestPrometheusWithoutURL(t *testing.T) {
	hpa := strings.Replace(webHPA, `  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}`, `  - type: External
    external: {metric: {name: queue}, target: {type: AverageValue, averageValue: "10"}}`, 1)
	w := newHPAWorld(t, annotate(hpa, `hpa-recommender.io/prometheus-query.queue: "sum(queue)"`))
	_ = w.sync(t)
	c := findCond(w.object(t).Status.Conditions, "ScalingActive")
	if c.Status != "False" || c.Reason != "FailedGetExternalMetric" || !strings.Contains(c.Message, "no Prometheus client (set --prometheus-url)") {
		t.Errorf("ScalingActive = %+v, want False FailedGetExternalMetric naming --prometheus-url", c)
	}
	if acts := w.c.external.Actions(); len(acts) != 0 {
		t.Errorf("external metrics API called %d times, want never", len(acts))
	}
}

func TestPrometheusConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(*Config)
		want string // "" valid
	}{
		{"off", func(*Config) {}, ""},
		{"http", func(c *Config) { c.PrometheusURL = "http://prometheus.monitoring:9090" }, ""},
		{"token over loopback http", func(c *Config) { c.PrometheusURL = "http://127.0.0.1:9090"; c.PrometheusTokenFile = "/t" }, ""},
		{"token over https", func(c *Config) {
			c.PrometheusURL = "https://p.example:9090"
			c.PrometheusTokenFile = "/t"
			c.PrometheusCA = "/ca"
		}, ""},
		{"token over plaintext", func(c *Config) { c.PrometheusURL = "http://p.example:9090"; c.PrometheusTokenFile = "/t" }, "needs https"},
		{"ca over http", func(c *Config) { c.PrometheusURL = "http://p.example:9090"; c.PrometheusCA = "/ca" }, "--prometheus-ca needs an https://"},
		{"not a URL", func(c *Config) { c.PrometheusURL = "p.example:9090" }, "is not an http:// or https:// URL"},
		{"ca without url", func(c *Config) { c.PrometheusCA = "/ca" }, "need --prometheus-url"},
		{"timeout", func(c *Config) { c.PrometheusURL = "http://p:1"; c.PrometheusTimeout = 0 }, "--prometheus-timeout must be positive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			c.Cluster = "c1"
			c.Source = SourceCustom
			tc.set(&c)
			err := c.Validate()
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("Validate() = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestDialPrometheus: the client verifies an https Prometheus with --prometheus-ca and sends
// the token of --prometheus-token-file, re-read when the file changes.
func TestDialPrometheus(t *testing.T) {
	var mu sync.Mutex
	var auth []string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
		if r.URL.Path != "/api/v1/query" || r.FormValue("query") != "up" {
			http.Error(w, "unexpected "+r.URL.String(), http.StatusBadRequest)
			return
		}
		fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1700000000,"7"]}]}}`)
	}))
	defer srv.Close()
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	tok := filepath.Join(dir, "token")
	if err := os.WriteFile(tok, []byte("first\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.PrometheusURL, cfg.PrometheusCA, cfg.PrometheusTokenFile = srv.URL, ca, tok
	api, err := DialPrometheus(cfg)
	if err != nil {
		t.Fatal(err)
	}
	k := &Kube{Prometheus: api}
	m := externalMetric("up", nil)
	if got := k.prometheusObservation(t.Context(), PrometheusQuery{Query: "up"}, &m, nil); len(got.Values) != 1 || got.Values[0] != "7" {
		t.Fatalf("observation %v, want 7", got)
	}
	if err := os.WriteFile(tok, []byte("second"), 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // the token file is re-read at most once a second
	_ = k.prometheusObservation(t.Context(), PrometheusQuery{Query: "up"}, &m, nil)
	mu.Lock()
	sent := slices.Clone(auth)
	mu.Unlock()
	if diff := cmp.Diff(sent, []string{"Bearer first", "Bearer second"}); diff != "" {
		t.Errorf("Authorization headers (-got +want):\n%s", diff)
	}

	// Without the CA the server is not trusted: an error observation.
	cfg.PrometheusCA = ""
	api, err = DialPrometheus(cfg)
	if err != nil {
		t.Fatal(err)
	}
	k.Prometheus = api
	if got := k.prometheusObservation(t.Context(), PrometheusQuery{Query: "up"}, &m, nil); !strings.Contains(got.Error, "certificate") {
		t.Errorf("observation %v without the CA, want a certificate error", got)
	}
	if _, err := DialPrometheus(Config{PrometheusURL: srv.URL, PrometheusTokenFile: filepath.Join(dir, "absent")}); err == nil {
		t.Error("DialPrometheus with a missing token file succeeded")
	}
}

func externalMetric(name string, sel *metav1.LabelSelector) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: name, Selector: sel},
		Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr(q("10"))},
	}}
}

// TestPrometheusQueriesOnEverySource: the query annotations are read from a manifest, an HPA
// object and a CentralHorizontalPodAutoscaler alike, with the autoscaler's namespace (a
// manifest without one is in "default").
func TestPrometheusQueriesOnEverySource(t *testing.T) {
	ann := map[string]string{PrometheusQueryAnnotationPrefix + "queue": `sum(q{namespace="{{.Namespace}}",{{.Selector}}})`}
	spec := autoscalingv2.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}, MaxReplicas: 3,
		Metrics: []autoscalingv2.MetricSpec{externalMetric("queue", &metav1.LabelSelector{MatchLabels: map[string]string{"q": "orders"}})},
	}
	h := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-hpa", Annotations: ann}, Spec: spec}
	fromHPA := hpaAutoscaler(h)
	u, err := toCustom(h, customFields{})
	if err != nil {
		t.Fatal(err)
	}
	fromCustom, err := customAutoscaler(u)
	if err != nil {
		t.Fatal(err)
	}
	manifests, err := parseManifests("m.yaml", []byte(`apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: web-hpa
  annotations: {hpa-recommender.io/prometheus-query.queue: 'sum(q{namespace="{{.Namespace}}",{{.Selector}}})'}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 3
  metrics:
  - type: External
    external: {metric: {name: queue, selector: {matchLabels: {q: orders}}}, target: {type: AverageValue, averageValue: "10"}}
`))
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		a  *Autoscaler
		ns string
	}{"hpa": {fromHPA, "shop"}, "custom": {fromCustom, "shop"}, "manifests": {manifests[0], "default"}} {
		want := map[int]PrometheusQuery{0: {Query: `sum(q{namespace="` + tc.ns + `",q="orders"})`}}
		if diff := cmp.Diff(tc.a.Controls.PrometheusQueries, want); diff != "" || len(tc.a.Controls.Problems) > 0 {
			t.Errorf("%s: queries (-got +want):\n%s; problems %q", name, diff, tc.a.Controls.Problems)
		}
	}
}
