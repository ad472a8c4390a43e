package scaler

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"google.golang.org/protobuf/types/known/timestamppb"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/hpa-recommender/hpa-recommender/clients/goclient"
	"github.com/hpa-recommender/hpa-recommender/internal/tlsfiles"
	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

// This file reads an External, Object or Pods metric straight from Prometheus's HTTP API
// (Prometheus's own client, github.com/prometheus/client_golang/api) when the autoscaler's
// annotation hpa-recommender.io/prometheus-query.<metric name> holds a PromQL query for it:
// users who keep their application metrics in Prometheus need no metrics adapter in between.
//
// The query is a Go text/template expanded once per version of the autoscaler with
// PrometheusQueryData: {{.Namespace}} is the autoscaler's namespace, {{.Metric}} the metric's
// name, {{.Selector}} the metric's selector (spec.metrics[].*.metric.selector) as PromQL label
// matchers. The hand-written part is that expansion and the mapping of the result to an
// observation, as the metrics APIs' results are mapped in metrics.go:
//   - External and Object: the result must be exactly one sample (an instant vector of one
//     series, or a scalar); several series are an error naming the count.
//   - Pods: one series per pod, named by the label "pod"; series of pods the target does not
//     have are dropped, as the custom metrics API's pod selector would drop them.
//   - A failed or timed-out query, no sample, or a value that is not a finite number is an
//     error observation, never a value; the service then applies upstream's rules for a
//     metric that cannot be fetched (ScalingActive False with the error).

// PrometheusQueryAnnotationPrefix, followed by a metric's name, is the annotation holding the
// PromQL query of that metric (DESIGN.md; keep the name).
const PrometheusQueryAnnotationPrefix = AnnotationPrefix + "prometheus-query."

// PrometheusPodLabel is the label naming the pod of each series of a Pods metric's query.
const PrometheusPodLabel = "pod"

// PrometheusQueryData is what a query template sees.
type PrometheusQueryData struct {
	// Namespace is the autoscaler's namespace.
	Namespace string
	// Metric is the metric's name (the annotation's suffix).
	Metric string
	// Selector is the metric's selector as PromQL label matchers, comma-separated without
	// braces: matchLabels k: v is k="v"; matchExpressions In is k=~"v1|v2", NotIn k!~"v1|v2",
	// Exists k!="", DoesNotExist k="". Empty when the metric has no selector (PromQL accepts
	// both `m{}` and a trailing comma, so `m{job="x",{{.Selector}}}` is always valid).
	Selector string
}

// PrometheusQuery is the query of one spec.metrics entry: the expanded Query, or Err, why it
// cannot be run (an invalid annotation: the metric fails rather than being read from the
// metrics APIs).
type PrometheusQuery struct {
	Query string
	Err   string
}

// legacyLabelName is a Prometheus label name that needs no quoting.
var legacyLabelName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// promSelector renders sel as PromQL label matchers (see PrometheusQueryData.Selector). A
// label key that is not a classic Prometheus label name (a Kubernetes key such as
// app.kubernetes.io/name) is quoted, as Prometheus 3 accepts.
func promSelector(sel *metav1.LabelSelector) (string, error) {
	if sel == nil {
		return "", nil
	}
	name := func(k string) string {
		if legacyLabelName.MatchString(k) {
			return k
		}
		return strconv.Quote(k)
	}
	alt := func(vs []string) string {
		q := make([]string, len(vs))
		for i, v := range slices.Sorted(slices.Values(vs)) {
			q[i] = regexp.QuoteMeta(v)
		}
		return strconv.Quote(strings.Join(q, "|"))
	}
	var out []string
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range sel.MatchLabels {
			if !yield(k) {
				return
			}
		}
	}) {
		out = append(out, name(k)+"="+strconv.Quote(sel.MatchLabels[k]))
	}
	for _, e := range sel.MatchExpressions {
		switch e.Operator {
		case metav1.LabelSelectorOpIn:
			out = append(out, name(e.Key)+"=~"+alt(e.Values))
		case metav1.LabelSelectorOpNotIn:
			out = append(out, name(e.Key)+"!~"+alt(e.Values))
		case metav1.LabelSelectorOpExists:
			out = append(out, name(e.Key)+`!=""`)
		case metav1.LabelSelectorOpDoesNotExist:
			out = append(out, name(e.Key)+`=""`)
		default:
			return "", fmt.Errorf("selector operator %q is not In, NotIn, Exists or DoesNotExist", e.Operator)
		}
	}
	return strings.Join(out, ","), nil
}

// expandPromQuery expands the query template text for metric id in namespace.
func expandPromQuery(text, namespace string, id *autoscalingv2.MetricIdentifier) (string, error) {
	if strings.TrimSpace(text) == "" {
		return "", errors.New("is empty")
	}
	tmpl, err := template.New(id.Name).Option("missingkey=error").Parse(text)
	if err != nil {
		return "", fmt.Errorf("is not a valid query template: %w", err)
	}
	sel, err := promSelector(id.Selector)
	if err != nil {
		return "", fmt.Errorf("cannot use the metric's selector: %w", err)
	}
	var b bytes.Buffer
	if err := tmpl.Execute(&b, PrometheusQueryData{Namespace: namespace, Metric: id.Name, Selector: sel}); err != nil {
		return "", fmt.Errorf("is not a valid query template (it may use .Namespace, .Metric and .Selector): %w", err)
	}
	return b.String(), nil
}

// promMetricID is the identifier of m when its type may be read from Prometheus, with
// whether the type is one of those (Resource and ContainerResource come from metrics.k8s.io).
func promMetricID(m *autoscalingv2.MetricSpec) (*autoscalingv2.MetricIdentifier, bool) {
	switch {
	case m.Type == autoscalingv2.PodsMetricSourceType && m.Pods != nil:
		return &m.Pods.Metric, true
	case m.Type == autoscalingv2.ObjectMetricSourceType && m.Object != nil:
		return &m.Object.Metric, true
	case m.Type == autoscalingv2.ExternalMetricSourceType && m.External != nil:
		return &m.External.Metric, true
	case m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil:
		return &autoscalingv2.MetricIdentifier{Name: string(m.Resource.Name)}, false
	case m.Type == autoscalingv2.ContainerResourceMetricSourceType && m.ContainerResource != nil:
		return &autoscalingv2.MetricIdentifier{Name: string(m.ContainerResource.Name)}, false
	}
	return nil, false
}

// newControls reads every hpa-recommender.io annotation of h, an autoscaler in namespace: the
// controls (parseControls) and the Prometheus queries of its metrics.
func newControls(namespace string, h *autoscalingv2.HorizontalPodAutoscaler) Controls {
	c := parseControls(h.Annotations)
	var probs []string
	c.PrometheusQueries, probs = parsePrometheusQueries(namespace, h.Annotations, h.Spec.Metrics)
	if len(probs) > 0 {
		c.Problems = append(c.Problems, probs...)
		sort.Strings(c.Problems)
	}
	return c
}

// parsePrometheusQueries reads the prometheus-query annotations of an autoscaler in namespace
// with metrics: the queries by spec.metrics index, and the problems of invalid annotations
// (reported as the other annotations' are). A query that does not expand still claims its
// metric, which then fails with the problem rather than being read from the metrics APIs; an
// annotation naming no External, Object or Pods metric of the spec is ignored.
func parsePrometheusQueries(namespace string, ann map[string]string, metrics []autoscalingv2.MetricSpec) (map[int]PrometheusQuery, []string) {
	var out map[int]PrometheusQuery
	var problems []string
	keys := make([]string, 0)
	for k := range ann {
		if strings.HasPrefix(k, PrometheusQueryAnnotationPrefix) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, key := range keys {
		name := strings.TrimPrefix(key, PrometheusQueryAnnotationPrefix)
		bad := func(format string, args ...any) {
			problems = append(problems, fmt.Sprintf("annotation %s: %s", key, fmt.Sprintf(format, args...)))
		}
		if name == "" {
			bad("names no metric (the key is %s<metric name>)", PrometheusQueryAnnotationPrefix)
			continue
		}
		used, resource := false, false
		for i := range metrics {
			id, ok := promMetricID(&metrics[i])
			if id == nil || id.Name != name {
				continue
			}
			if !ok {
				resource = true
				continue
			}
			used = true
			q, err := expandPromQuery(ann[key], namespace, id)
			if out == nil {
				out = map[int]PrometheusQuery{}
			}
			if err != nil {
				msg := fmt.Sprintf("%v", err)
				bad("%q %s; metric %s fails until it is fixed", ann[key], msg, name)
				out[i] = PrometheusQuery{Err: fmt.Sprintf("invalid annotation %s: the query %s", key, msg)}
				continue
			}
			out[i] = PrometheusQuery{Query: q}
		}
		switch {
		case used:
		case resource:
			bad("metric %s is a Resource metric, read from metrics.k8s.io; only External, Object and Pods metrics can be read from Prometheus; ignored", name)
		default:
			bad("the spec has no External, Object or Pods metric named %q; ignored", name)
		}
	}
	// One problem per annotation, even when several metrics share its name.
	return out, slices.Compact(problems)
}

// prometheusObservation runs q for metric m of the given type (pods are the names of the
// target's pods, for a Pods metric). Every failure is an error observation.
func (k *Kube) prometheusObservation(ctx context.Context, q PrometheusQuery, m *autoscalingv2.MetricSpec, pods sets.Set[string]) *pb.MetricObservation {
	if q.Err != "" {
		return errObservation(q.Err)
	}
	if k.Prometheus == nil {
		return errObservation("unable to query Prometheus: no Prometheus client (set --prometheus-url)")
	}
	timeout := k.PrometheusTimeout
	if timeout <= 0 {
		timeout = DefaultPrometheusTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	v, _, _, err := k.Prometheus.Query(ctx, q.Query, time.Now(), promv1.WithTimeout(timeout))
	if err != nil {
		return errObservation(fmt.Sprintf("unable to query Prometheus: %v", err))
	}
	var samples []*model.Sample
	switch r := v.(type) {
	case model.Vector:
		samples = r
	case *model.Scalar:
		samples = []*model.Sample{{Value: r.Value, Timestamp: r.Timestamp}}
	default:
		return errObservation(fmt.Sprintf("the Prometheus query returned a %s, not an instant vector or a scalar", v.Type()))
	}
	if len(samples) == 0 {
		return errObservation("the Prometheus query returned no sample")
	}
	for _, s := range samples {
		f := float64(s.Value)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return errObservation(fmt.Sprintf("the Prometheus query returned %v for %s, not a finite number", f, s.Metric))
		}
		if math.Abs(f) >= math.MaxInt64/1000 {
			return errObservation(fmt.Sprintf("the Prometheus query returned %v for %s, too large for a quantity", f, s.Metric))
		}
	}
	if m.Type != autoscalingv2.PodsMetricSourceType {
		if len(samples) != 1 {
			return errObservation(fmt.Sprintf("the Prometheus query returned %d series; an %s metric needs exactly one", len(samples), m.Type))
		}
		s := promMilliString(samples[0].Value)
		if m.Type == autoscalingv2.ExternalMetricSourceType {
			return &pb.MetricObservation{Values: []string{s}}
		}
		return &pb.MetricObservation{Value: &s}
	}
	out := &pb.MetricObservation{}
	seen := map[string]bool{}
	for _, s := range samples {
		pod := string(s.Metric[PrometheusPodLabel])
		if pod == "" {
			return errObservation(fmt.Sprintf("a series of the Prometheus query has no label %q: %s", PrometheusPodLabel, s.Metric))
		}
		if seen[pod] {
			return errObservation(fmt.Sprintf("the Prometheus query returned several series for pod %s", pod))
		}
		seen[pod] = true
		if !pods.Has(pod) {
			continue
		}
		out.PodValues = append(out.PodValues, &pb.PodMetricValue{
			Pod:       pod,
			Value:     promMilliString(s.Value),
			Timestamp: timestamppb.New(s.Timestamp.Time()),
		})
	}
	if len(out.PodValues) == 0 {
		return errObservation(fmt.Sprintf("the Prometheus query returned no sample for the target's pods (%d series for other pods)", len(samples)))
	}
	sort.Slice(out.PodValues, func(i, j int) bool { return out.PodValues[i].Pod < out.PodValues[j].Pod })
	return out
}

// promMilliString is v as a quantity, rounded to a thousandth.
func promMilliString(v model.SampleValue) string {
	return milliString(int64(math.Round(float64(v) * 1000)))
}

// DefaultPrometheusTimeout bounds one Prometheus query when --prometheus-timeout is not set.
const DefaultPrometheusTimeout = 5 * time.Second

// PrometheusAPI is what the scaler needs of Prometheus; promv1.API satisfies it.
type PrometheusAPI interface {
	Query(ctx context.Context, query string, ts time.Time, opts ...promv1.Option) (model.Value, promv1.Warnings, promv1.Infos, error)
}

// DialPrometheus is the Prometheus client of cfg (nil without --prometheus-url): its CA bundle
// (--prometheus-ca) and bearer token (--prometheus-token-file) follow their files, as the
// service connection's do.
func DialPrometheus(cfg Config) (PrometheusAPI, error) {
	if cfg.PrometheusURL == "" {
		return nil, nil
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if cfg.PrometheusCA != "" {
		tc, err := tlsfiles.Client(cfg.PrometheusCA, "", "")
		if err != nil {
			return nil, fmt.Errorf("--prometheus-ca: %w", err)
		}
		tr.TLSClientConfig = tc
	}
	var rt http.RoundTripper = tr
	if cfg.PrometheusTokenFile != "" {
		tok := &fileToken{path: cfg.PrometheusTokenFile}
		if _, err := tok.get(); err != nil {
			return nil, fmt.Errorf("--prometheus-token-file: %w", err)
		}
		rt = &bearerRoundTripper{tok: tok, next: tr}
	}
	c, err := api.NewClient(api.Config{Address: cfg.PrometheusURL, RoundTripper: rt})
	if err != nil {
		return nil, fmt.Errorf("--prometheus-url: %w", err)
	}
	return promv1.NewAPI(c), nil
}

// bearerRoundTripper sends the token of tok with every request.
type bearerRoundTripper struct {
	tok  *fileToken
	next http.RoundTripper
}

func (b *bearerRoundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	tok, err := b.tok.get()
	if err != nil {
		return nil, err
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+tok)
	return b.next.RoundTrip(r)
}

// validatePrometheus checks the Prometheus flags of c.
func (c *Config) validatePrometheus(bad func(string, ...any)) {
	if c.PrometheusURL == "" {
		if c.PrometheusCA != "" || c.PrometheusTokenFile != "" {
			bad("--prometheus-ca and --prometheus-token-file need --prometheus-url")
		}
		return
	}
	u, err := url.Parse(c.PrometheusURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		bad("--prometheus-url %q is not an http:// or https:// URL", c.PrometheusURL)
		return
	}
	if u.Scheme == "http" && c.PrometheusCA != "" {
		bad("--prometheus-ca needs an https:// --prometheus-url")
	}
	if u.Scheme == "http" && c.PrometheusTokenFile != "" && !goclient.IsLoopbackTarget(u.Hostname()) {
		bad("--prometheus-token-file to %q needs https: a token is sent in the clear only to a loopback address", c.PrometheusURL)
	}
	if c.PrometheusTimeout <= 0 {
		bad("--prometheus-timeout must be positive")
	}
}
