package codec

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/hpa-recommender/hpa-recommender/recommender"
	"github.com/hpa-recommender/hpa-recommender/store"
)

// Legacy record formats 1 and 2: JSON, which the etcd store wrote until format 4 (and the bbolt
// store before format 3). They are read only by Upgrade, never written. Times are RFC 3339 in UTC; quantities their canonical text;
// durations nanoseconds; NaN and infinities quoted. The formats differ in one member:
//
//   - Version 1: lastDecision.conditions holds the decision's conditions.
//   - Version 2: lastDecision may instead hold "conditionsAsState":true, standing for a copy
//     of state.conditions (both at once is refused).
//
// Each record opens with {"v":N, then "rev":R, when it carries a revision (bbolt's).

// oldestJSONVersion and newestJSONVersion bound the JSON record versions read.
const (
	oldestJSONVersion = 1
	newestJSONVersion = 2
)

type recordV1 struct {
	V            int         `json:"v"`
	Revision     int64       `json:"rev,omitempty"`
	Key          keyV1       `json:"key"`
	Spec         specV1      `json:"spec"`
	State        stateV1     `json:"state"`
	Pending      []pendingV1 `json:"pending,omitempty"`
	Reported     []string    `json:"reported,omitempty"`
	LastDecision *lastDecV1  `json:"lastDecision,omitempty"`
	LastSeen     time.Time   `json:"lastSeen"`
}

type keyV1 struct {
	Cluster   string `json:"cluster"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

type specV1 struct {
	ScaleTargetRef objRefV1    `json:"scaleTargetRef"`
	MinReplicas    *int32      `json:"minReplicas,omitempty"`
	MaxReplicas    int32       `json:"maxReplicas"`
	Metrics        []metricV1  `json:"metrics,omitempty"`
	Behavior       *behaviorV1 `json:"behavior,omitempty"`
}

type objRefV1 struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
	Name       string `json:"name,omitempty"`
}

type metricV1 struct {
	Type              string         `json:"type"`
	Resource          *resSrcV1      `json:"resource,omitempty"`
	ContainerResource *contResSrcV1  `json:"containerResource,omitempty"`
	Pods              *podsSrcV1     `json:"pods,omitempty"`
	Object            *objectSrcV1   `json:"object,omitempty"`
	External          *externalSrcV1 `json:"external,omitempty"`
}

type resSrcV1 struct {
	Name   string         `json:"name"`
	Target metricTargetV1 `json:"target"`
}

type contResSrcV1 struct {
	Name      string         `json:"name"`
	Container string         `json:"container"`
	Target    metricTargetV1 `json:"target"`
}

type podsSrcV1 struct {
	Metric metricIDV1     `json:"metric"`
	Target metricTargetV1 `json:"target"`
}

type objectSrcV1 struct {
	DescribedObject objRefV1       `json:"describedObject"`
	Metric          metricIDV1     `json:"metric"`
	Target          metricTargetV1 `json:"target"`
}

type externalSrcV1 struct {
	Metric metricIDV1     `json:"metric"`
	Target metricTargetV1 `json:"target"`
}

type metricIDV1 struct {
	Name     string      `json:"name"`
	Selector *selectorV1 `json:"selector,omitempty"`
}

type selectorV1 struct {
	MatchLabels      map[string]string `json:"matchLabels,omitempty"`
	MatchExpressions []selectorReqV1   `json:"matchExpressions,omitempty"`
}

type selectorReqV1 struct {
	Key      string   `json:"key"`
	Operator string   `json:"operator"`
	Values   []string `json:"values,omitempty"`
}

type metricTargetV1 struct {
	Type               string  `json:"type"`
	Value              *string `json:"value,omitempty"`
	AverageValue       *string `json:"averageValue,omitempty"`
	AverageUtilization *int32  `json:"averageUtilization,omitempty"`
}

type behaviorV1 struct {
	ScaleUp   *rulesV1 `json:"scaleUp,omitempty"`
	ScaleDown *rulesV1 `json:"scaleDown,omitempty"`
}

type rulesV1 struct {
	StabilizationWindowSeconds *int32     `json:"stabilizationWindowSeconds,omitempty"`
	SelectPolicy               *string    `json:"selectPolicy,omitempty"`
	Policies                   []policyV1 `json:"policies,omitempty"`
	Tolerance                  *string    `json:"tolerance,omitempty"`
}

type policyV1 struct {
	Type          string `json:"type"`
	Value         int32  `json:"value"`
	PeriodSeconds int32  `json:"periodSeconds"`
}

type stateV1 struct {
	Seeded     bool          `json:"seeded,omitempty"`
	History    historyV1     `json:"history"`
	Conditions []conditionV1 `json:"conditions,omitempty"`
}

type historyV1 struct {
	Recommendations []recommendationV1 `json:"recommendations,omitempty"`
	ScaleUpEvents   []scaleEventV1     `json:"scaleUpEvents,omitempty"`
	ScaleDownEvents []scaleEventV1     `json:"scaleDownEvents,omitempty"`
}

type recommendationV1 struct {
	Time     time.Time `json:"time"`
	Replicas int32     `json:"replicas"`
}

type scaleEventV1 struct {
	Time   time.Time `json:"time"`
	Change int32     `json:"change"`
}

type conditionV1 struct {
	Type               string    `json:"type"`
	Status             string    `json:"status"`
	Reason             string    `json:"reason,omitempty"`
	Message            string    `json:"message,omitempty"`
	LastTransitionTime time.Time `json:"lastTransitionTime"`
}

type pendingV1 struct {
	RecommendationID string    `json:"recommendationId"`
	Time             time.Time `json:"time"`
	CurrentReplicas  int32     `json:"currentReplicas"`
	DesiredReplicas  int32     `json:"desiredReplicas"`
}

type lastDecV1 struct {
	RecommendationID string        `json:"recommendationId,omitempty"`
	Time             time.Time     `json:"time"`
	CurrentReplicas  int32         `json:"currentReplicas"`
	DesiredReplicas  int32         `json:"desiredReplicas"`
	CurrentMetrics   []metricStV1  `json:"currentMetrics,omitempty"`
	Conditions       []conditionV1 `json:"conditions,omitempty"`
	// ConditionsAsState (version 2) stands for Conditions equal to the state's, not written.
	ConditionsAsState bool          `json:"conditionsAsState,omitempty"`
	Explanation       explanationV1 `json:"explanation"`
}

type metricStV1 struct {
	Type              string        `json:"type,omitempty"`
	Resource          *resStV1      `json:"resource,omitempty"`
	ContainerResource *contResStV1  `json:"containerResource,omitempty"`
	Pods              *podsStV1     `json:"pods,omitempty"`
	Object            *objectStV1   `json:"object,omitempty"`
	External          *externalStV1 `json:"external,omitempty"`
}

type valueStV1 struct {
	Value              *string `json:"value,omitempty"`
	AverageValue       *string `json:"averageValue,omitempty"`
	AverageUtilization *int32  `json:"averageUtilization,omitempty"`
}

type resStV1 struct {
	Name    string    `json:"name"`
	Current valueStV1 `json:"current"`
}

type contResStV1 struct {
	Name      string    `json:"name"`
	Container string    `json:"container"`
	Current   valueStV1 `json:"current"`
}

type podsStV1 struct {
	Metric  metricIDV1 `json:"metric"`
	Current valueStV1  `json:"current"`
}

type objectStV1 struct {
	Metric          metricIDV1 `json:"metric"`
	Current         valueStV1  `json:"current"`
	DescribedObject objRefV1   `json:"describedObject"`
}

type externalStV1 struct {
	Metric  metricIDV1 `json:"metric"`
	Current valueStV1  `json:"current"`
}

type explanationV1 struct {
	Message             string         `json:"message,omitempty"`
	Metrics             []metricExplV1 `json:"metrics,omitempty"`
	WinningMetric       int32          `json:"winningMetric"`
	Proposal            int32          `json:"proposal"`
	Stabilized          int32          `json:"stabilized"`
	StabilizationWindow time.Duration  `json:"stabilizationWindowNanos,omitempty"`
	Limited             int32          `json:"limited"`
	LimitingPolicy      string         `json:"limitingPolicy,omitempty"`
	Final               int32          `json:"final"`
	LimitReason         string         `json:"limitReason,omitempty"`
}

type metricExplV1 struct {
	Index       int32  `json:"index"`
	Name        string `json:"name,omitempty"`
	Proposal    int32  `json:"proposal"`
	UsageRatio  float  `json:"usageRatio"`
	ReadyPods   int32  `json:"readyPods"`
	IgnoredPods int32  `json:"ignoredPods"`
	MissingPods int32  `json:"missingPods"`
	UnreadyPods int32  `json:"unreadyPods"`
	Error       string `json:"error,omitempty"`
}

// unmarshalJSON decodes a legacy JSON record.
func unmarshalJSON(b []byte) (*store.Target, int64, error) {
	var r recordV1
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, 0, fmt.Errorf("decode target record: %w", err)
	}
	if err := checkVersion(r.V); err != nil {
		return nil, 0, err
	}
	t, err := decRecord(&r)
	if err != nil {
		return nil, 0, err
	}
	return t, r.Revision, nil
}

// checkVersion refuses a JSON record version this binary does not read.
func checkVersion(v int) error {
	if v < oldestJSONVersion || v > newestJSONVersion {
		return fmt.Errorf("decode target record: unsupported record version %d (this binary reads %d to %d, and %d)",
			v, oldestJSONVersion, newestJSONVersion, formatProto)
	}
	return nil
}

// decRecord converts a JSON record to the domain types.
func decRecord(r *recordV1) (*store.Target, error) {
	key := store.Key{Cluster: r.Key.Cluster, Namespace: r.Key.Namespace, Name: r.Key.Name}
	if ld := r.LastDecision; ld != nil && ld.ConditionsAsState {
		switch {
		case r.V < 2:
			return nil, fmt.Errorf("decode target %s: lastDecision.conditionsAsState in a record of version %d, which has no such member", key, r.V)
		case len(ld.Conditions) > 0:
			return nil, fmt.Errorf("decode target %s: %w", key, errors.New("lastDecision has both conditions and conditionsAsState"))
		}
	}
	d := jsonDecoder{}
	t := &store.Target{Key: key, Spec: d.spec(&r.Spec), State: d.state(&r.State), Reported: r.Reported,
		LastSeen: r.LastSeen.UTC(), Revision: r.Revision}
	for _, p := range r.Pending {
		t.Pending = append(t.Pending, store.PendingDecision{
			RecommendationID: p.RecommendationID, Time: p.Time.UTC(),
			CurrentReplicas: p.CurrentReplicas, DesiredReplicas: p.DesiredReplicas,
		})
	}
	if r.LastDecision != nil {
		t.LastDecision = d.decision(r.LastDecision)
		if r.LastDecision.ConditionsAsState {
			t.LastDecision.Decision.Conditions = slices.Clone(t.State.Conditions)
		}
	}
	if d.err != nil {
		return nil, fmt.Errorf("decode target %s: %w", t.Key, d.err)
	}
	return t, nil
}

// jsonDecoder keeps the first quantity parse error so the conversion code stays linear.
type jsonDecoder struct{ err error }

func (d *jsonDecoder) qty(s *string) *resource.Quantity {
	if s == nil {
		return nil
	}
	q, err := resource.ParseQuantity(*s)
	if err != nil && d.err == nil {
		d.err = fmt.Errorf("quantity %q: %w", *s, err)
	}
	return &q
}

func decRef(r objRefV1) recommender.ObjectReference {
	return recommender.ObjectReference{APIVersion: r.APIVersion, Kind: r.Kind, Name: r.Name}
}

func decMetricID(m metricIDV1) recommender.MetricIdentifier {
	out := recommender.MetricIdentifier{Name: m.Name}
	if s := m.Selector; s != nil {
		out.Selector = &recommender.LabelSelector{MatchLabels: s.MatchLabels}
		for _, e := range s.MatchExpressions {
			out.Selector.MatchExpressions = append(out.Selector.MatchExpressions,
				recommender.LabelSelectorRequirement{Key: e.Key, Operator: e.Operator, Values: e.Values})
		}
	}
	return out
}

func (d *jsonDecoder) target(t metricTargetV1) recommender.MetricTarget {
	return recommender.MetricTarget{Type: t.Type, Value: d.qty(t.Value), AverageValue: d.qty(t.AverageValue),
		AverageUtilization: t.AverageUtilization}
}

func (d *jsonDecoder) rules(r *rulesV1) *recommender.ScalingRules {
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

func (d *jsonDecoder) spec(s *specV1) recommender.Spec {
	out := recommender.Spec{ScaleTargetRef: decRef(s.ScaleTargetRef), MinReplicas: s.MinReplicas, MaxReplicas: s.MaxReplicas}
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
			e.Pods = &recommender.PodsMetricSource{Metric: decMetricID(x.Metric), Target: d.target(x.Target)}
		}
		if x := m.Object; x != nil {
			e.Object = &recommender.ObjectMetricSource{DescribedObject: decRef(x.DescribedObject),
				Metric: decMetricID(x.Metric), Target: d.target(x.Target)}
		}
		if x := m.External; x != nil {
			e.External = &recommender.ExternalMetricSource{Metric: decMetricID(x.Metric), Target: d.target(x.Target)}
		}
		out.Metrics = append(out.Metrics, e)
	}
	if b := s.Behavior; b != nil {
		out.Behavior = &recommender.Behavior{ScaleUp: d.rules(b.ScaleUp), ScaleDown: d.rules(b.ScaleDown)}
	}
	return out
}

func decConditions(cs []conditionV1) []recommender.Condition {
	var out []recommender.Condition
	for _, c := range cs {
		out = append(out, recommender.Condition{Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message,
			LastTransitionTime: c.LastTransitionTime})
	}
	return out
}

func decEvents(es []scaleEventV1) []recommender.ScaleEvent {
	var out []recommender.ScaleEvent
	for _, e := range es {
		out = append(out, recommender.ScaleEvent{Time: e.Time, Change: e.Change})
	}
	return out
}

func (d *jsonDecoder) state(s *stateV1) recommender.State {
	out := recommender.State{Seeded: s.Seeded, Conditions: decConditions(s.Conditions)}
	for _, r := range s.History.Recommendations {
		out.History.Recommendations = append(out.History.Recommendations,
			recommender.Recommendation{Time: r.Time, Replicas: r.Replicas})
	}
	out.History.ScaleUpEvents = decEvents(s.History.ScaleUpEvents)
	out.History.ScaleDownEvents = decEvents(s.History.ScaleDownEvents)
	return out
}

func (d *jsonDecoder) value(v valueStV1) recommender.MetricValueStatus {
	return recommender.MetricValueStatus{Value: d.qty(v.Value), AverageValue: d.qty(v.AverageValue),
		AverageUtilization: v.AverageUtilization}
}

func (d *jsonDecoder) decision(ld *lastDecV1) *store.LastDecision {
	out := &store.LastDecision{RecommendationID: ld.RecommendationID, Decision: recommender.Decision{
		Time: ld.Time, CurrentReplicas: ld.CurrentReplicas, DesiredReplicas: ld.DesiredReplicas,
		Conditions: decConditions(ld.Conditions),
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
			e.Pods = &recommender.PodsMetricStatus{Metric: decMetricID(x.Metric), Current: d.value(x.Current)}
		}
		if x := m.Object; x != nil {
			e.Object = &recommender.ObjectMetricStatus{Metric: decMetricID(x.Metric), Current: d.value(x.Current),
				DescribedObject: decRef(x.DescribedObject)}
		}
		if x := m.External; x != nil {
			e.External = &recommender.ExternalMetricStatus{Metric: decMetricID(x.Metric), Current: d.value(x.Current)}
		}
		dec.CurrentMetrics = append(dec.CurrentMetrics, e)
	}
	x := ld.Explanation
	dec.Explanation = recommender.Explanation{
		Message: x.Message, WinningMetric: x.WinningMetric, Proposal: x.Proposal, Stabilized: x.Stabilized,
		StabilizationWindow: x.StabilizationWindow, Limited: x.Limited, LimitingPolicy: x.LimitingPolicy,
		Final: x.Final, LimitReason: x.LimitReason,
	}
	for _, m := range x.Metrics {
		dec.Explanation.Metrics = append(dec.Explanation.Metrics, recommender.MetricExplanation{
			Index: m.Index, Name: m.Name, Proposal: m.Proposal, UsageRatio: float64(m.UsageRatio), ReadyPods: m.ReadyPods,
			IgnoredPods: m.IgnoredPods, MissingPods: m.MissingPods, UnreadyPods: m.UnreadyPods, Error: m.Error,
		})
	}
	return out
}

// float is a float64 that also reads NaN and infinities, which the JSON formats wrote as
// strings ("NaN", "+Inf", "-Inf").
type float float64

// UnmarshalJSON reads a number or one of those strings.
func (f *float) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return err
		}
		*f = float(v)
		return nil
	}
	return json.Unmarshal(b, (*float64)(f))
}
