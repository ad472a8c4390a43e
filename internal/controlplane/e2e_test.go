//go:build e2e

package controlplane_test

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"
	customclient "k8s.io/metrics/pkg/client/custom_metrics"
	externalclient "k8s.io/metrics/pkg/client/external_metrics"

	"github.com/hpa-recommender/hpa-recommender/internal/controlplane"
)

// TestControlPlaneSmoke starts etcd, kube-apiserver and kube-controller-manager, creates
// a Deployment, waits for /scale status.replicas, makes the pods Running and Ready without
// a kubelet, and reads all three metrics APIs through kube-apiserver's aggregation layer
// from a loopback adapter (ExternalName service "localhost").
func TestControlPlaneSmoke(t *testing.T) {
	start := time.Now()
	cp := controlplane.Start(t, controlplane.Options{})
	t.Logf("control plane ready in %v", time.Since(start).Round(time.Millisecond))
	adapter := controlplane.StartMetricsAdapter(t, cp)
	t.Logf("metrics APIServices available after %v", time.Since(start).Round(time.Millisecond))

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs := cp.Client
	const ns = "smoke"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, deployment("web", 2), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitScale(ctx, t, cs, ns, "web", 2)
	pods, err := controlplane.MakeDeploymentReady(ctx, cs, ns, "web")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		if p.Spec.NodeName != "" || p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" || p.Status.StartTime == nil {
			t.Errorf("pod %s: node %q phase %s ip %q start %v; want unbound, Running, with IP and start time", p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.PodIP, p.Status.StartTime)
		}
	}
	// The ReplicaSet and Deployment controllers count the pods as ready.
	poll(ctx, t, "deployment readyReplicas 2", func() (bool, error) {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		return err == nil && d.Status.ReadyReplicas == 2 && d.Status.AvailableReplicas == 2, err
	})

	// A scale write (what the scaler does) reaches status.replicas through the controllers.
	scale, err := cs.AppsV1().Deployments(ns).GetScale(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	scale.Spec.Replicas = 3
	if _, err := cs.AppsV1().Deployments(ns).UpdateScale(ctx, "web", scale, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitScale(ctx, t, cs, ns, "web", 3)
	if pods, err = controlplane.MakeDeploymentReady(ctx, cs, ns, "web"); err != nil {
		t.Fatal(err)
	}

	// Metrics through the aggregator, read with the clients the HPA controller uses.
	for i, p := range pods {
		adapter.SetPodMetric(ns, p.Name, "requests_per_second", *resource.NewQuantity(int64(10*(i+1)), resource.DecimalSI))
		adapter.SetPodUsage(ns, p.Name, map[string]corev1.ResourceList{"app": {corev1.ResourceCPU: resource.MustParse("200m")}})
	}
	adapter.SetObjectMetric(controlplane.ObjectRef{Namespace: ns, Resource: "deployments.apps", Name: "web"}, "queue_length", resource.MustParse("42"))
	adapter.SetExternalMetric(ns, "pubsub_backlog", controlplane.ExternalValue{Labels: map[string]string{"topic": "orders"}, Value: resource.MustParse("1500")},
		controlplane.ExternalValue{Labels: map[string]string{"topic": "other"}, Value: resource.MustParse("1")})

	dc, err := discovery.NewDiscoveryClientForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	cached := memory.NewMemCacheClient(dc)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(cached)
	custom := customclient.NewForConfig(cp.Config, mapper, customclient.NewAvailableAPIsGetter(dc))
	selector := labels.SelectorFromSet(labels.Set{"app": "web"})
	list, err := custom.NamespacedMetrics(ns).GetForObjects(schema.GroupKind{Kind: "Pod"}, selector, "requests_per_second", labels.Everything())
	if err != nil {
		t.Fatalf("custom pods metric through the aggregator: %v", err)
	}
	if len(list.Items) != 3 {
		t.Errorf("pods/* requests_per_second: %d items, want 3: %+v", len(list.Items), list.Items)
	}
	obj, err := custom.NamespacedMetrics(ns).GetForObject(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "web", "queue_length", labels.Everything())
	if err != nil || obj.Value.String() != "42" {
		t.Errorf("object metric deployments.apps/web queue_length = %v, %v; want 42", obj, err)
	}

	ext, err := externalclient.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	el, err := ext.NamespacedMetrics(ns).List("pubsub_backlog", labels.SelectorFromSet(labels.Set{"topic": "orders"}))
	if err != nil || len(el.Items) != 1 || el.Items[0].Value.String() != "1500" {
		t.Errorf("external pubsub_backlog{topic=orders} = %+v, %v; want one value 1500", el, err)
	}

	mc, err := metricsclient.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	pml, err := mc.MetricsV1beta1().PodMetricses(ns).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil || len(pml.Items) != 3 || pml.Items[0].Containers[0].Usage.Cpu().String() != "200m" {
		t.Errorf("PodMetrics app=web = %+v, %v; want 3 pods at 200m", pml, err)
	}

	// The adapter saw the aggregator: front-proxy client certificate and the caller's name.
	reqs := adapter.Requests()
	if len(reqs) < 4 {
		t.Fatalf("adapter saw %d requests, want at least 4", len(reqs))
	}
	for _, r := range reqs {
		if r.ClientCN != controlplane.FrontProxyClientName || r.User != "kubetest-admin" {
			t.Errorf("request %s: client cert %q user %q; want %q, kubetest-admin", r.Path, r.ClientCN, r.User, controlplane.FrontProxyClientName)
		}
	}

	// A service account without RBAC is refused by kube-apiserver before the adapter.
	saCfg, err := cp.ServiceAccountConfig(ctx, ns, "scaler")
	if err != nil {
		t.Fatal(err)
	}
	saExt, err := externalclient.NewForConfig(saCfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := saExt.NamespacedMetrics(ns).List("pubsub_backlog", labels.Everything()); !apierrors.IsForbidden(err) {
		t.Errorf("service account without RBAC: err %v, want Forbidden", err)
	}
}

// TestBindPod checks the fake-node path: a pod bound to a node EnsureNode made takes a
// Running/Ready status and keeps it.
func TestBindPod(t *testing.T) {
	cp := controlplane.Start(t, controlplane.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs := cp.Client
	if _, err := cs.AppsV1().Deployments("default").Create(ctx, deployment("bound", 1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitScale(ctx, t, cs, "default", "bound", 1)
	if _, err := controlplane.EnsureNode(ctx, cs, "node-1"); err != nil {
		t.Fatal(err)
	}
	var pods []corev1.Pod
	poll(ctx, t, "one pod", func() (bool, error) {
		var err error
		pods, err = controlplane.DeploymentPods(ctx, cs, "default", "bound")
		return len(pods) == 1, err
	})
	if err := controlplane.BindPod(ctx, cs, &pods[0], "node-1"); err != nil {
		t.Fatal(err)
	}
	p, err := cs.CoreV1().Pods("default").Get(ctx, pods[0].Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	started := time.Now().Add(-time.Minute).Truncate(time.Second)
	if p, err = controlplane.SetPodStatus(ctx, cs, p, controlplane.PodState{Ready: true, StartTime: started}); err != nil {
		t.Fatal(err)
	}
	if p.Spec.NodeName != "node-1" || p.Status.Phase != corev1.PodRunning || !p.Status.StartTime.Time.Equal(started) {
		t.Errorf("pod %s: node %q phase %s start %v", p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.StartTime)
	}
	poll(ctx, t, "deployment readyReplicas 1", func() (bool, error) {
		d, err := cs.AppsV1().Deployments("default").Get(ctx, "bound", metav1.GetOptions{})
		return err == nil && d.Status.ReadyReplicas == 1, err
	})
}

// TestAggregatorRoutes records which Service shapes route an APIService to a loopback
// adapter (the spike): ExternalName "localhost" is StartMetricsAdapter's default and is
// covered by TestControlPlaneSmoke.
func TestAggregatorRoutes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cp := controlplane.Start(t, controlplane.Options{NoControllerManager: true})
	a, err := controlplane.NewMetricsAdapterFor(cp, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ext := controlplane.Registration{GroupVersions: []schema.GroupVersion{controlplane.ExternalMetricsGV}}
	a.SetExternalMetric("default", "m", controlplane.ExternalValue{Value: resource.MustParse("3")})
	read := func(cfg *rest.Config) error {
		c, err := externalclient.NewForConfig(cfg)
		if err != nil {
			return err
		}
		l, err := c.NamespacedMetrics("default").List("m", labels.Everything())
		if err == nil && (len(l.Items) != 1 || l.Items[0].Value.String() != "3") {
			t.Errorf("read %+v, want one value 3", l.Items)
		}
		return err
	}

	t.Run("ExternalName 127.0.0.1", func(t *testing.T) {
		r := ext
		r.ExternalName = "127.0.0.1"
		if err := a.Register(ctx, cp, r); err != nil {
			t.Fatal(err)
		}
		if err := read(cp.Config); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("EndpointSlice 127.0.0.1 is refused", func(t *testing.T) {
		r := ext
		r.Route = controlplane.RouteEndpoints
		err := a.Register(ctx, cp, r)
		if err == nil || !strings.Contains(err.Error(), "loopback") {
			t.Fatalf("Register with a loopback EndpointSlice: %v, want a loopback validation error", err)
		}
		t.Log(err)
	})

	// --enable-aggregator-routing=true resolves EndpointSlices, which cannot hold a loopback
	// IP; an FQDN slice could name a host resolving to 127.0.0.1, but "localhost" is
	// refused (two labels needed) and no such name exists here without editing /etc/hosts.
	// ExternalName services are not resolved at all in that mode (the APIService reports
	// FailedDiscoveryCheck "unsupported service type"; not asserted here: how soon the
	// condition shows depends on the machine's load).
	cp2 := controlplane.Start(t, controlplane.Options{NoControllerManager: true, EnableAggregatorRouting: true})
	a2, err := controlplane.NewMetricsAdapterFor(cp2, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a2.Close()
	t.Run("aggregator routing: EndpointSlice FQDN localhost is refused", func(t *testing.T) {
		r := ext
		r.Route = controlplane.RouteEndpoints
		r.Address = "localhost"
		err := a2.Register(ctx, cp2, r)
		if err == nil || !strings.Contains(err.Error(), "at least two segments") {
			t.Fatalf("Register with an FQDN EndpointSlice for localhost: %v, want a validation error", err)
		}
		t.Log(err)
	})
}

func deployment(name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "app", Image: "registry.example/app:1",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
				}}},
			},
		},
	}
}

func waitScale(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, name string, want int32) {
	t.Helper()
	poll(ctx, t, "scale status.replicas", func() (bool, error) {
		s, err := cs.AppsV1().Deployments(ns).GetScale(ctx, name, metav1.GetOptions{})
		return err == nil && s.Spec.Replicas == want && s.Status.Replicas == want && s.Status.Selector != "", err
	})
}

func poll(ctx context.Context, t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	var err error
	for {
		var ok bool
		if ok, err = cond(); ok {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: %v (%v)", what, ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
