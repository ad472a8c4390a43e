//go:build e2e

package scaler

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/hpa-recommender/hpa-recommender/internal/controlplane"
	"github.com/hpa-recommender/hpa-recommender/store/memstore"
)

// benchHPA is an HPA on Deployment name whose External metric queue_depth{queue=orders}
// (20, at its target of 10 per replica over 2 replicas: no scaling) is read from the metrics
// API, or from Prometheus with the annotation.
func benchHPA(name, annotations string) string {
	return fmt.Sprintf(`apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: %s, namespace: bench, annotations: {%s}}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: %s}
  minReplicas: 1
  maxReplicas: 10
  metrics:
  - type: External
    external:
      metric: {name: queue_depth, selector: {matchLabels: {queue: orders}}}
      target: {type: AverageValue, averageValue: "10"}
`, name, annotations, name)
}

// BenchmarkSyncExternalMetric is one sync of one autoscaler (the scale read from
// kube-apiserver, the pods from the informer cache, one External metric, Recommend to the
// real service) with its metric read through the metrics API (external.metrics.k8s.io, the
// aggregation layer and the test's adapter) or from a real Prometheus (one instant query); and
// the metric's fetch alone.
//
//	make kube-binaries prometheus
//	go test -tags e2e -run '^$' -bench BenchmarkSyncExternalMetric -benchtime 2000x -count 3 ./clients/scaler/
func BenchmarkSyncExternalMetric(b *testing.B) {
	cp := controlplane.Start(b, controlplane.Options{})
	adapter := controlplane.StartMetricsAdapter(b, cp)
	e := startExporter(b)
	e.queue.WithLabelValues("orders").Set(20)
	_, api := startPrometheusFor(b, e)
	waitQuery(b, api, `queue_depth{queue="orders"}`, 20)
	adapter.SetExternalMetric("bench", "queue_depth", controlplane.ExternalValue{Labels: map[string]string{"queue": "orders"}, Value: resource.MustParse("20")})

	ctx := b.Context()
	cs := cp.Client
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench"}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	for _, name := range []string{"api", "prom"} {
		d := shadowDeployment(name)
		d.Namespace = "bench"
		if _, err := cs.AppsV1().Deployments("bench").Create(ctx, d, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		ann := ""
		if name == "prom" {
			ann = `hpa-recommender.io/prometheus-query.queue_depth: 'sum(queue_depth{ {{.Selector}} })'`
		}
		if err := os.WriteFile(filepath.Join(dir, name+".yaml"), []byte(benchHPA(name, ann)), 0o644); err != nil {
			b.Fatal(err)
		}
	}

	svc := startService(b, memstore.New(), realClock(), "127.0.0.1:0")
	cfg := DefaultConfig()
	cfg.Cluster, cfg.ManifestsDir, cfg.ServiceAddr, cfg.HTTPListen, cfg.LeaderElect = "c1", dir, svc.addr, "", false
	// No client-side rate limit: the latency measured is the API server's and the adapter's,
	// not client-go's token bucket (the test control plane's client allows 100 requests/s).
	restCfg := *cp.Config
	restCfg.QPS, restCfg.Burst = 1e6, 1e6
	kube, runner, err := NewKube(&restCfg, "hpa-scaler")
	if err != nil {
		b.Fatal(err)
	}
	if err := runner.Start(ctx); err != nil {
		b.Fatal(err)
	}
	kube.Prometheus = api
	client, err := Dial(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { client.Close() })
	rec := &recording{Recommender: client}
	s, err := New(cfg, Deps{Kube: kube, Recommender: rec, Logger: quiet()})
	if err != nil {
		b.Fatal(err)
	}
	as, err := LoadManifests(dir)
	if err != nil {
		b.Fatal(err)
	}
	s.SetAutoscalers(as)

	// The metric's fetch alone.
	api1, prom1 := s.mustAutoscaler(b, "bench/api"), s.mustAutoscaler(b, "bench/prom")
	sel := labels.SelectorFromSet(labels.Set{"app": "api"})
	b.Run("fetch/metrics-api", func(b *testing.B) {
		for b.Loop() {
			if o := kube.observe(ctx, "bench", sel, &api1.HPA.Spec.Metrics[0]); o.Error != "" {
				b.Fatal(o.Error)
			}
		}
	})
	b.Run("fetch/prometheus", func(b *testing.B) {
		for b.Loop() {
			if o := kube.prometheusObservation(ctx, prom1.Controls.PrometheusQueries[0], &prom1.HPA.Spec.Metrics[0], nil); o.Error != "" {
				b.Fatal(o.Error)
			}
		}
	})
	for _, tc := range []struct{ name, key string }{{"sync/metrics-api", "bench/api"}, {"sync/prometheus", "bench/prom"}} {
		b.Run(tc.name, func(b *testing.B) {
			// Once before timing: the value must come through, and not scale.
			if err := s.SyncOne(ctx, tc.key); err != nil {
				b.Fatal(err)
			}
			m := rec.last().Metrics[0]
			if m.Error != "" || len(m.Values) != 1 || m.Values[0] != "20" {
				b.Fatalf("%s: observation %v, want 20", tc.key, m)
			}
			for b.Loop() {
				if err := s.SyncOne(ctx, tc.key); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
