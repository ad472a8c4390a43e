package fleet

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/hpa-recommender/hpa-recommender/internal/controlplane"
)

// fleetLabel marks the benchmark's pods.
const fleetLabel = "hpa-bench-fleet"

// The load every autoscaler sees holds it where it is (desired = current): each pod uses half
// of its 100m CPU request against a 50 % target, and an External metric is worth
// externalPerPod per pod against an AverageValue of externalPerPod. The benchmark measures the
// steady fleet, as the in-tree controller spends most of its syncs.
const (
	cpuRequestMilli = 100
	cpuUsageMilli   = 50
	externalPerPod  = 10
)

// member is one autoscaler of the fleet and its Deployment (same name).
type member struct {
	namespace, name string
	replicas        int32
	cpu, external   bool
}

func fleetMembers(n, perNamespace int) []member {
	ms := make([]member, n)
	for i := range ms {
		ms[i] = member{
			namespace: fmt.Sprintf("fleet-%d", i/perNamespace),
			name:      fmt.Sprintf("app-%d", i),
			replicas:  int32(2 + i%4),
			cpu:       i%2 == 0 || i%5 == 0,
			external:  i%2 == 1 || i%5 == 0,
		}
	}
	return ms
}

func (m member) externalMetric() string { return "queue-" + m.name }

func (m member) deployment() *appsv1.Deployment {
	lbl := map[string]string{"app": m.name, fleetLabel: "true"}
	r := m.replicas
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: m.name, Namespace: m.namespace},
		Spec: appsv1.DeploymentSpec{
			Replicas: &r, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": m.name}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: lbl}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "app", Image: "registry.example/app:1",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(cpuRequestMilli, resource.DecimalSI)}},
			}}}},
		},
	}
}

func (m member) hpa() *autoscalingv2.HorizontalPodAutoscaler {
	one := int32(1)
	h := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: m.name, Namespace: m.namespace},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: m.name},
			MinReplicas:    &one, MaxReplicas: 20,
		},
	}
	if m.cpu {
		util := int32(cpuUsageMilli * 100 / cpuRequestMilli)
		h.Spec.Metrics = append(h.Spec.Metrics, autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
			Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &util},
		}})
	}
	if m.external {
		avg := resource.NewQuantity(externalPerPod, resource.DecimalSI)
		h.Spec.Metrics = append(h.Spec.Metrics, autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
			Metric: autoscalingv2.MetricIdentifier{Name: m.externalMetric()},
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: avg},
		}})
	}
	return h
}

// parallel runs f on every index below n with workers goroutines and returns the first error.
func parallel(ctx context.Context, n, workers int, f func(context.Context, int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := f(ctx, i); err != nil {
					cancel(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil && ctx.Err() != nil {
		return err
	}
	return nil
}

func ignoreExists(err error) error {
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// createFleet creates the namespaces, Deployments and HPAs, sets the External metrics, then
// plays the kubelet until every pod is Running and Ready and has its CPU usage.
func createFleet(ctx context.Context, cs kubernetes.Interface, adapter *controlplane.MetricsAdapter, ms []member, progress io.Writer) error {
	const workers = 16
	start := time.Now()
	namespaces := map[string]bool{}
	var nsList []string
	for _, m := range ms {
		if !namespaces[m.namespace] {
			namespaces[m.namespace] = true
			nsList = append(nsList, m.namespace)
		}
	}
	if err := parallel(ctx, len(nsList), workers, func(ctx context.Context, i int) error {
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nsList[i]}}, metav1.CreateOptions{})
		return ignoreExists(err)
	}); err != nil {
		return fmt.Errorf("create namespaces: %w", err)
	}
	if err := parallel(ctx, len(ms), workers, func(ctx context.Context, i int) error {
		m := ms[i]
		if _, err := cs.AppsV1().Deployments(m.namespace).Create(ctx, m.deployment(), metav1.CreateOptions{}); ignoreExists(err) != nil {
			return fmt.Errorf("deployment %s/%s: %w", m.namespace, m.name, err)
		}
		if m.external {
			adapter.SetExternalMetric(m.namespace, m.externalMetric(), controlplane.ExternalValue{Value: *resource.NewQuantity(int64(m.replicas)*externalPerPod, resource.DecimalSI)})
		}
		if _, err := cs.AutoscalingV2().HorizontalPodAutoscalers(m.namespace).Create(ctx, m.hpa(), metav1.CreateOptions{}); ignoreExists(err) != nil {
			return fmt.Errorf("hpa %s/%s: %w", m.namespace, m.name, err)
		}
		return nil
	}); err != nil {
		return err
	}
	want := 0
	for _, m := range ms {
		want += int(m.replicas)
	}
	fmt.Fprintf(progress, "fleet: %d namespaces, %d deployments and HPAs created in %s; waiting for %d pods\n", len(nsList), len(ms), time.Since(start).Round(time.Second), want)
	usage := map[string]corev1.ResourceList{"app": {corev1.ResourceCPU: *resource.NewMilliQuantity(cpuUsageMilli, resource.DecimalSI)}}
	for {
		list, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: fleetLabel + "=true"})
		if err != nil {
			return fmt.Errorf("list pods: %w", err)
		}
		var todo []*corev1.Pod
		live := 0
		for i := range list.Items {
			p := &list.Items[i]
			if p.DeletionTimestamp != nil {
				continue
			}
			live++
			if !podReady(p) {
				todo = append(todo, p)
			}
		}
		if err := parallel(ctx, len(todo), workers, func(ctx context.Context, i int) error {
			p := todo[i]
			if _, err := controlplane.SetPodStatus(ctx, cs, p, controlplane.PodState{Ready: true}); err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
				return fmt.Errorf("pod %s/%s: %w", p.Namespace, p.Name, err)
			}
			adapter.SetPodUsage(p.Namespace, p.Name, usage)
			return nil
		}); err != nil {
			return err
		}
		if live >= want && len(todo) == 0 {
			fmt.Fprintf(progress, "fleet: %d pods Running and Ready after %s\n", live, time.Since(start).Round(time.Second))
			return nil
		}
		fmt.Fprintf(progress, "fleet: %d of %d pods, %d made ready now (%s)\n", live, want, len(todo), time.Since(start).Round(time.Second))
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %d pods (%d so far): %w", want, live, context.Cause(ctx))
		case <-time.After(2 * time.Second):
		}
	}
}

func podReady(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
