package scaler

import (
	"fmt"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The REFERENCE and TARGETS columns of `kubectl get hpa` are computed by the API server's
// table printer (formatHPAMetrics in k8s.io/kubernetes pkg/printers/internalversion); a CRD's
// printer column is one JSONPath and cannot compute them, so the scaler writes them into the
// custom resource's status (status.reference, status.targets). The functions here print what
// that printer prints for an HPA of the same spec and status, down to its quirks: a status is
// matched to its spec by position, an absent current value is "<unknown>" but a status entry
// of the right type without the value prints a nil quantity ("<nil>"), and only the first
// targetsShown metrics are listed.

const (
	// targetsShown is how many metrics the TARGETS column lists before "+ N more...".
	targetsShown = 2
	unknownCell  = "<unknown>"
)

// hpaReference is the REFERENCE column: the scale target's kind/name.
func hpaReference(ref autoscalingv2.CrossVersionObjectReference) string {
	return ref.Kind + "/" + ref.Name
}

// hpaTargets is the TARGETS column: each metric's current/target, comma-separated, the first
// targetsShown of them and then "+ N more...". An empty metrics list is the one cpu metric at
// 80% the API server defaults an HPA's to (and the service decides on), so the column matches
// `kubectl get hpa` for the HPA of the same spec.
func hpaTargets(metrics []autoscalingv2.MetricSpec, current []autoscalingv2.MetricStatus) string {
	if len(metrics) == 0 {
		eighty := int32(80)
		metrics = []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
			Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &eighty},
		}}}
	}
	cells := make([]string, 0, targetsShown)
	for i, m := range metrics[:min(len(metrics), targetsShown)] {
		var st *autoscalingv2.MetricStatus
		if i < len(current) {
			st = &current[i]
		}
		cells = append(cells, targetCell(&m, st))
	}
	s := strings.Join(cells, ", ")
	if more := len(metrics) - targetsShown; more > 0 {
		s += fmt.Sprintf(" + %d more...", more)
	}
	return s
}

// targetCell is one metric's current/target; st is the status at the metric's position (nil
// when there is none). The target's averageValue, when set, picks the average form, whatever
// the target's type says, as upstream's printer does.
func targetCell(m *autoscalingv2.MetricSpec, st *autoscalingv2.MetricStatus) string {
	if st == nil {
		st = &autoscalingv2.MetricStatus{}
	}
	switch m.Type {
	case autoscalingv2.ExternalMetricSourceType:
		if m.External == nil {
			break
		}
		var cur *autoscalingv2.MetricValueStatus
		if st.External != nil {
			cur = &st.External.Current
		}
		return valueCell(m.External.Target, cur)
	case autoscalingv2.ObjectMetricSourceType:
		if m.Object == nil {
			break
		}
		var cur *autoscalingv2.MetricValueStatus
		if st.Object != nil {
			cur = &st.Object.Current
		}
		return valueCell(m.Object.Target, cur)
	case autoscalingv2.PodsMetricSourceType:
		if m.Pods == nil {
			break
		}
		cur := unknownCell
		if st.Pods != nil {
			cur = quantityCell(st.Pods.Current.AverageValue)
		}
		return cur + "/" + quantityCell(m.Pods.Target.AverageValue)
	case autoscalingv2.ResourceMetricSourceType:
		if m.Resource == nil {
			break
		}
		var cur *autoscalingv2.MetricValueStatus
		if st.Resource != nil {
			cur = &st.Resource.Current
		}
		return resourceCell(m.Resource.Name, m.Resource.Target, cur)
	case autoscalingv2.ContainerResourceMetricSourceType:
		if m.ContainerResource == nil {
			break
		}
		var cur *autoscalingv2.MetricValueStatus
		if st.ContainerResource != nil {
			cur = &st.ContainerResource.Current
		}
		return resourceCell(m.ContainerResource.Name, m.ContainerResource.Target, cur)
	}
	return "<unknown type>"
}

// valueCell is an Object or External metric: its average value against an averageValue
// target (with " (avg)"), else its value against the value target. cur is nil when the status
// has no entry of the metric's type.
func valueCell(t autoscalingv2.MetricTarget, cur *autoscalingv2.MetricValueStatus) string {
	c := unknownCell
	if t.AverageValue != nil {
		if cur != nil && cur.AverageValue != nil {
			c = quantityCell(cur.AverageValue)
		}
		return c + "/" + quantityCell(t.AverageValue) + " (avg)"
	}
	if cur != nil {
		c = quantityCell(cur.Value)
	}
	return c + "/" + quantityCell(t.Value)
}

// resourceCell is a Resource or ContainerResource metric, "name: current/target": by average
// value against an averageValue target, else in percent of the request (the target "<auto>"
// when it has no averageUtilization).
func resourceCell(name corev1.ResourceName, t autoscalingv2.MetricTarget, cur *autoscalingv2.MetricValueStatus) string {
	c := unknownCell
	if t.AverageValue != nil {
		if cur != nil {
			c = quantityCell(cur.AverageValue)
		}
		return fmt.Sprintf("%s: %s/%s", name, c, quantityCell(t.AverageValue))
	}
	if cur != nil && cur.AverageUtilization != nil {
		c = fmt.Sprintf("%d%%", *cur.AverageUtilization)
	}
	target := "<auto>"
	if t.AverageUtilization != nil {
		target = fmt.Sprintf("%d%%", *t.AverageUtilization)
	}
	return fmt.Sprintf("%s: %s/%s", name, c, target)
}

// quantityCell is q in canonical form, "<nil>" when absent (as a nil *resource.Quantity
// prints). It prints a copy: String caches its result in the quantity, and q may belong to an
// object of the informer's cache, which other goroutines read.
func quantityCell(q *resource.Quantity) string {
	if q == nil {
		return "<nil>"
	}
	c := q.DeepCopy()
	return c.String()
}
