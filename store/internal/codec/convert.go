package codec

import (
	"fmt"
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
//
// toRecord shares nothing with its input but strings (immutable), so that fromRecord of its
// result is a target of its own: what decoding the record's bytes gives, without decoding
// them (MarshalNormalized).

// msgs hands out the messages of one record from a slice per kind, growing by doubling,
// instead of allocating each: a record holds dozens of small messages (times above all), and
// their allocations were a tenth of a decision's at 100,000 targets, where nearly every
// decision encodes its record in full. A message taken from it lives as long as the record.
type msgs struct {
	times   []pb.Time
	conds   []pb.Condition
	scales  []pb.ScaleEvent
	values  []pb.MetricValueStatus
	ids     []pb.MetricIdentifier
	targets []pb.MetricTarget
	strs    []string
}

// take returns the next element of *s, zero, growing *s to a new array when it is full; the
// elements already handed out stay where they are.
func take[T any](s *[]T) *T {
	if len(*s) == cap(*s) {
		*s = make([]T, 0, max(4, 2*cap(*s)))
	}
	*s = (*s)[:len(*s)+1]
	return &(*s)[len(*s)-1]
}

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
	h := &t.State.History
	a := &msgs{times: make([]pb.Time, 0, 3+len(t.Pending)+2*len(t.State.Conditions)+len(h.Recommendations)+
		len(h.ScaleUpEvents)+len(h.ScaleDownEvents))}
	r := &pb.Record{
		LastSeen:  a.time(t.LastSeen),
		FirstSeen: a.time(t.FirstSeen),
		Key:       &pb.Key{Cluster: t.Key.Cluster, Namespace: t.Key.Namespace, Name: t.Key.Name},
		Spec:      a.spec(&t.Spec),
		State:     a.state(&t.State),
		Reported:  cloneOrNil(t.Reported),
	}
	if len(t.Pending) > 0 {
		r.Pending = make([]*pb.PendingDecision, len(t.Pending))
		ps := make([]pb.PendingDecision, len(t.Pending))
		for i, p := range t.Pending {
			ps[i] = pb.PendingDecision{RecommendationId: p.RecommendationID, Time: a.time(p.Time),
				CurrentReplicas: p.CurrentReplicas, DesiredReplicas: p.DesiredReplicas}
			r.Pending[i] = &ps[i]
		}
	}
	if ld := t.LastDecision; ld != nil {
		r.LastDecision = a.decision(ld, t.State.Conditions)
	}
	return r
}

func (a *msgs) time(t time.Time) *pb.Time {
	if t.IsZero() {
		return nil
	}
	m := take(&a.times)
	*m = pb.Time{Seconds: t.Unix(), Nanos: int32(t.Nanosecond())}
	return m
}

func (a *msgs) qty(q *resource.Quantity) *string {
	if q == nil {
		return nil
	}
	s := take(&a.strs)
	*s = q.String()
	return s
}

func toRef(r recommender.ObjectReference) *pb.ObjectReference {
	return &pb.ObjectReference{ApiVersion: r.APIVersion, Kind: r.Kind, Name: r.Name}
}

func (a *msgs) metricID(m recommender.MetricIdentifier) *pb.MetricIdentifier {
	out := take(&a.ids)
	*out = pb.MetricIdentifier{Name: m.Name}
	if s := m.Selector; s != nil {
		out.Selector = &pb.LabelSelector{}
		var buf [8]string // a selector's keys, sorted, without allocating for the usual few
		keys := buf[:0]
		for k := range s.MatchLabels {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if len(keys) > 0 {
			out.Selector.MatchLabels = make([]*pb.Label, len(keys))
			labels := make([]pb.Label, len(keys))
			for i, k := range keys {
				labels[i] = pb.Label{Key: k, Value: s.MatchLabels[k]}
				out.Selector.MatchLabels[i] = &labels[i]
			}
		}
		for _, e := range s.MatchExpressions {
			out.Selector.MatchExpressions = append(out.Selector.MatchExpressions,
				&pb.LabelSelectorRequirement{Key: e.Key, Operator: e.Operator, Values: cloneOrNil(e.Values)})
		}
	}
	return out
}

func (a *msgs) target(t recommender.MetricTarget) *pb.MetricTarget {
	m := take(&a.targets)
	*m = pb.MetricTarget{Type: t.Type, Value: a.qty(t.Value), AverageValue: a.qty(t.AverageValue),
		AverageUtilization: clonePtr(t.AverageUtilization)}
	return m
}

func (a *msgs) rules(r *recommender.ScalingRules) *pb.ScalingRules {
	if r == nil {
		return nil
	}
	out := &pb.ScalingRules{StabilizationWindowSeconds: clonePtr(r.StabilizationWindowSeconds),
		SelectPolicy: clonePtr(r.SelectPolicy), Tolerance: a.qty(r.Tolerance)}
	if len(r.Policies) > 0 {
		out.Policies = make([]*pb.ScalingPolicy, len(r.Policies))
		ps := make([]pb.ScalingPolicy, len(r.Policies))
		for i, p := range r.Policies {
			ps[i] = pb.ScalingPolicy{Type: p.Type, Value: p.Value, PeriodSeconds: p.PeriodSeconds}
			out.Policies[i] = &ps[i]
		}
	}
	return out
}

func (a *msgs) spec(s *recommender.Spec) *pb.Spec {
	out := &pb.Spec{ScaleTargetRef: toRef(s.ScaleTargetRef), MinReplicas: clonePtr(s.MinReplicas), MaxReplicas: s.MaxReplicas}
	if len(s.Metrics) > 0 {
		out.Metrics = make([]*pb.MetricSpec, len(s.Metrics))
		ms := make([]pb.MetricSpec, len(s.Metrics))
		for i, m := range s.Metrics {
			e := &ms[i]
			e.Type = m.Type
			if x := m.Resource; x != nil {
				e.Resource = &pb.ResourceMetricSource{Name: x.Name, Target: a.target(x.Target)}
			}
			if x := m.ContainerResource; x != nil {
				e.ContainerResource = &pb.ContainerResourceMetricSource{Name: x.Name, Container: x.Container, Target: a.target(x.Target)}
			}
			if x := m.Pods; x != nil {
				e.Pods = &pb.PodsMetricSource{Metric: a.metricID(x.Metric), Target: a.target(x.Target)}
			}
			if x := m.Object; x != nil {
				e.Object = &pb.ObjectMetricSource{DescribedObject: toRef(x.DescribedObject), Metric: a.metricID(x.Metric),
					Target: a.target(x.Target)}
			}
			if x := m.External; x != nil {
				e.External = &pb.ExternalMetricSource{Metric: a.metricID(x.Metric), Target: a.target(x.Target)}
			}
			out.Metrics[i] = e
		}
	}
	if b := s.Behavior; b != nil {
		out.Behavior = &pb.Behavior{ScaleUp: a.rules(b.ScaleUp), ScaleDown: a.rules(b.ScaleDown)}
	}
	return out
}

func (a *msgs) conditions(cs []recommender.Condition) []*pb.Condition {
	if len(cs) == 0 {
		return nil
	}
	out := make([]*pb.Condition, len(cs))
	for i, c := range cs {
		m := take(&a.conds)
		*m = pb.Condition{Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message,
			LastTransitionTime: a.time(c.LastTransitionTime)}
		out[i] = m
	}
	return out
}

func (a *msgs) events(es []recommender.ScaleEvent) []*pb.ScaleEvent {
	if len(es) == 0 {
		return nil
	}
	out := make([]*pb.ScaleEvent, len(es))
	for i, e := range es {
		m := take(&a.scales)
		*m = pb.ScaleEvent{Time: a.time(e.Time), Change: e.Change}
		out[i] = m
	}
	return out
}

func (a *msgs) state(s *recommender.State) *pb.State {
	a.conds = make([]pb.Condition, 0, 2*len(s.Conditions))
	a.scales = make([]pb.ScaleEvent, 0, len(s.History.ScaleUpEvents)+len(s.History.ScaleDownEvents))
	out := &pb.State{Seeded: s.Seeded, Conditions: a.conditions(s.Conditions),
		ScaleUpEvents: a.events(s.History.ScaleUpEvents), ScaleDownEvents: a.events(s.History.ScaleDownEvents)}
	if rs := s.History.Recommendations; len(rs) > 0 {
		out.Recommendations = make([]*pb.Recommendation, len(rs))
		ms := make([]pb.Recommendation, len(rs))
		for i, r := range rs {
			ms[i] = pb.Recommendation{Time: a.time(r.Time), Replicas: r.Replicas}
			out.Recommendations[i] = &ms[i]
		}
	}
	return out
}

func (a *msgs) value(v recommender.MetricValueStatus) *pb.MetricValueStatus {
	m := take(&a.values)
	*m = pb.MetricValueStatus{Value: a.qty(v.Value), AverageValue: a.qty(v.AverageValue),
		AverageUtilization: clonePtr(v.AverageUtilization)}
	return m
}

// decision converts ld; conditions equal to the state's (the usual case) are written as
// conditions_as_state instead of a second copy.
func (a *msgs) decision(ld *store.LastDecision, state []recommender.Condition) *pb.LastDecision {
	d := &ld.Decision
	out := &pb.LastDecision{RecommendationId: ld.RecommendationID, Time: a.time(d.Time),
		CurrentReplicas: d.CurrentReplicas, DesiredReplicas: d.DesiredReplicas}
	if len(d.Conditions) > 0 && slices.EqualFunc(d.Conditions, state, sameCondition) {
		out.ConditionsAsState = true
	} else {
		out.Conditions = a.conditions(d.Conditions)
	}
	if len(d.CurrentMetrics) > 0 {
		out.CurrentMetrics = make([]*pb.MetricStatus, len(d.CurrentMetrics))
		ms := make([]pb.MetricStatus, len(d.CurrentMetrics))
		for i, m := range d.CurrentMetrics {
			e := &ms[i]
			e.Type = m.Type
			if x := m.Resource; x != nil {
				e.Resource = &pb.ResourceMetricStatus{Name: x.Name, Current: a.value(x.Current)}
			}
			if x := m.ContainerResource; x != nil {
				e.ContainerResource = &pb.ContainerResourceMetricStatus{Name: x.Name, Container: x.Container, Current: a.value(x.Current)}
			}
			if x := m.Pods; x != nil {
				e.Pods = &pb.PodsMetricStatus{Metric: a.metricID(x.Metric), Current: a.value(x.Current)}
			}
			if x := m.Object; x != nil {
				e.Object = &pb.ObjectMetricStatus{Metric: a.metricID(x.Metric), Current: a.value(x.Current),
					DescribedObject: toRef(x.DescribedObject)}
			}
			if x := m.External; x != nil {
				e.External = &pb.ExternalMetricStatus{Metric: a.metricID(x.Metric), Current: a.value(x.Current)}
			}
			out.CurrentMetrics[i] = e
		}
	}
	x := &d.Explanation
	out.Explanation = &pb.Explanation{Message: x.Message, WinningMetric: x.WinningMetric, Proposal: x.Proposal,
		Stabilized: x.Stabilized, StabilizationWindowNanos: int64(x.StabilizationWindow), Limited: x.Limited,
		LimitingPolicy: x.LimitingPolicy, Final: x.Final, LimitReason: x.LimitReason}
	if len(x.Metrics) > 0 {
		out.Explanation.Metrics = make([]*pb.MetricExplanation, len(x.Metrics))
		ms := make([]pb.MetricExplanation, len(x.Metrics))
		for i, m := range x.Metrics {
			ms[i] = pb.MetricExplanation{Index: m.Index, Name: m.Name,
				Proposal: m.Proposal, UsageRatio: m.UsageRatio, ReadyPods: m.ReadyPods, IgnoredPods: m.IgnoredPods,
				MissingPods: m.MissingPods, UnreadyPods: m.UnreadyPods, Error: m.Error}
			out.Explanation.Metrics[i] = &ms[i]
		}
	}
	return out
}

// sameCondition reports whether two conditions are stored alike (times as the same instant).
func sameCondition(a, b recommender.Condition) bool {
	return a.Type == b.Type && a.Status == b.Status && a.Reason == b.Reason && a.Message == b.Message &&
		a.LastTransitionTime.Equal(b.LastTransitionTime)
}

// grow returns s (nil) with room for n elements, still nil when n is 0: empty lists decode as
// nil.
func grow[T any](s []T, n int) []T {
	if n == 0 {
		return s
	}
	return make([]T, 0, n)
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
	t.Pending = grow(t.Pending, len(r.Pending))
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
		out.Selector.MatchExpressions = grow(out.Selector.MatchExpressions, len(s.MatchExpressions))
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
	out.Policies = grow(out.Policies, len(r.Policies))
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
	out.Metrics = grow(out.Metrics, len(s.Metrics))
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
	out := grow([]recommender.Condition(nil), len(cs))
	for _, c := range cs {
		out = append(out, recommender.Condition{Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message,
			LastTransitionTime: fromTime(c.LastTransitionTime)})
	}
	return out
}

func fromEvents(es []*pb.ScaleEvent) []recommender.ScaleEvent {
	out := grow([]recommender.ScaleEvent(nil), len(es))
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
	out.History.Recommendations = grow(out.History.Recommendations, len(s.Recommendations))
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
	dec.CurrentMetrics = grow(dec.CurrentMetrics, len(ld.CurrentMetrics))
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
		dec.Explanation.Metrics = grow(dec.Explanation.Metrics, len(x.Metrics))
		for _, m := range x.Metrics {
			dec.Explanation.Metrics = append(dec.Explanation.Metrics, recommender.MetricExplanation{Index: m.Index,
				Name: m.Name, Proposal: m.Proposal, UsageRatio: m.UsageRatio, ReadyPods: m.ReadyPods,
				IgnoredPods: m.IgnoredPods, MissingPods: m.MissingPods, UnreadyPods: m.UnreadyPods, Error: m.Error})
		}
	}
	return out
}
