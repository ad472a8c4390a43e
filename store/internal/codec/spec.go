package codec

import (
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/hpa-recommender/hpa-recommender/recommender"
	"github.com/hpa-recommender/hpa-recommender/store"
)

// MarshalNormalizedAfter is MarshalNormalized(t) for a target written after the record prev
// (nil: none), the normalized target MarshalNormalized (or MarshalNormalizedAfter) returned
// with prevSpec, its spec's encoding (nil: nothing to reuse). Every Recommend carries its
// target's whole spec, which seldom changes: when t's spec encodes as prev's does
// (SpecEncodesSame), the record holds prevSpec verbatim instead of the spec's encoding, and the
// normalized target's Spec is prev's, sharing its pointers, slices and maps, instead of a new
// copy; the spec is neither converted, encoded nor normalized again. Either way the results are
// MarshalNormalized's, byte for byte and value for value (the returned spec is then prevSpec
// itself).
//
// prev's Spec and prevSpec must never be modified, nor the normalized target's Spec: a store
// passes a cached record, which it keeps frozen, and caches the result frozen in turn.
func MarshalNormalizedAfter(t, prev *store.Target, prevSpec []byte) (u Unrevised, n *store.Target, spec []byte, err error) {
	return JSON.MarshalNormalizedAfter(t, prev, prevSpec)
}

// MarshalNormalizedAfter is the package's MarshalNormalizedAfter in f; prevSpec must be a
// spec's encoding in f, as f's MarshalNormalized returned it.
func (f Format) MarshalNormalizedAfter(t, prev *store.Target, prevSpec []byte) (u Unrevised, n *store.Target, spec []byte, err error) {
	if prev == nil || prevSpec == nil || !SpecEncodesSame(&t.Spec, &prev.Spec) {
		return f.marshalNormalized(t, nil, nil)
	}
	return f.marshalNormalized(t, &prev.Spec, prevSpec)
}

// SpecEncodesSame reports whether specs a and b are written alike in a record, so that they also
// normalize alike. It is conservative: never true for specs written differently, false for some
// written alike (strings that JSON escapes alike, such as two invalid UTF-8 bytes). Nil and empty
// slices and maps are alike: both are omitted, and normalized to nil. Quantities are alike when
// their texts, which the record holds, are: equal values of the same Format are not enough, as
// String() may return a cached text that is not the canonical one ("+1" parsed stays "+1"). The
// texts are read from copies (see qtyText): a and b may be shared with other goroutines.
//
// A field added to recommender.Spec must be compared here: TestSpecEncodesSameSeesEveryField
// fails until it is.
func SpecEncodesSame(a, b *recommender.Spec) bool {
	return a == b || a.ScaleTargetRef == b.ScaleTargetRef &&
		sameValue(a.MinReplicas, b.MinReplicas) &&
		a.MaxReplicas == b.MaxReplicas &&
		slices.EqualFunc(a.Metrics, b.Metrics, sameMetric) &&
		same(a.Behavior, b.Behavior, sameBehavior)
}

// same reports whether a and b are both nil, or both set and alike by eq.
func same[T any](a, b *T, eq func(a, b *T) bool) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a == b || eq(a, b)
}

// sameValue reports whether a and b are both nil, or both set to equal values.
func sameValue[T comparable](a, b *T) bool {
	return same(a, b, func(a, b *T) bool { return *a == *b })
}

func sameQuantity(a, b *resource.Quantity) bool {
	return same(a, b, func(a, b *resource.Quantity) bool { return qtyText(a) == qtyText(b) })
}

func sameMetric(a, b recommender.MetricSpec) bool {
	return a.Type == b.Type &&
		same(a.Resource, b.Resource, func(a, b *recommender.ResourceMetricSource) bool {
			return a.Name == b.Name && sameMetricTarget(&a.Target, &b.Target)
		}) &&
		same(a.ContainerResource, b.ContainerResource, func(a, b *recommender.ContainerResourceMetricSource) bool {
			return a.Name == b.Name && a.Container == b.Container && sameMetricTarget(&a.Target, &b.Target)
		}) &&
		same(a.Pods, b.Pods, func(a, b *recommender.PodsMetricSource) bool {
			return sameMetricID(&a.Metric, &b.Metric) && sameMetricTarget(&a.Target, &b.Target)
		}) &&
		same(a.Object, b.Object, func(a, b *recommender.ObjectMetricSource) bool {
			return a.DescribedObject == b.DescribedObject && sameMetricID(&a.Metric, &b.Metric) &&
				sameMetricTarget(&a.Target, &b.Target)
		}) &&
		same(a.External, b.External, func(a, b *recommender.ExternalMetricSource) bool {
			return sameMetricID(&a.Metric, &b.Metric) && sameMetricTarget(&a.Target, &b.Target)
		})
}

func sameMetricID(a, b *recommender.MetricIdentifier) bool {
	return a.Name == b.Name && same(a.Selector, b.Selector, func(a, b *recommender.LabelSelector) bool {
		return maps.Equal(a.MatchLabels, b.MatchLabels) &&
			slices.EqualFunc(a.MatchExpressions, b.MatchExpressions, func(a, b recommender.LabelSelectorRequirement) bool {
				return a.Key == b.Key && a.Operator == b.Operator && slices.Equal(a.Values, b.Values)
			})
	})
}

func sameMetricTarget(a, b *recommender.MetricTarget) bool {
	return a.Type == b.Type && sameQuantity(a.Value, b.Value) && sameQuantity(a.AverageValue, b.AverageValue) &&
		sameValue(a.AverageUtilization, b.AverageUtilization)
}

func sameBehavior(a, b *recommender.Behavior) bool {
	return same(a.ScaleUp, b.ScaleUp, sameRules) && same(a.ScaleDown, b.ScaleDown, sameRules)
}

func sameRules(a, b *recommender.ScalingRules) bool {
	return sameValue(a.StabilizationWindowSeconds, b.StabilizationWindowSeconds) &&
		sameValue(a.SelectPolicy, b.SelectPolicy) &&
		slices.Equal(a.Policies, b.Policies) &&
		sameQuantity(a.Tolerance, b.Tolerance)
}
