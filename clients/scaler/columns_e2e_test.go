//go:build e2e

package scaler

// The REFERENCE and TARGETS columns of the custom resource against what the API server's
// table printer shows for an HPA (kubectl get hpa).

import (
	"context"
	"regexp"
	"strings"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/hpa-recommender/hpa-recommender/clients/scaler/api/v1alpha1"
)

// getTable runs kubectl get and reads the table it prints: each row's cells by column header,
// rows by NAME. A column starts where its header does: kubectl pads every column to the width
// of its widest cell, so cells that contain spaces (TARGETS) read whole.
func (e *e2eEnv) getTable(t *testing.T, args ...string) map[string]map[string]string {
	t.Helper()
	out, err := e.kubectl(t, "", append([]string{"get"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kubectl get %s:\n%s", strings.Join(args, " "), out)
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	header := lines[0]
	cols := regexp.MustCompile(`\S+`).FindAllStringIndex(header, -1)
	rows := map[string]map[string]string{}
	for _, line := range lines[1:] {
		row := map[string]string{}
		for i, c := range cols {
			end := len(line)
			if i+1 < len(cols) {
				end = min(cols[i+1][0], len(line))
			}
			row[header[c[0]:c[1]]] = strings.TrimSpace(line[min(c[0], end):end])
		}
		rows[row["NAME"]] = row
	}
	return rows
}

// twinHPA creates in namespace ns (created here) the autoscaling/v2 HorizontalPodAutoscaler of
// h's name, spec and status: what kubectl get hpa prints for it is what kubectl get chpa
// should print for the custom resource h was read from. Nothing writes its status after us:
// the control plane runs without the in-tree HPA controller, and no scaler watches ns.
func (e *e2eEnv) twinHPA(t *testing.T, ctx context.Context, ns string, h *autoscalingv2.HorizontalPodAutoscaler) {
	t.Helper()
	cs := e.cp.Client
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	twin := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: h.Name}, Spec: *h.Spec.DeepCopy()}
	created, err := cs.AutoscalingV2().HorizontalPodAutoscalers(ns).Create(ctx, twin, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Status = *h.Status.DeepCopy()
	if _, err := cs.AutoscalingV2().HorizontalPodAutoscalers(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// PrinterColumns: for metrics of every type, measured, failed and absent, one and several,
// the REFERENCE and TARGETS the scaler writes into a custom resource's status are what the API
// server's table printer shows for an HPA of the same spec and status (kubectl get hpa), and
// kubectl get chpa shows them.
func (e *e2eEnv) printerColumns(t *testing.T) {
	e.installCRD(t)
	ctx := t.Context()
	ns := "printer-columns"
	q := func(s string) *resource.Quantity { v := resource.MustParse(s); return &v }
	util := func(name corev1.ResourceName, pct int32) autoscalingv2.MetricSpec {
		return autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
			Name: name, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &pct}}}
	}
	utilNow := func(name corev1.ResourceName, pct int32) autoscalingv2.MetricStatus {
		return autoscalingv2.MetricStatus{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{
			Name: name, Current: autoscalingv2.MetricValueStatus{AverageUtilization: &pct, AverageValue: q("90m")}}}
	}
	memAvg := autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: corev1.ResourceMemory, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: q("1Gi")}}}
	memNow := autoscalingv2.MetricStatus{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{
		Name: corev1.ResourceMemory, Current: autoscalingv2.MetricValueStatus{AverageValue: q("500Mi")}}}
	container := autoscalingv2.MetricSpec{Type: autoscalingv2.ContainerResourceMetricSourceType, ContainerResource: &autoscalingv2.ContainerResourceMetricSource{
		Name: corev1.ResourceCPU, Container: "app", Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: q("1")}}}
	containerNow := autoscalingv2.MetricStatus{Type: autoscalingv2.ContainerResourceMetricSourceType, ContainerResource: &autoscalingv2.ContainerResourceMetricStatus{
		Name: corev1.ResourceCPU, Container: "app", Current: autoscalingv2.MetricValueStatus{AverageValue: q("0.5")}}}
	id := func(name string) autoscalingv2.MetricIdentifier { return autoscalingv2.MetricIdentifier{Name: name} }
	pods := autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
		Metric: id("rps"), Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: q("20")}}}
	podsNow := autoscalingv2.MetricStatus{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricStatus{
		Metric: id("rps"), Current: autoscalingv2.MetricValueStatus{AverageValue: q("10500m")}}}
	object := func(target autoscalingv2.MetricTarget) autoscalingv2.MetricSpec {
		return autoscalingv2.MetricSpec{Type: autoscalingv2.ObjectMetricSourceType, Object: &autoscalingv2.ObjectMetricSource{
			DescribedObject: autoscalingv2.CrossVersionObjectReference{APIVersion: "networking.k8s.io/v1", Kind: "Ingress", Name: "main"},
			Metric:          id("hits"), Target: target}}
	}
	objectNow := func(v autoscalingv2.MetricValueStatus) autoscalingv2.MetricStatus {
		return autoscalingv2.MetricStatus{Type: autoscalingv2.ObjectMetricSourceType, Object: &autoscalingv2.ObjectMetricStatus{
			DescribedObject: autoscalingv2.CrossVersionObjectReference{APIVersion: "networking.k8s.io/v1", Kind: "Ingress", Name: "main"},
			Metric:          id("hits"), Current: v}}
	}
	external := func(target autoscalingv2.MetricTarget) autoscalingv2.MetricSpec {
		return autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{Metric: id("queue"), Target: target}}
	}
	externalNow := func(v autoscalingv2.MetricValueStatus) autoscalingv2.MetricStatus {
		return autoscalingv2.MetricStatus{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricStatus{Metric: id("queue"), Current: v}}
	}
	value := func(v string) autoscalingv2.MetricTarget {
		return autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: q(v)}
	}
	average := func(v string) autoscalingv2.MetricTarget {
		return autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: q(v)}
	}
	failed := autoscalingv2.MetricStatus{} // a metric that could not be read
	dyn, err := dynamic.NewForConfig(e.cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	k := &Kube{Dynamic: dyn}

	cases := []struct {
		name    string
		kind    string
		metrics []autoscalingv2.MetricSpec
		current []autoscalingv2.MetricStatus
		noMin   bool // minReplicas unset: the API server defaults it to 1, the CRD too
	}{
		{name: "utilization", kind: "Deployment", metrics: []autoscalingv2.MetricSpec{util("cpu", 60)}, current: []autoscalingv2.MetricStatus{utilNow("cpu", 90)}},
		{name: "not-measured", kind: "StatefulSet", metrics: []autoscalingv2.MetricSpec{util("cpu", 60), pods}},
		{name: "averages", kind: "Deployment", metrics: []autoscalingv2.MetricSpec{memAvg, container}, current: []autoscalingv2.MetricStatus{memNow, containerNow}},
		{name: "pods-and-object", kind: "Deployment", metrics: []autoscalingv2.MetricSpec{pods, object(average("100"))},
			current: []autoscalingv2.MetricStatus{podsNow, objectNow(autoscalingv2.MetricValueStatus{AverageValue: q("50")})}},
		{name: "object-and-external-values", kind: "Deployment", metrics: []autoscalingv2.MetricSpec{object(value("2k")), external(value("30"))},
			current: []autoscalingv2.MetricStatus{objectNow(autoscalingv2.MetricValueStatus{Value: q("1500")}), externalNow(autoscalingv2.MetricValueStatus{Value: q("45")})}},
		{name: "external-average-failed", kind: "Deployment", metrics: []autoscalingv2.MetricSpec{external(average("5")), util("memory", 70)},
			current: []autoscalingv2.MetricStatus{failed, utilNow("memory", 20)}},
		{name: "external-status-without-value", kind: "Deployment", metrics: []autoscalingv2.MetricSpec{external(value("30"))},
			current: []autoscalingv2.MetricStatus{externalNow(autoscalingv2.MetricValueStatus{})}},
		{name: "three", kind: "Deployment", metrics: []autoscalingv2.MetricSpec{util("cpu", 60), memAvg, pods},
			current: []autoscalingv2.MetricStatus{utilNow("cpu", 90), memNow, failed}},
		{name: "five", kind: "Deployment", metrics: []autoscalingv2.MetricSpec{util("cpu", 60), pods, memAvg, object(value("1")), external(average("1"))},
			current: []autoscalingv2.MetricStatus{utilNow("cpu", 90), failed, memNow}},
		{name: "defaulted", kind: "Deployment", current: []autoscalingv2.MetricStatus{utilNow("cpu", 40)}, noMin: true},
	}
	want := map[string][2]string{} // name: the custom resource's reference and targets
	for _, tc := range cases {
		h := &autoscalingv2.HorizontalPodAutoscaler{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tc.name},
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
				ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: tc.kind, Name: tc.name},
				MinReplicas:    ptr(int32(1)), MaxReplicas: 10, Metrics: tc.metrics,
			},
			Status: autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: 2, DesiredReplicas: 2, CurrentMetrics: tc.current},
		}
		if tc.noMin {
			h.Spec.MinReplicas = nil
		}
		e.twinHPA(t, ctx, ns, h)

		// The custom resource, its status written by the scaler's own writer.
		u, err := toCustom(h, customFields{})
		if err != nil {
			t.Fatal(err)
		}
		delete(u.Object, "status")
		created, err := dyn.Resource(v1alpha1.GroupVersionResource).Namespace(ns).Create(ctx, u, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		a, err := customAutoscaler(created)
		if err != nil {
			t.Fatal(err)
		}
		next := h.Status
		f := nextCustomFields(a.Object.custom, &a.HPA.Spec, &next, &statusChange{recreate: true})
		obj := a.HPA.DeepCopy()
		obj.Status = next
		if _, _, err := k.updateObjectStatus(ctx, a.Object, obj, f); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		want[tc.name] = [2]string{f.reference, f.targets}
	}
	hpaRows := e.getTable(t, "hpa", "-n", ns)
	chpaRows := e.getTable(t, "chpa", "-n", ns)
	for _, tc := range cases {
		hr, cr := hpaRows[tc.name], chpaRows[tc.name]
		if got := [2]string{hr["REFERENCE"], hr["TARGETS"]}; got != want[tc.name] {
			t.Errorf("%s: kubectl get hpa prints REFERENCE, TARGETS %q; the scaler writes %q", tc.name, got, want[tc.name])
		}
		if got := [2]string{cr["REFERENCE"], cr["TARGETS"]}; got != want[tc.name] {
			t.Errorf("%s: kubectl get chpa prints REFERENCE, TARGETS %q; the scaler wrote %q", tc.name, got, want[tc.name])
		}
		for _, col := range []string{"MINPODS", "MAXPODS", "REPLICAS"} {
			if hr[col] != cr[col] {
				t.Errorf("%s: kubectl get chpa prints %s %q, kubectl get hpa %q", tc.name, col, cr[col], hr[col])
			}
		}
	}
}
