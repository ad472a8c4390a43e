package codec

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/hpa-recommender/hpa-recommender/recommender"
	"github.com/hpa-recommender/hpa-recommender/store"
	pb "github.com/hpa-recommender/hpa-recommender/store/internal/recordpb"
)

// The conversion between store.Target and the generated record message (recordpb.Record).
// It is written by hand because the record is built from the domain types, which no generator
// knows; the bytes are protobuf's, written and read by generated code.

// cloneOrNil copies s; empty is nil, as decoding gives.
func cloneOrNil[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return slices.Clone(s)
}

// clonePtr copies *p.
func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func toRecord(t *store.Target) *pb.Record {
	r := &pb.Record{
		LastSeen:  toTime(t.LastSeen),
		FirstSeen: toTime(t.FirstSeen),
		Key:       &pb.Key{Cluster: t.Key.Cluster, Namespace: t.Key.Namespace, Name: t.Key.Name},
		Spec:      toSpec(&t.Spec),
		State:     toState(&t.State),
		Reported:  cloneOrNil(t.Reported),
	}
	for _, p := range t.Pending {
		r.Pending = append(r.Pending, &pb.PendingDecision{RecommendationId: p.RecommendationID, Time: toTime(p.Time),
			CurrentReplicas: p.CurrentReplicas, DesiredReplicas: p.DesiredReplicas})
	}
	if ld := t.LastDecision; ld != nil {
		r.LastDecision = toDecision(ld, t.State.Conditions)
	}
	toDecisionLog(t, r)
	return r
}

func toTime(t time.Time) *pb.Time {
	if t.IsZero() {
		return nil
	}
	return &pb.Time{Seconds: t.Unix(), Nanos: int32(t.Nanosecond())}
}

func toQty(q *resource.Quantity) *string {
	if q == nil {
		return nil
	}
	s := q.String()
	return &s
}

func toRef(r recommender.ObjectReference) *pb.ObjectReference {
	return &pb.ObjectReference{ApiVersion: r.APIVersion, Kind: r.Kind, Name: r.Name}
}

func toMetricID(m recommender.MetricIdentifier) *pb.MetricIdentifier {
	out := &pb.MetricIdentifier{Name: m.Name}
	if s := m.Selector; s != nil {
		out.Selector = &pb.LabelSelector{}
		for _, k := range slices.Sorted(maps.Keys(s.MatchLabels)) { // sorted: the same target, the same bytes
			out.Selector.MatchLabels = append(out.Selector.MatchLabels, &pb.Label{Key: k, Value: s.MatchLabels[k]})
		}
		for _, e := range s.MatchExpressions {
			out.Selector.MatchExpressions = append(out.Selector.MatchExpressions,
				&pb.LabelSelectorRequirement{Key: e.Key, Operator: e.Operator, Values: cloneOrNil(e.Values)})
		}
	}
	return out
}

func toTarget(t recommender.MetricTarget) *pb.MetricTarget {
	return &pb.MetricTarget{Type: t.Type, Value: toQty(t.Value), AverageValue: toQty(t.AverageValue),
		AverageUtilization: clonePtr(t.AverageUtilization)}
}

func toRules(r *recommender.ScalingRules) *pb.ScalingRules {
	if r == nil {
		return nil
	}
	out := &pb.ScalingRules{StabilizationWindowSeconds: clonePtr(r.StabilizationWindowSeconds),
		SelectPolicy: clonePtr(r.SelectPolicy), Tolerance: toQty(r.Tolerance)}
	for _, p := range r.Policies {
		out.Policies = append(out.Policies, &pb.ScalingPolicy{Type: p.Type, Value: p.Value, PeriodSeconds: p.PeriodSeconds})
	}
	return out
}

func toSpec(s *recommender.Spec) *pb.Spec {
	out := &pb.Spec{ScaleTargetRef: toRef(s.ScaleTargetRef), MinReplicas: clonePtr(s.MinReplicas), MaxReplicas: s.MaxReplicas}
	for _, m := range s.Metrics {
		e := &pb.MetricSpec{Type: m.Type}
		if x := m.Resource; x != nil {
			e.Resource = &pb.ResourceMetricSource{Name: x.Name, Target: toTarget(x.Target)}
		}
		if x := m.ContainerResource; x != nil {
			e.ContainerResource = &pb.ContainerResourceMetricSource{Name: x.Name, Container: x.Container, Target: toTarget(x.Target)}
		}
		if x := m.Pods; x != nil {
			e.Pods = &pb.PodsMetricSource{Metric: toMetricID(x.Metric), Target: toTarget(x.Target)}
		}
		if x := m.Object; x != nil {
			e.Object = &pb.ObjectMetricSource{DescribedObject: toRef(x.DescribedObject), Metric: toMetricID(x.Metric),
				Target: toTarget(x.Target)}
		}
		if x := m.External; x != nil {
			e.External = &pb.ExternalMetricSource{Metric: toMetricID(x.Metric), Target: toTarget(x.Target)}
		}
		out.Metrics = append(out.Metrics, e)
	}
	if b := s.Behavior; b != nil {
		out.Behavior = &pb.Behavior{ScaleUp: toRules(b.ScaleUp), ScaleDown: toRules(b.ScaleDown)}
	}
	return out
}

func toConditions(cs []recommender.Condition) []*pb.Condition {
	var out []*pb.Condition
	for _, c := range cs {
		out = append(out, &pb.Condition{Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message,
			LastTransitionTime: toTime(c.LastTransitionTime)})
	}
	return out
}

func toEvents(es []recommender.ScaleEvent) []*pb.ScaleEvent {
	var out []*pb.ScaleEvent
	for _, e := range es {
		out = append(out, &pb.ScaleEvent{Time: toTime(e.Time), Change: e.Change})
	}
	return out
}

func toState(s *recommender.State) *pb.State {
	out := &pb.State{Seeded: s.Seeded, Conditions: toConditions(s.Conditions),
		ScaleUpEvents: toEvents(s.History.ScaleUpEvents), ScaleDownEvents: toEvents(s.History.ScaleDownEvents)}
	for _, r := range s.History.Recommendations {
		out.Recommendations = append(out.Recommendations, &pb.Recommendation{Time: toTime(r.Time), Replicas: r.Replicas})
	}
	return out
}

func toValue(v recommender.MetricValueStatus) *pb.MetricValueStatus {
	return &pb.MetricValueStatus{Value: toQty(v.Value), AverageValue: toQty(v.AverageValue),
		AverageUtilization: clonePtr(v.AverageUtilization)}
}

// decision converts ld; conditions equal to the state's (the usual case) are written as
// conditions_as_state instead of a second copy.
func toDecision(ld *store.LastDecision, state []recommender.Condition) *pb.LastDecision {
	d := &ld.Decision
	out := &pb.LastDecision{RecommendationId: ld.RecommendationID, Time: toTime(d.Time),
		CurrentReplicas: d.CurrentReplicas, DesiredReplicas: d.DesiredReplicas}
	if len(d.Conditions) > 0 && slices.EqualFunc(d.Conditions, state, sameCondition) {
		out.ConditionsAsState = true
	} else {
		out.Conditions = toConditions(d.Conditions)
	}
	for _, m := range d.CurrentMetrics {
		e := &pb.MetricStatus{Type: m.Type}
		if x := m.Resource; x != nil {
			e.Resource = &pb.ResourceMetricStatus{Name: x.Name, Current: toValue(x.Current)}
		}
		if x := m.ContainerResource; x != nil {
			e.ContainerResource = &pb.ContainerResourceMetricStatus{Name: x.Name, Container: x.Container, Current: toValue(x.Current)}
		}
		if x := m.Pods; x != nil {
			e.Pods = &pb.PodsMetricStatus{Metric: toMetricID(x.Metric), Current: toValue(x.Current)}
		}
		if x := m.Object; x != nil {
			e.Object = &pb.ObjectMetricStatus{Metric: toMetricID(x.Metric), Current: toValue(x.Current),
				DescribedObject: toRef(x.DescribedObject)}
		}
		if x := m.External; x != nil {
			e.External = &pb.ExternalMetricStatus{Metric: toMetricID(x.Metric), Current: toValue(x.Current)}
		}
		out.CurrentMetrics = append(out.CurrentMetrics, e)
	}
	x := &d.Explanation
	out.Explanation = &pb.Explanation{Message: x.Message, WinningMetric: x.WinningMetric, Proposal: x.Proposal,
		Stabilized: x.Stabilized, StabilizationWindowNanos: int64(x.StabilizationWindow), Limited: x.Limited,
		LimitingPolicy: x.LimitingPolicy, Final: x.Final, LimitReason: x.LimitReason}
	for _, m := range x.Metrics {
		out.Explanation.Metrics = append(out.Explanation.Metrics, &pb.MetricExplanation{Index: m.Index, Name: m.Name,
			Proposal: m.Proposal, UsageRatio: m.UsageRatio, ReadyPods: m.ReadyPods, IgnoredPods: m.IgnoredPods,
			MissingPods: m.MissingPods, UnreadyPods: m.UnreadyPods, Error: m.Error})
	}
	return out
}

// sameCondition reports whether two conditions are stored alike (times as the same instant).
func sameCondition(a, b recommender.Condition) bool {
	return a.Type == b.Type && a.Status == b.Status && a.Reason == b.Reason && a.Message == b.Message &&
		a.LastTransitionTime.Equal(b.LastTransitionTime)
}

// fromRecord converts r back. The result shares nothing with r but strings.
func fromRecord(r *pb.Record) (*store.Target, error) {
	d := decoder{}
	t := &store.Target{
		LastSeen:  fromTime(r.LastSeen),
		FirstSeen: fromTime(r.FirstSeen),
		Spec:      d.spec(r.Spec),
		State:     fromState(r.State),
		Reported:  r.Reported,
	}
	if k := r.Key; k != nil {
		t.Key = store.Key{Cluster: k.Cluster, Namespace: k.Namespace, Name: k.Name}
	}
	for _, p := range r.Pending {
		t.Pending = append(t.Pending, store.PendingDecision{RecommendationID: p.RecommendationId, Time: fromTime(p.Time),
			CurrentReplicas: p.CurrentReplicas, DesiredReplicas: p.DesiredReplicas})
	}
	if ld := r.LastDecision; ld != nil {
		if ld.ConditionsAsState && len(ld.Conditions) > 0 {
			return nil, fmt.Errorf("decode target %s: lastDecision has both conditions and conditionsAsState", t.Key)
		}
		t.LastDecision = d.decision(ld)
		if ld.ConditionsAsState {
			t.LastDecision.Decision.Conditions = slices.Clone(t.State.Conditions)
		}
	}
	fromDecisionLog(r, t)
	if d.err != nil {
		return nil, fmt.Errorf("decode target %s: %w", t.Key, d.err)
	}
	return t, nil
}

// fromTime is the instant in UTC; nil is the zero time.
func fromTime(t *pb.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return time.Unix(t.Seconds, int64(t.Nanos)).UTC()
}

// decoder keeps the first quantity parse error so the conversion code stays linear.
type decoder struct{ err error }

func (d *decoder) qty(s *string) *resource.Quantity {
	if s == nil {
		return nil
	}
	q, err := resource.ParseQuantity(*s)
	if err != nil && d.err == nil {
		d.err = fmt.Errorf("quantity %q: %w", *s, err)
	}
	return &q
}

func fromRef(r *pb.ObjectReference) recommender.ObjectReference {
	return recommender.ObjectReference{APIVersion: r.GetApiVersion(), Kind: r.GetKind(), Name: r.GetName()}
}

func fromMetricID(m *pb.MetricIdentifier) recommender.MetricIdentifier {
	out := recommender.MetricIdentifier{Name: m.GetName()}
	if s := m.GetSelector(); s != nil {
		out.Selector = &recommender.LabelSelector{}
		if len(s.MatchLabels) > 0 {
			out.Selector.MatchLabels = make(map[string]string, len(s.MatchLabels))
			for _, l := range s.MatchLabels {
				out.Selector.MatchLabels[l.Key] = l.Value
			}
		}
		for _, e := range s.MatchExpressions {
			out.Selector.MatchExpressions = append(out.Selector.MatchExpressions,
				recommender.LabelSelectorRequirement{Key: e.Key, Operator: e.Operator, Values: e.Values})
		}
	}
	return out
}

func (d *decoder) target(t *pb.MetricTarget) recommender.MetricTarget {
	if t == nil {
		return recommender.MetricTarget{}
	}
	return recommender.MetricTarget{Type: t.Type, Value: d.qty(t.Value), AverageValue: d.qty(t.AverageValue),
		AverageUtilization: t.AverageUtilization}
}

func (d *decoder) rules(r *pb.ScalingRules) *recommender.ScalingRules {
	if r == nil {
		return nil
	}
	out := &recommender.ScalingRules{StabilizationWindowSeconds: r.StabilizationWindowSeconds,
		SelectPolicy: r.SelectPolicy, Tolerance: d.qty(r.Tolerance)}
	for _, p := range r.Policies {
		out.Policies = append(out.Policies, recommender.ScalingPolicy{Type: p.Type, Value: p.Value, PeriodSeconds: p.PeriodSeconds})
	}
	return out
}

func (d *decoder) spec(s *pb.Spec) recommender.Spec {
	if s == nil {
		return recommender.Spec{}
	}
	out := recommender.Spec{ScaleTargetRef: fromRef(s.ScaleTargetRef), MinReplicas: s.MinReplicas, MaxReplicas: s.MaxReplicas}
	for _, m := range s.Metrics {
		e := recommender.MetricSpec{Type: m.Type}
		if x := m.Resource; x != nil {
			e.Resource = &recommender.ResourceMetricSource{Name: x.Name, Target: d.target(x.Target)}
		}
		if x := m.ContainerResource; x != nil {
			e.ContainerResource = &recommender.ContainerResourceMetricSource{Name: x.Name, Container: x.Container,
				Target: d.target(x.Target)}
		}
		if x := m.Pods; x != nil {
			e.Pods = &recommender.PodsMetricSource{Metric: fromMetricID(x.Metric), Target: d.target(x.Target)}
		}
		if x := m.Object; x != nil {
			e.Object = &recommender.ObjectMetricSource{DescribedObject: fromRef(x.DescribedObject),
				Metric: fromMetricID(x.Metric), Target: d.target(x.Target)}
		}
		if x := m.External; x != nil {
			e.External = &recommender.ExternalMetricSource{Metric: fromMetricID(x.Metric), Target: d.target(x.Target)}
		}
		out.Metrics = append(out.Metrics, e)
	}
	if b := s.Behavior; b != nil {
		out.Behavior = &recommender.Behavior{ScaleUp: d.rules(b.ScaleUp), ScaleDown: d.rules(b.ScaleDown)}
	}
	return out
}

func fromConditions(cs []*pb.Condition) []recommender.Condition {
	var out []recommender.Condition
	for _, c := range cs {
		out = append(out, recommender.Condition{Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message,
			LastTransitionTime: fromTime(c.LastTransitionTime)})
	}
	return out
}

func fromEvents(es []*pb.ScaleEvent) []recommender.ScaleEvent {
	var out []recommender.ScaleEvent
	for _, e := range es {
		out = append(out, recommender.ScaleEvent{Time: fromTime(e.Time), Change: e.Change})
	}
	return out
}

func fromState(s *pb.State) recommender.State {
	if s == nil {
		return recommender.State{}
	}
	out := recommender.State{Seeded: s.Seeded, Conditions: fromConditions(s.Conditions)}
	for _, r := range s.Recommendations {
		out.History.Recommendations = append(out.History.Recommendations,
			recommender.Recommendation{Time: fromTime(r.Time), Replicas: r.Replicas})
	}
	out.History.ScaleUpEvents = fromEvents(s.ScaleUpEvents)
	out.History.ScaleDownEvents = fromEvents(s.ScaleDownEvents)
	return out
}

func (d *decoder) value(v *pb.MetricValueStatus) recommender.MetricValueStatus {
	if v == nil {
		return recommender.MetricValueStatus{}
	}
	return recommender.MetricValueStatus{Value: d.qty(v.Value), AverageValue: d.qty(v.AverageValue),
		AverageUtilization: v.AverageUtilization}
}

func (d *decoder) decision(ld *pb.LastDecision) *store.LastDecision {
	out := &store.LastDecision{RecommendationID: ld.RecommendationId, Decision: recommender.Decision{
		Time: fromTime(ld.Time), CurrentReplicas: ld.CurrentReplicas, DesiredReplicas: ld.DesiredReplicas,
		Conditions: fromConditions(ld.Conditions),
	}}
	dec := &out.Decision
	for _, m := range ld.CurrentMetrics {
		e := recommender.MetricStatus{Type: m.Type}
		if x := m.Resource; x != nil {
			e.Resource = &recommender.ResourceMetricStatus{Name: x.Name, Current: d.value(x.Current)}
		}
		if x := m.ContainerResource; x != nil {
			e.ContainerResource = &recommender.ContainerResourceMetricStatus{Name: x.Name, Container: x.Container,
				Current: d.value(x.Current)}
		}
		if x := m.Pods; x != nil {
			e.Pods = &recommender.PodsMetricStatus{Metric: fromMetricID(x.Metric), Current: d.value(x.Current)}
		}
		if x := m.Object; x != nil {
			e.Object = &recommender.ObjectMetricStatus{Metric: fromMetricID(x.Metric), Current: d.value(x.Current),
				DescribedObject: fromRef(x.DescribedObject)}
		}
		if x := m.External; x != nil {
			e.External = &recommender.ExternalMetricStatus{Metric: fromMetricID(x.Metric), Current: d.value(x.Current)}
		}
		dec.CurrentMetrics = append(dec.CurrentMetrics, e)
	}
	if x := ld.Explanation; x != nil {
		dec.Explanation = recommender.Explanation{Message: x.Message, WinningMetric: x.WinningMetric,
			Proposal: x.Proposal, Stabilized: x.Stabilized, StabilizationWindow: time.Duration(x.StabilizationWindowNanos),
			Limited: x.Limited, LimitingPolicy: x.LimitingPolicy, Final: x.Final, LimitReason: x.LimitReason}
		for _, m := range x.Metrics {
			dec.Explanation.Metrics = append(dec.Explanation.Metrics, recommender.MetricExplanation{Index: m.Index,
				Name: m.Name, Proposal: m.Proposal, UsageRatio: m.UsageRatio, ReadyPods: m.ReadyPods,
				IgnoredPods: m.IgnoredPods, MissingPods: m.MissingPods, UnreadyPods: m.UnreadyPods, Error: m.Error})
		}
	}
	return out
}
