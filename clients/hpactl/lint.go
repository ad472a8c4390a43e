package hpactl

import (
	"fmt"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hpa-recommender/hpa-recommender/clients/internal/hpafile"
)

// lintHPA is what is valid in h but likely a mistake (docs/MANIFESTS.md lists the rules; each
// warning is certain from the spec alone, never a guess about the workload):
//   - no metrics, so the 80 % cpu default;
//   - a scaleDown tolerance of 1 or more: the usage ratio would have to fall below 0, so the
//     metrics never scale down (HPA-ALGORITHM R-TOL-1);
//   - minReplicas 0 with scaleUp policies whose limit at 0 replicas is 0 (every policy Percent
//     under selectPolicy Max, any under Min): a percentage of 0 is 0 (R-POL), so once the last
//     scale-down is a period old the autoscaler never scales up from zero;
//   - two Pods, Object or External metrics that read the same series (same name, same
//     selector, and for Object the same object): the second needs a metric.selector that
//     tells it apart.
//
// selectPolicy Disabled is a choice, not a mistake. minReplicas above maxReplicas is not here:
// the API server refuses it, so it is an error (recommender.ValidateSpec).
func lintHPA(h *hpafile.HPA) []*hpafile.Problem {
	var out []*hpafile.Problem
	s := h.Object.Spec
	if len(s.Metrics) == 0 {
		out = append(out, h.Problem("spec.metrics", "no metrics: the autoscaler targets 80% average cpu utilization"))
	}
	if b := s.Behavior; b != nil {
		if d := b.ScaleDown; d != nil && d.Tolerance != nil && d.Tolerance.Cmp(resource.MustParse("1")) >= 0 &&
			(d.SelectPolicy == nil || *d.SelectPolicy != autoscalingv2.DisabledPolicySelect) {
			out = append(out, h.Problem("spec.behavior.scaleDown.tolerance", fmt.Sprintf(
				"tolerance %s is 1 or more: the usage ratio would have to fall below 0, so the metrics never scale down; to turn scale-down off say selectPolicy: Disabled",
				d.Tolerance.String())))
		}
		if s.MinReplicas != nil && *s.MinReplicas == 0 && zeroUpLimitAtZero(b.ScaleUp) {
			out = append(out, h.Problem("spec.behavior.scaleUp.policies",
				"minReplicas is 0 and the scale-up limit at 0 replicas is 0 (a Percent policy allows a percentage of 0): once the last scale-down is older than the policies' periodSeconds, the autoscaler never scales up from zero; add a Pods policy"))
		}
	}
	out = append(out, sameSeries(h)...)
	return out
}

// zeroUpLimitAtZero reports whether the scale-up policies r states limit a scale-up from 0
// replicas, with no scale-down in their periods, to 0. Absent or empty policies are the
// defaults (a Pods policy of 4), which do not.
func zeroUpLimitAtZero(r *autoscalingv2.HPAScalingRules) bool {
	if r == nil || len(r.Policies) == 0 {
		return false
	}
	sel := autoscalingv2.MaxChangePolicySelect
	if r.SelectPolicy != nil {
		sel = *r.SelectPolicy
	}
	percent := 0
	for _, p := range r.Policies {
		if p.Type == autoscalingv2.PercentScalingPolicy {
			percent++
		}
	}
	switch sel {
	case autoscalingv2.MaxChangePolicySelect:
		return percent == len(r.Policies)
	case autoscalingv2.MinChangePolicySelect:
		return percent > 0
	}
	return false // Disabled: no scale-up at all, by choice
}

// sameSeries warns of each Pods, Object or External metric that reads the same series as an
// earlier one.
func sameSeries(h *hpafile.HPA) []*hpafile.Problem {
	var out []*hpafile.Problem
	first := map[string]int{}
	for i, m := range h.Object.Spec.Metrics {
		var id *autoscalingv2.MetricIdentifier
		var field, source string
		switch {
		case m.Type == autoscalingv2.PodsMetricSourceType && m.Pods != nil:
			id, field, source = &m.Pods.Metric, "pods", "pods"
		case m.Type == autoscalingv2.ObjectMetricSourceType && m.Object != nil:
			o := m.Object.DescribedObject
			id, field, source = &m.Object.Metric, "object", "object "+o.APIVersion+"/"+o.Kind+"/"+o.Name
		case m.Type == autoscalingv2.ExternalMetricSourceType && m.External != nil:
			id, field, source = &m.External.Metric, "external", "external"
		default:
			continue
		}
		key := source + "\x00" + id.Name + "\x00" + selectorString(id.Selector)
		j, seen := first[key]
		if !seen {
			first[key] = i
			continue
		}
		what := "no metric.selector"
		if sel := selectorString(id.Selector); sel != "" {
			what = fmt.Sprintf("the same metric.selector (%s)", sel)
		}
		out = append(out, h.Problem(fmt.Sprintf("spec.metrics[%d].%s.metric.selector", i, field), fmt.Sprintf(
			"metric %q with %s reads the same series as spec.metrics[%d]: give each a metric.selector that tells them apart",
			id.Name, what, j)))
	}
	return out
}

// selectorString is a selector's canonical form, "" for none and for one that selects
// everything (to the metrics APIs, the same).
func selectorString(s *metav1.LabelSelector) string {
	if s == nil {
		return ""
	}
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		return s.String() // invalid: the validation reports it; compare it as written
	}
	return sel.String()
}
