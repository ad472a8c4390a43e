//go:build e2e

package deploy

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/hpa-recommender/hpa-recommender/internal/controlplane"
)

// kubectl runs the kubectl `make kube-binaries` built against the control plane.
func kubectl(t *testing.T, cp *controlplane.ControlPlane, stdin []byte, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, cp.Binaries.Kubectl, append([]string{"--kubeconfig", cp.Kubeconfig}, args...)...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

// render is `kubectl kustomize dir`.
func render(t *testing.T, cp *controlplane.ControlPlane, dir string) []byte {
	t.Helper()
	out, stderr, err := kubectl(t, cp, nil, "kustomize", dir)
	if err != nil {
		t.Fatalf("kubectl kustomize %s: %v\n%s", dir, err, stderr)
	}
	return []byte(out)
}

// apply is `kubectl apply --server-side [--dry-run=server] -f -`; it fails the test on an
// error or on any warning (a PodSecurity "would violate", a deprecated API, ...).
func apply(t *testing.T, cp *controlplane.ControlPlane, what string, manifests []byte, dryRun bool) string {
	t.Helper()
	args := []string{"apply", "--server-side", "--field-manager=deploy-e2e", "-f", "-"}
	if dryRun {
		args = append(args, "--dry-run=server")
	}
	out, stderr, err := kubectl(t, cp, manifests, args...)
	if err != nil {
		t.Fatalf("kubectl %s (%s): %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), what, err, out, stderr)
	}
	if strings.TrimSpace(stderr) != "" {
		t.Errorf("kubectl %s (%s) warned:\n%s", strings.Join(args, " "), what, stderr)
	}
	return out
}

// namespacesOf is the Namespace documents of a rendering (created for real before the dry run:
// a dry run creates nothing, and namespaced objects need their namespace).
func namespacesOf(t *testing.T, objs []object) []byte {
	t.Helper()
	var b bytes.Buffer
	for _, o := range objs {
		if o.Kind == "Namespace" {
			b.WriteString("---\n")
			b.Write(o.Raw)
		}
	}
	return b.Bytes()
}

func find[T any](t *testing.T, objs []object, kind, name string) T {
	t.Helper()
	for _, o := range objs {
		if o.Kind == kind && o.Name == name {
			return o.Obj.(T)
		}
	}
	var zero T
	t.Fatalf("no %s %s in the rendering", kind, name)
	return zero
}

// TestKustomizeServerDryRun renders every kustomization with kubectl kustomize and applies it
// with a server-side dry run against a real kube-apiserver (schema, field validation, defaulting,
// admission including Pod Security "restricted" on the namespace), then checks properties of
// the rendered objects.
func TestKustomizeServerDryRun(t *testing.T) {
	cp := controlplane.Start(t, controlplane.Options{NoControllerManager: true})
	if _, err := os.Stat(cp.Binaries.Kubectl); err != nil {
		t.Fatalf("kubectl: %v (run make kube-binaries)", err)
	}
	for _, dir := range kustomizations {
		t.Run(dir, func(t *testing.T) {
			rendered := render(t, cp, dir)
			objs, err := decodeObjects(rendered)
			if err != nil {
				t.Fatalf("kubectl kustomize %s output: %v", dir, err)
			}
			if ns := namespacesOf(t, objs); len(ns) > 0 {
				apply(t, cp, dir+" namespaces", ns, false)
			}
			out := apply(t, cp, dir, rendered, true)
			if got := strings.Count(out, "serverside-applied (server dry run)"); got != len(objs) {
				t.Errorf("%d of %d objects applied:\n%s", got, len(objs), out)
			}
			checkObjects(t, dir, objs)
			for _, o := range objs {
				if o.Kind != "Namespace" && o.Kind != "CustomResourceDefinition" && !strings.HasPrefix(o.Kind, "Cluster") && o.Namespace != "hpa-system" {
					t.Errorf("%s %s in namespace %q, want hpa-system", o.Kind, o.Name, o.Namespace)
				}
			}
			switch dir {
			case "overlays/bolt":
				checkBolt(t, objs)
			case "overlays/etcd":
				checkEtcd(t, objs)
			case "base/scaler":
				checkScaler(t, cp, rendered, objs)
			}
		})
	}
}

func checkBolt(t *testing.T, objs []object) {
	d := find[*appsv1.Deployment](t, objs, "Deployment", "hpa-recommender")
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 1 || d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("replicas %v strategy %q, want 1 and Recreate", d.Spec.Replicas, d.Spec.Strategy.Type)
	}
	pod := d.Spec.Template.Spec
	mounted := false
	for _, m := range pod.Containers[0].VolumeMounts {
		mounted = mounted || (m.Name == "data" && m.MountPath == "/data" && !m.ReadOnly)
	}
	claim := ""
	for _, v := range pod.Volumes {
		if v.Name == "data" && v.PersistentVolumeClaim != nil {
			claim = v.PersistentVolumeClaim.ClaimName
		}
	}
	if !mounted || claim == "" {
		t.Fatalf("want the volume data (a PersistentVolumeClaim) writable at /data: mounts %+v volumes %+v", pod.Containers[0].VolumeMounts, pod.Volumes)
	}
	find[*corev1.PersistentVolumeClaim](t, objs, "PersistentVolumeClaim", claim)
	cm := find[*corev1.ConfigMap](t, objs, "ConfigMap", pod.Containers[0].EnvFrom[0].ConfigMapRef.Name)
	if cm.Data["HPA_RECOMMENDER_STORE"] != "bolt" || !strings.HasPrefix(cm.Data["HPA_RECOMMENDER_BOLT_PATH"], "/data/") {
		t.Errorf("config %v, want store bolt on /data", cm.Data)
	}
}

func checkEtcd(t *testing.T, objs []object) {
	d := find[*appsv1.Deployment](t, objs, "Deployment", "hpa-recommender")
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 3 {
		t.Errorf("replicas %v, want 3", d.Spec.Replicas)
	}
	pod := d.Spec.Template.Spec
	aa := pod.Affinity
	if aa == nil || aa.PodAntiAffinity == nil || len(aa.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 1 ||
		aa.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm.TopologyKey != corev1.LabelHostname {
		t.Errorf("affinity %+v, want pod anti-affinity on %s", aa, corev1.LabelHostname)
	}
	pdb := find[*policyv1.PodDisruptionBudget](t, objs, "PodDisruptionBudget", "hpa-recommender")
	if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() != 2 {
		t.Errorf("PodDisruptionBudget minAvailable %v, want 2", pdb.Spec.MinAvailable)
	}
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil || !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
		t.Errorf("PodDisruptionBudget selector %v does not match the pods %v (%v)", pdb.Spec.Selector, d.Spec.Template.Labels, err)
	}
	cm := find[*corev1.ConfigMap](t, objs, "ConfigMap", pod.Containers[0].EnvFrom[0].ConfigMapRef.Name)
	if cm.Data["HPA_RECOMMENDER_STORE"] != "etcd" || cm.Data["HPA_RECOMMENDER_ETCD_ENDPOINTS"] == "" {
		t.Errorf("config %v, want store etcd with endpoints", cm.Data)
	}
}

// checkScaler applies the scaler for real and asks the API server's authorizer what its
// service account may do: exactly what it needs, nothing more. It also creates the example
// autoscaler from the hpa-manifests ConfigMap with a dry run (the API server validates it as an
// HPA object).
func checkScaler(t *testing.T, cp *controlplane.ControlPlane, rendered []byte, objs []object) {
	apply(t, cp, "base/scaler for real", rendered, false)

	cm := find[*corev1.ConfigMap](t, objs, "ConfigMap", "hpa-manifests")
	if len(cm.Data) == 0 {
		t.Fatal("ConfigMap hpa-manifests is empty")
	}
	for name, data := range cm.Data {
		apply(t, cp, "hpa-manifests/"+name, []byte(data), true)
	}

	ctx := context.Background()
	sa := "system:serviceaccount:hpa-system:hpa-scaler"
	groups := []string{"system:serviceaccounts", "system:serviceaccounts:hpa-system", "system:authenticated"}
	type attr = authorizationv1.ResourceAttributes
	for _, tc := range []struct {
		a     attr
		allow bool
	}{
		{attr{Verb: "get", Group: "apps", Resource: "deployments", Subresource: "scale", Namespace: "default", Name: "web"}, true},
		{attr{Verb: "update", Group: "apps", Resource: "deployments", Subresource: "scale", Namespace: "shop"}, true},
		{attr{Verb: "update", Group: "apps", Resource: "statefulsets", Subresource: "scale", Namespace: "shop"}, true},
		{attr{Verb: "update", Group: "apps", Resource: "replicasets", Subresource: "scale", Namespace: "shop"}, true},
		{attr{Verb: "update", Resource: "replicationcontrollers", Subresource: "scale", Namespace: "shop"}, true},
		{attr{Verb: "list", Resource: "pods"}, true},
		{attr{Verb: "watch", Resource: "pods"}, true},
		{attr{Verb: "list", Group: "metrics.k8s.io", Resource: "pods", Namespace: "shop"}, true},
		{attr{Verb: "get", Group: "custom.metrics.k8s.io", Resource: "pods", Subresource: "http_requests", Namespace: "shop", Name: "*"}, true},
		{attr{Verb: "list", Group: "external.metrics.k8s.io", Resource: "queue_messages_ready", Namespace: "shop"}, true},
		{attr{Verb: "create", Resource: "events", Namespace: "shop"}, true},
		{attr{Verb: "patch", Resource: "events", Namespace: "shop"}, true},
		{attr{Verb: "create", Group: "coordination.k8s.io", Resource: "leases", Namespace: "hpa-system"}, true},
		{attr{Verb: "get", Group: "coordination.k8s.io", Resource: "leases", Namespace: "hpa-system", Name: "hpa-scaler"}, true},
		{attr{Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Namespace: "hpa-system", Name: "hpa-scaler"}, true},

		{attr{Verb: "patch", Group: "apps", Resource: "deployments", Subresource: "scale", Namespace: "shop"}, false},
		{attr{Verb: "get", Group: "apps", Resource: "deployments", Namespace: "shop"}, false},
		{attr{Verb: "update", Group: "apps", Resource: "deployments", Namespace: "shop"}, false},
		{attr{Verb: "get", Resource: "pods", Namespace: "shop", Name: "web-1"}, false},
		{attr{Verb: "delete", Resource: "pods", Namespace: "shop"}, false},
		{attr{Verb: "list", Resource: "secrets"}, false},
		{attr{Verb: "get", Resource: "configmaps", Namespace: "hpa-system"}, false},
		{attr{Verb: "list", Group: "autoscaling", Resource: "horizontalpodautoscalers"}, true},
		{attr{Verb: "watch", Group: "autoscaling", Resource: "horizontalpodautoscalers"}, true},
		{attr{Verb: "update", Group: "autoscaling", Resource: "horizontalpodautoscalers", Subresource: "status", Namespace: "shop", Name: "web"}, true},
		{attr{Verb: "list", Group: "hpa-recommender.io", Resource: "centralhorizontalpodautoscalers"}, true},
		{attr{Verb: "update", Group: "hpa-recommender.io", Resource: "centralhorizontalpodautoscalers", Subresource: "status", Namespace: "shop", Name: "web"}, true},
		{attr{Verb: "update", Group: "autoscaling", Resource: "horizontalpodautoscalers", Namespace: "shop", Name: "web"}, false},
		{attr{Verb: "patch", Group: "autoscaling", Resource: "horizontalpodautoscalers", Subresource: "status", Namespace: "shop", Name: "web"}, false},
		{attr{Verb: "delete", Group: "autoscaling", Resource: "horizontalpodautoscalers", Namespace: "shop", Name: "web"}, false},
		{attr{Verb: "update", Group: "hpa-recommender.io", Resource: "centralhorizontalpodautoscalers", Namespace: "shop", Name: "web"}, false},
		{attr{Verb: "delete", Resource: "events", Namespace: "shop"}, false},
		{attr{Verb: "get", Group: "coordination.k8s.io", Resource: "leases", Namespace: "hpa-system", Name: "kube-controller-manager"}, false},
		{attr{Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Namespace: "kube-system", Name: "hpa-scaler"}, false},
		{attr{Verb: "create", Group: "coordination.k8s.io", Resource: "leases", Namespace: "kube-system"}, false},
		{attr{Verb: "delete", Group: "coordination.k8s.io", Resource: "leases", Namespace: "hpa-system", Name: "hpa-scaler"}, false},
	} {
		a := tc.a
		sar, err := cp.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{User: sa, Groups: groups, ResourceAttributes: &a},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if sar.Status.Allowed != tc.allow {
			t.Errorf("hpa-scaler %s %s.%s/%s %s/%s: allowed %v, want %v (%s)", a.Verb, a.Resource, a.Group, a.Subresource,
				a.Namespace, a.Name, sar.Status.Allowed, tc.allow, sar.Status.Reason)
		}
	}
}
