package controlplane

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"
	customclient "k8s.io/metrics/pkg/client/custom_metrics"
	externalclient "k8s.io/metrics/pkg/client/external_metrics"
)

// TestMetricsAdapterDirect reads every API of the adapter with the k8s.io/metrics clients
// against its own endpoint (no kube-apiserver): the fallback path, and a fast check of the
// adapter itself.
func TestMetricsAdapterDirect(t *testing.T) {
	pod := func(name string, app string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{"app": app}}}
	}
	pods := fake.NewClientset(pod("web-1", "web"), pod("web-2", "web"), pod("db-1", "db"))
	a, err := NewMetricsAdapter(pods)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	cfg := &rest.Config{Host: a.URL, TLSClientConfig: rest.TLSClientConfig{CAData: a.CAPEM}}
	ctx := context.Background()

	a.SetPodMetric("ns", "web-1", "rps", resource.MustParse("10"))
	a.SetPodMetric("ns", "web-2", "rps", resource.MustParse("30"))
	a.SetPodMetric("ns", "db-1", "rps", resource.MustParse("99"))
	a.SetObjectMetric(ObjectRef{Namespace: "ns", Resource: "ingresses.networking.k8s.io", Name: "main"}, "hits", resource.MustParse("2k"))
	a.SetExternalMetric("ns", "queue", ExternalValue{Labels: map[string]string{"q": "a"}, Value: resource.MustParse("5")},
		ExternalValue{Labels: map[string]string{"q": "b"}, Value: resource.MustParse("7")})
	a.SetPodUsage("ns", "web-1", map[string]corev1.ResourceList{"app": {corev1.ResourceCPU: resource.MustParse("250m")}})
	a.SetPodUsage("ns", "db-1", map[string]corev1.ResourceList{"db": {corev1.ResourceCPU: resource.MustParse("1")}})

	mapper := meta.NewDefaultRESTMapper([]schema.GroupVersion{{Version: "v1"}, {Group: "networking.k8s.io", Version: "v1"}})
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress"}, meta.RESTScopeNamespace)
	custom, err := customclient.NewForVersionForConfig(cfg, mapper, CustomMetricsGV)
	if err != nil {
		t.Fatal(err)
	}
	list, err := custom.NamespacedMetrics("ns").GetForObjects(schema.GroupKind{Kind: "Pod"}, labels.SelectorFromSet(labels.Set{"app": "web"}), "rps", labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 2 || list.Items[0].DescribedObject.Name != "web-1" || list.Items[1].Value.String() != "30" {
		t.Errorf("pods/* rps = %+v, want web-1=10 web-2=30", list.Items)
	}
	v, err := custom.NamespacedMetrics("ns").GetForObject(schema.GroupKind{Group: "networking.k8s.io", Kind: "Ingress"}, "main", "hits", labels.Everything())
	if err != nil || v.Value.String() != "2k" {
		t.Errorf("ingress hits = %v, %v; want 2k", v, err)
	}
	if _, err := custom.NamespacedMetrics("ns").GetForObject(schema.GroupKind{Kind: "Pod"}, "web-1", "missing", labels.Everything()); !apierrors.IsNotFound(err) {
		t.Errorf("missing metric: err %v, want NotFound", err)
	}

	ext, err := externalclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	el, err := ext.NamespacedMetrics("ns").List("queue", labels.SelectorFromSet(labels.Set{"q": "b"}))
	if err != nil || len(el.Items) != 1 || el.Items[0].Value.String() != "7" {
		t.Errorf("external queue{q=b} = %+v, %v; want one value 7", el, err)
	}

	mc, err := metricsclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	pml, err := mc.MetricsV1beta1().PodMetricses("ns").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil || len(pml.Items) != 1 || pml.Items[0].Name != "web-1" || pml.Items[0].Containers[0].Usage.Cpu().String() != "250m" {
		t.Errorf("PodMetrics app=web = %+v, %v; want web-1 with 250m", pml, err)
	}
	pm, err := mc.MetricsV1beta1().PodMetricses("ns").Get(ctx, "db-1", metav1.GetOptions{})
	if err != nil || pm.Containers[0].Name != "db" {
		t.Errorf("PodMetrics db-1 = %+v, %v", pm, err)
	}

	a.SetFailure(ExternalMetricsGV.Group, 503)
	if _, err := ext.NamespacedMetrics("ns").List("queue", labels.Everything()); !apierrors.IsServiceUnavailable(err) {
		t.Errorf("after SetFailure(503): err %v, want ServiceUnavailable", err)
	}
	if n := len(a.Requests()); n != 7 {
		t.Errorf("%d requests recorded, want 7: %+v", n, a.Requests())
	}
}
