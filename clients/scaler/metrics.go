package scaler

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	metricsapi "k8s.io/metrics/pkg/apis/metrics/v1beta1"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

// This file fetches one observation per spec.metrics entry the way upstream's REST metrics
// client does (pkg/controller/podautoscaler/metrics/client.go): same APIs, same per-pod rules,
// same error texts. A metric that cannot be fetched becomes an observation with only its error
// set, so the service applies upstream's partial-failure rules; no value is ever invented.

// observe fetches the metric m for the pods matched by selector in namespace.
func (k *Kube) observe(ctx context.Context, namespace string, selector labels.Selector, m *autoscalingv2.MetricSpec) *pb.MetricObservation {
	switch m.Type {
	case autoscalingv2.ResourceMetricSourceType:
		if m.Resource == nil {
			return errObservation("metric type Resource without a resource source")
		}
		return k.resourceObservation(ctx, namespace, selector, m.Resource.Name, "")
	case autoscalingv2.ContainerResourceMetricSourceType:
		if m.ContainerResource == nil {
			return errObservation("metric type ContainerResource without a containerResource source")
		}
		return k.resourceObservation(ctx, namespace, selector, m.ContainerResource.Name, m.ContainerResource.Container)
	case autoscalingv2.PodsMetricSourceType:
		if m.Pods == nil {
			return errObservation("metric type Pods without a pods source")
		}
		return k.podsObservation(namespace, selector, &m.Pods.Metric)
	case autoscalingv2.ObjectMetricSourceType:
		if m.Object == nil {
			return errObservation("metric type Object without an object source")
		}
		return k.objectObservation(namespace, &m.Object.DescribedObject, &m.Object.Metric)
	case autoscalingv2.ExternalMetricSourceType:
		if m.External == nil {
			return errObservation("metric type External without an external source")
		}
		return k.externalObservation(namespace, &m.External.Metric)
	default:
		return errObservation(fmt.Sprintf("unknown metric source type %q", m.Type))
	}
}

func errObservation(msg string) *pb.MetricObservation { return &pb.MetricObservation{Error: msg} }

func milliString(milli int64) string {
	return resource.NewMilliQuantity(milli, resource.DecimalSI).String()
}

// resourceObservation reads metrics.k8s.io PodMetrics. Without container, a pod's value is
// the sum of its containers' usage and a pod with any container missing the resource (or with
// no containers) is skipped; with container, it is that container's usage and a pod without
// that container, or whose container lacks the resource, is skipped.
func (k *Kube) resourceObservation(ctx context.Context, namespace string, selector labels.Selector, res corev1.ResourceName, container string) *pb.MetricObservation {
	if k.ResourceMetrics == nil {
		return errObservation("unable to fetch metrics from resource metrics API: no resource metrics client")
	}
	list, err := k.ResourceMetrics.PodMetricses(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return errObservation(fmt.Sprintf("unable to fetch metrics from resource metrics API: %v", err))
	}
	if len(list.Items) == 0 {
		return errObservation("no metrics returned from resource metrics API")
	}
	out := &pb.MetricObservation{}
	for i := range list.Items {
		pm := &list.Items[i]
		milli, ok := podResourceMilli(pm, res, container)
		if !ok {
			continue
		}
		out.PodValues = append(out.PodValues, &pb.PodMetricValue{
			Pod:       pm.Name,
			Value:     milliString(milli),
			Timestamp: timestamppb.New(pm.Timestamp.Time),
			Window:    durationpb.New(pm.Window.Duration),
		})
	}
	return out
}

func podResourceMilli(pm *metricsapi.PodMetrics, res corev1.ResourceName, container string) (int64, bool) {
	if container != "" {
		for i := range pm.Containers {
			c := &pm.Containers[i]
			if c.Name != container {
				continue
			}
			v, ok := c.Usage[res]
			if !ok {
				return 0, false
			}
			return v.MilliValue(), true
		}
		return 0, false
	}
	if len(pm.Containers) == 0 {
		return 0, false
	}
	var sum int64
	for i := range pm.Containers {
		v, ok := pm.Containers[i].Usage[res]
		if !ok {
			return 0, false
		}
		sum += v.MilliValue()
	}
	return sum, true
}

// podsObservation reads custom.metrics.k8s.io for the pods matched by selector.
func (k *Kube) podsObservation(namespace string, selector labels.Selector, id *autoscalingv2.MetricIdentifier) *pb.MetricObservation {
	metricSelector, err := metav1.LabelSelectorAsSelector(id.Selector)
	if err != nil {
		return errObservation(fmt.Sprintf("unable to parse the metric selector: %v", err))
	}
	if k.CustomMetrics == nil {
		return errObservation("unable to fetch metrics from custom metrics API: no custom metrics client")
	}
	list, err := k.CustomMetrics.NamespacedMetrics(namespace).GetForObjects(schema.GroupKind{Kind: "Pod"}, selector, id.Name, metricSelector)
	if err != nil {
		return errObservation(fmt.Sprintf("unable to fetch metrics from custom metrics API: %v", err))
	}
	if len(list.Items) == 0 {
		return errObservation("no metrics returned from custom metrics API")
	}
	out := &pb.MetricObservation{}
	for i := range list.Items {
		m := &list.Items[i]
		pv := &pb.PodMetricValue{
			Pod:       m.DescribedObject.Name,
			Value:     milliString(m.Value.MilliValue()),
			Timestamp: timestamppb.New(m.Timestamp.Time),
		}
		if m.WindowSeconds != nil {
			pv.Window = durationpb.New(secondsDuration(*m.WindowSeconds))
		}
		out.PodValues = append(out.PodValues, pv)
	}
	return out
}

// objectObservation reads custom.metrics.k8s.io for one object (a Namespace is root-scoped,
// as upstream).
func (k *Kube) objectObservation(namespace string, ref *autoscalingv2.CrossVersionObjectReference, id *autoscalingv2.MetricIdentifier) *pb.MetricObservation {
	metricSelector, err := metav1.LabelSelectorAsSelector(id.Selector)
	if err != nil {
		return errObservation(fmt.Sprintf("unable to parse the metric selector: %v", err))
	}
	if k.CustomMetrics == nil {
		return errObservation("unable to fetch metrics from custom metrics API: no custom metrics client")
	}
	gvk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind)
	var milli int64
	if gvk.Kind == "Namespace" && gvk.Group == "" {
		mv, err := k.CustomMetrics.RootScopedMetrics().GetForObject(gvk.GroupKind(), namespace, id.Name, metricSelector)
		if err != nil {
			return errObservation(fmt.Sprintf("unable to fetch metrics from custom metrics API: %v", err))
		}
		milli = mv.Value.MilliValue()
	} else {
		mv, err := k.CustomMetrics.NamespacedMetrics(namespace).GetForObject(gvk.GroupKind(), ref.Name, id.Name, metricSelector)
		if err != nil {
			return errObservation(fmt.Sprintf("unable to fetch metrics from custom metrics API: %v", err))
		}
		milli = mv.Value.MilliValue()
	}
	s := milliString(milli)
	return &pb.MetricObservation{Value: &s}
}

// externalObservation reads external.metrics.k8s.io; every returned series is sent and the
// service sums them.
func (k *Kube) externalObservation(namespace string, id *autoscalingv2.MetricIdentifier) *pb.MetricObservation {
	metricSelector, err := metav1.LabelSelectorAsSelector(id.Selector)
	if err != nil {
		return errObservation(fmt.Sprintf("unable to parse the metric selector: %v", err))
	}
	if k.ExternalMetrics == nil {
		return errObservation("unable to fetch metrics from external metrics API: no external metrics client")
	}
	list, err := k.ExternalMetrics.NamespacedMetrics(namespace).List(id.Name, metricSelector)
	if err != nil {
		return errObservation(fmt.Sprintf("unable to fetch metrics from external metrics API: %v", err))
	}
	if len(list.Items) == 0 {
		return errObservation("no metrics returned from external metrics API")
	}
	out := &pb.MetricObservation{}
	for i := range list.Items {
		out.Values = append(out.Values, milliString(list.Items[i].Value.MilliValue()))
	}
	return out
}

func secondsDuration(s int64) time.Duration { return time.Duration(s) * time.Second }
