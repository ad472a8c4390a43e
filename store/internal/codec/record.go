package codec

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	jsoniter "github.com/json-iterator/go"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/hpa-recommender/hpa-recommender/recommender"
	"github.com/hpa-recommender/hpa-recommender/store"
)

// json is encoding/json's behaviour (field order, escaping, Marshaler and Unmarshaler methods)
// at a fraction of its decode cost: records are decoded on every update of a target.
var json = jsoniter.ConfigCompatibleWithStandardLibrary

// RecordVersion is the version of the record format written by Marshal. Unmarshal reads it and
// every version from oldestRecordVersion on, and refuses any other. The record mirrors the domain
// types with explicit JSON names so that renaming a Go field in recommender cannot silently
// change the stored format.
const RecordVersion = 2

// oldestRecordVersion is the oldest record version Unmarshal reads: records stay stored in the
// format an older binary wrote them in until they are rewritten.
const oldestRecordVersion = 1

// Record format. Times are RFC 3339 with nanoseconds in UTC; quantities are their canonical
// String(); durations are nanoseconds; omitted fields are zero/absent. The types are named
// after version 1, which they describe but for one member:
//
//   - Version 1: lastDecision.conditions holds the decision's conditions; a lastDecision
//     member conditionsAsState is not part of it (Unmarshal refuses one that is true).
//   - Version 2: when the decision's conditions are not empty and encode exactly as
//     state.conditions (the usual case: the server stores a decision with the state it left,
//     which carries the same conditions), lastDecision omits conditions and holds
//     "conditionsAsState":true instead; they decode as a copy of the state's. Both members at
//     once is refused; "conditionsAsState":false is the same as its absence.
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

// Format is an encoding of records: JSON (record formats 1 and 2) or Binary (format 3). The
// package functions Marshal, MarshalNormalized, MarshalNormalizedAfter and MarshalUnrevised
// write JSON; a Format's methods of the same names write its own. Whatever the format,
// Unmarshal, Revision, LastSeen and Unrevised.Revise read it, and Normalize gives what decoding
// gives: the formats hold the same records.
type Format struct{ binary bool }

var (
	// JSON is record format 2: readable, and what the etcd and memory stores write.
	JSON = Format{}
	// Binary is record format 3 (binary.go): what the bbolt store writes.
	Binary = Format{binary: true}
)

// String is "json" or "binary".
func (f Format) String() string {
	if f.binary {
		return "binary"
	}
	return "json"
}

// Marshal encodes t (its Key included, its Revision replaced by rev; 0 omits it) as JSON.
func Marshal(t *store.Target, rev int64) ([]byte, error) { return JSON.Marshal(t, rev) }

// Marshal encodes t (its Key included, its Revision replaced by rev; 0: none) in f.
func (f Format) Marshal(t *store.Target, rev int64) ([]byte, error) {
	var out []byte
	if err := f.encode(t, rev, nil, nil, func(b, _ []byte) { out = bytes.Clone(b) }); err != nil {
		return nil, fmt.Errorf("encode target %s: %w", t.Key, err)
	}
	return out, nil
}

// MarshalNormalized is Marshal(t, 0), ready for a revision (Unrevised), and Normalize(t) at
// once, for a store that writes a record and keeps it decoded: the conversion to the record
// format, a good part of both, is done once.
//
// It also returns spec, the bytes the record holds as the value of its spec member, in a slice
// of its own, for MarshalNormalizedAfter to reuse with the normalized target's Spec; nil when
// they cannot be reused: when a quantity of the spec decoded to one whose String() is not the
// text it was written as, encoding the normalized spec would not give these bytes. (A decimal
// value with Format BinarySI, such as "62.5Ki" parsed, is written "64000", which reads back as
// "64k".)
func MarshalNormalized(t *store.Target) (u Unrevised, n *store.Target, spec []byte, err error) {
	return JSON.MarshalNormalized(t)
}

// MarshalNormalized is the package's MarshalNormalized in f.
func (f Format) MarshalNormalized(t *store.Target) (u Unrevised, n *store.Target, spec []byte, err error) {
	return f.marshalNormalized(t, nil, nil)
}

// MarshalUnrevised is MarshalNormalized's encoding alone (the same bytes), for a write whose
// decoded form nobody keeps: it skips building the normalized target.
func MarshalUnrevised(t *store.Target) (Unrevised, error) { return JSON.MarshalUnrevised(t) }

// MarshalUnrevised is the package's MarshalUnrevised in f.
func (f Format) MarshalUnrevised(t *store.Target) (Unrevised, error) {
	var u Unrevised
	if err := f.encode(t, 0, nil, nil, func(b, _ []byte) { u = unrevised(b) }); err != nil {
		return Unrevised{}, fmt.Errorf("encode target %s: %w", t.Key, err)
	}
	return u, nil
}

// marshalNormalized is MarshalNormalized with prev and prevEnc nil; with both set, it writes
// prevEnc as the spec's encoding and takes *prev as the normalized spec, which the caller found
// to stand for t's (MarshalNormalizedAfter). In JSON, t is converted to the record structs once,
// for the encoder and for the normalized target; in binary, the record is written from t
// directly and the normalized target is what decoding it gives, which costs fewer allocations
// than the structs.
func (f Format) marshalNormalized(t *store.Target, prev *recommender.Spec, prevEnc []byte) (Unrevised, *store.Target, []byte, error) {
	var r *recordV1
	if !f.binary {
		c := encRecordWithoutSpec(t, 0)
		if prev == nil {
			c.Spec = encSpec(&t.Spec)
		}
		r = &c
	}
	var u Unrevised
	spec := prevEnc
	err := f.encode(t, 0, r, prevEnc, func(b, s []byte) { // only reads t and r
		u = unrevised(b)
		if prev == nil {
			spec = bytes.Clone(s) // s is in a pooled buffer
		}
	})
	if err != nil {
		return Unrevised{}, nil, nil, fmt.Errorf("encode target %s: %w", t.Key, err)
	}
	var (
		n     *store.Target
		exact bool
	)
	if f.binary {
		n, exact, err = decodeBinarySpec(u.Bytes(), prev)
	} else {
		n, exact, err = decRecordSpec(r, prev) // takes over r's slices and maps, which nothing else holds
	}
	if err != nil {
		return Unrevised{}, nil, nil, err
	}
	if !exact {
		spec = nil
	}
	n.Revision = t.Revision
	return u, n, spec, nil
}

// Unmarshal decodes a record written by Marshal and returns it with the revision it carries.
// It never aliases b.
//
// A record exactly as Marshal writes it takes decodeFast's single pass; anything else (older
// or hand-made records, corruption) takes unmarshalSlow, which gives the same results and
// errors for every input and is what decodeFast is tested against.
func Unmarshal(b []byte) (*store.Target, int64, error) {
	if isBinary(b) {
		return unmarshalBinary(b)
	}
	if t, ok := decodeFast(b); ok {
		return t, t.Revision, nil
	}
	return unmarshalSlow(b)
}

// unmarshalSlow is Unmarshal by json-iterator and decRecord: slower, but any JSON.
func unmarshalSlow(b []byte) (*store.Target, int64, error) {
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

// unmarshalBinary is Unmarshal of a binary record.
func unmarshalBinary(b []byte) (*store.Target, int64, error) {
	t, err := decodeBinary(b)
	if err != nil {
		if errors.Is(err, errBinaryRecord) {
			err = fmt.Errorf("decode target record: %w", err)
		}
		return nil, 0, err
	}
	return t, t.Revision, nil
}

// checkVersion refuses a record version Unmarshal does not read.
func checkVersion(v int) error {
	if v < oldestRecordVersion || v > RecordVersion {
		return fmt.Errorf("decode target record: unsupported record version %d (this binary reads %d to %d)",
			v, oldestRecordVersion, RecordVersion)
	}
	return nil
}

// Normalize returns what Unmarshal(Marshal(t, t.Revision)) returns, without the JSON: a deep
// copy of t that shares nothing with it, with times in UTC without a monotonic reading, empty
// slices and maps nil, and quantities parsed from their canonical String(). Strings are taken
// as valid UTF-8 (the API's proto3 strings are), which JSON would otherwise rewrite. It is how
// a store that keeps decoded records hands out exactly what decoding would.
func Normalize(t *store.Target) (*store.Target, error) {
	r := encRecord(t, t.Revision)
	return decRecord(&r)
}

// encRecord converts t to the record format. The result shares nothing with t: Normalize
// decodes it straight back.
func encRecord(t *store.Target, rev int64) recordV1 {
	r := encRecordWithoutSpec(t, rev)
	r.Spec = encSpec(&t.Spec)
	return r
}

// encRecordWithoutSpec is encRecord but for the spec, left zero: MarshalNormalizedAfter
// reuses the previous record's.
func encRecordWithoutSpec(t *store.Target, rev int64) recordV1 {
	r := recordV1{
		V:        RecordVersion,
		Revision: rev,
		Key:      keyV1{Cluster: t.Key.Cluster, Namespace: t.Key.Namespace, Name: t.Key.Name},
		State:    encState(&t.State),
		Reported: cloneSlice(t.Reported),
		LastSeen: utc(t.LastSeen),
	}
	for _, p := range t.Pending {
		r.Pending = append(r.Pending, pendingV1{
			RecommendationID: p.RecommendationID, Time: utc(p.Time),
			CurrentReplicas: p.CurrentReplicas, DesiredReplicas: p.DesiredReplicas,
		})
	}
	if d := t.LastDecision; d != nil {
		r.LastDecision = encDecision(d, r.State.Conditions)
	}
	return r
}

// decRecord converts a record back; the result aliases r's slices and maps, but for the
// decision's conditions of a record with conditionsAsState, a copy of the state's that callers
// may change apart from them.
func decRecord(r *recordV1) (*store.Target, error) {
	t, _, err := decRecordSpec(r, nil)
	return t, err
}

// decRecordSpec is decRecord, but for a spec (when not nil) that stands for r's, which it does
// not read: the target's Spec is *spec, sharing its pointers, slices and maps. exact reports
// whether the quantities of r's spec decoded to ones whose String() is the text they were
// written as (always, with spec).
func decRecordSpec(r *recordV1, spec *recommender.Spec) (t *store.Target, exact bool, err error) {
	key := store.Key{Cluster: r.Key.Cluster, Namespace: r.Key.Namespace, Name: r.Key.Name}
	if ld := r.LastDecision; ld != nil && ld.ConditionsAsState {
		var err error
		switch {
		case r.V < 2:
			err = fmt.Errorf("lastDecision.conditionsAsState in a record of version %d, which has no such member", r.V)
		case len(ld.Conditions) > 0:
			err = errors.New("lastDecision has both conditions and conditionsAsState")
		}
		if err != nil {
			return nil, false, fmt.Errorf("decode target %s: %w", key, err)
		}
	}
	d := decoder{}
	t = &store.Target{Key: key}
	if spec != nil {
		t.Spec = *spec
	} else {
		t.Spec = d.spec(&r.Spec)
	}
	exact = !d.rewritten
	t.State = d.state(&r.State)
	t.Reported, t.LastSeen, t.Revision = r.Reported, r.LastSeen, r.Revision
	for _, p := range r.Pending {
		t.Pending = append(t.Pending, store.PendingDecision{
			RecommendationID: p.RecommendationID, Time: p.Time,
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
		return nil, false, fmt.Errorf("decode target %s: %w", t.Key, d.err)
	}
	return t, exact, nil
}

// LastSeen decodes only the version and LastSeen of a record, for TTL collection.
func LastSeen(b []byte) (time.Time, error) {
	if isBinary(b) {
		_, seen, err := binaryHeaderFields(b)
		if err != nil {
			return time.Time{}, fmt.Errorf("decode target record: %w", err)
		}
		return seen, nil
	}
	var r struct {
		V        int       `json:"v"`
		LastSeen time.Time `json:"lastSeen"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return time.Time{}, fmt.Errorf("decode target record: %w", err)
	}
	if err := checkVersion(r.V); err != nil {
		return time.Time{}, err
	}
	return r.LastSeen, nil
}

func utc(t time.Time) time.Time { return t.UTC().Round(0) }

// cloneSlice copies s; empty is nil, as omitempty makes it.
func cloneSlice[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return append([]T(nil), s...)
}

// clonePtr copies *p into a new variable.
func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func encQty(q *resource.Quantity) *string {
	if q == nil {
		return nil
	}
	s := qtyText(q)
	return &s
}

// qtyText is q.String(), the text a record holds, read from a copy: String caches the text in
// its receiver when it has none, a data race on a quantity that other goroutines read too (the
// server shares the specs it converted between requests, a store its cached records).
func qtyText(q *resource.Quantity) string {
	c := *q
	return c.String()
}

// parseQty is resource.ParseQuantity with the quantity's String() cached in it, so that reading
// its text later never writes: decoded quantities end up in records that a store shares.
func parseQty(s string) (resource.Quantity, error) {
	q, err := resource.ParseQuantity(s)
	if err == nil {
		_ = q.String()
	}
	return q, err
}

func encRef(r recommender.ObjectReference) objRefV1 {
	return objRefV1{APIVersion: r.APIVersion, Kind: r.Kind, Name: r.Name}
}

func encMetricID(m recommender.MetricIdentifier) metricIDV1 {
	out := metricIDV1{Name: m.Name}
	if s := m.Selector; s != nil {
		out.Selector = &selectorV1{}
		if len(s.MatchLabels) > 0 {
			out.Selector.MatchLabels = maps.Clone(s.MatchLabels)
		}
		for _, e := range s.MatchExpressions {
			out.Selector.MatchExpressions = append(out.Selector.MatchExpressions,
				selectorReqV1{Key: e.Key, Operator: e.Operator, Values: cloneSlice(e.Values)})
		}
	}
	return out
}

func encTarget(t recommender.MetricTarget) metricTargetV1 {
	return metricTargetV1{Type: t.Type, Value: encQty(t.Value), AverageValue: encQty(t.AverageValue),
		AverageUtilization: clonePtr(t.AverageUtilization)}
}

func encRules(r *recommender.ScalingRules) *rulesV1 {
	if r == nil {
		return nil
	}
	out := &rulesV1{StabilizationWindowSeconds: clonePtr(r.StabilizationWindowSeconds), SelectPolicy: clonePtr(r.SelectPolicy),
		Tolerance: encQty(r.Tolerance)}
	for _, p := range r.Policies {
		out.Policies = append(out.Policies, policyV1{Type: p.Type, Value: p.Value, PeriodSeconds: p.PeriodSeconds})
	}
	return out
}

func encSpec(s *recommender.Spec) specV1 {
	out := specV1{ScaleTargetRef: encRef(s.ScaleTargetRef), MinReplicas: clonePtr(s.MinReplicas), MaxReplicas: s.MaxReplicas}
	for _, m := range s.Metrics {
		e := metricV1{Type: m.Type}
		if x := m.Resource; x != nil {
			e.Resource = &resSrcV1{Name: x.Name, Target: encTarget(x.Target)}
		}
		if x := m.ContainerResource; x != nil {
			e.ContainerResource = &contResSrcV1{Name: x.Name, Container: x.Container, Target: encTarget(x.Target)}
		}
		if x := m.Pods; x != nil {
			e.Pods = &podsSrcV1{Metric: encMetricID(x.Metric), Target: encTarget(x.Target)}
		}
		if x := m.Object; x != nil {
			e.Object = &objectSrcV1{DescribedObject: encRef(x.DescribedObject), Metric: encMetricID(x.Metric),
				Target: encTarget(x.Target)}
		}
		if x := m.External; x != nil {
			e.External = &externalSrcV1{Metric: encMetricID(x.Metric), Target: encTarget(x.Target)}
		}
		out.Metrics = append(out.Metrics, e)
	}
	if b := s.Behavior; b != nil {
		out.Behavior = &behaviorV1{ScaleUp: encRules(b.ScaleUp), ScaleDown: encRules(b.ScaleDown)}
	}
	return out
}

func encCondition(c *recommender.Condition) conditionV1 {
	return conditionV1{Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message,
		LastTransitionTime: utc(c.LastTransitionTime)}
}

func encConditions(cs []recommender.Condition) []conditionV1 {
	var out []conditionV1
	for i := range cs {
		out = append(out, encCondition(&cs[i]))
	}
	return out
}

// conditionsAsState reports whether the decision's conditions cs, not empty, encode exactly as
// the state's, already converted: their times are the same instants (both are written in UTC)
// and every other field is equal.
func conditionsAsState(cs []recommender.Condition, state []conditionV1) bool {
	if len(cs) == 0 || len(cs) != len(state) {
		return false
	}
	for i := range cs {
		c, s := encCondition(&cs[i]), state[i]
		if !c.LastTransitionTime.Equal(s.LastTransitionTime) {
			return false
		}
		// Every other field, whatever fields conditionV1 gains, by ==.
		c.LastTransitionTime, s.LastTransitionTime = time.Time{}, time.Time{}
		if c != s {
			return false
		}
	}
	return true
}

func encEvents(es []recommender.ScaleEvent) []scaleEventV1 {
	var out []scaleEventV1
	for _, e := range es {
		out = append(out, scaleEventV1{Time: utc(e.Time), Change: e.Change})
	}
	return out
}

func encState(s *recommender.State) stateV1 {
	out := stateV1{Seeded: s.Seeded, Conditions: encConditions(s.Conditions)}
	for _, r := range s.History.Recommendations {
		out.History.Recommendations = append(out.History.Recommendations,
			recommendationV1{Time: utc(r.Time), Replicas: r.Replicas})
	}
	out.History.ScaleUpEvents = encEvents(s.History.ScaleUpEvents)
	out.History.ScaleDownEvents = encEvents(s.History.ScaleDownEvents)
	return out
}

func encValue(v recommender.MetricValueStatus) valueStV1 {
	return valueStV1{Value: encQty(v.Value), AverageValue: encQty(v.AverageValue), AverageUtilization: clonePtr(v.AverageUtilization)}
}

// encDecision converts the last decision; stateConds are the state's conditions, converted,
// which the decision's are written as when they are the same.
func encDecision(ld *store.LastDecision, stateConds []conditionV1) *lastDecV1 {
	d := &ld.Decision
	out := &lastDecV1{
		RecommendationID: ld.RecommendationID, Time: utc(d.Time),
		CurrentReplicas: d.CurrentReplicas, DesiredReplicas: d.DesiredReplicas,
	}
	if conditionsAsState(d.Conditions, stateConds) {
		out.ConditionsAsState = true
	} else {
		out.Conditions = encConditions(d.Conditions)
	}
	for _, m := range d.CurrentMetrics {
		e := metricStV1{Type: m.Type}
		if x := m.Resource; x != nil {
			e.Resource = &resStV1{Name: x.Name, Current: encValue(x.Current)}
		}
		if x := m.ContainerResource; x != nil {
			e.ContainerResource = &contResStV1{Name: x.Name, Container: x.Container, Current: encValue(x.Current)}
		}
		if x := m.Pods; x != nil {
			e.Pods = &podsStV1{Metric: encMetricID(x.Metric), Current: encValue(x.Current)}
		}
		if x := m.Object; x != nil {
			e.Object = &objectStV1{Metric: encMetricID(x.Metric), Current: encValue(x.Current),
				DescribedObject: encRef(x.DescribedObject)}
		}
		if x := m.External; x != nil {
			e.External = &externalStV1{Metric: encMetricID(x.Metric), Current: encValue(x.Current)}
		}
		out.CurrentMetrics = append(out.CurrentMetrics, e)
	}
	x := d.Explanation
	out.Explanation = explanationV1{
		Message: x.Message, WinningMetric: x.WinningMetric, Proposal: x.Proposal, Stabilized: x.Stabilized,
		StabilizationWindow: x.StabilizationWindow, Limited: x.Limited, LimitingPolicy: x.LimitingPolicy,
		Final: x.Final, LimitReason: x.LimitReason,
	}
	for _, m := range x.Metrics {
		out.Explanation.Metrics = append(out.Explanation.Metrics, metricExplV1{
			Index: m.Index, Name: m.Name, Proposal: m.Proposal, UsageRatio: float(m.UsageRatio), ReadyPods: m.ReadyPods,
			IgnoredPods: m.IgnoredPods, MissingPods: m.MissingPods, UnreadyPods: m.UnreadyPods, Error: m.Error,
		})
	}
	return out
}

// decoder keeps the first quantity parse error so the conversion code stays linear.
type decoder struct {
	err error
	// rewritten is set once a quantity's String() is not the text it was parsed from: encoding
	// the decoded quantity would not give the record's text back.
	rewritten bool
}

func (d *decoder) qty(s *string) *resource.Quantity {
	if s == nil {
		return nil
	}
	q, err := parseQty(*s)
	if err != nil && d.err == nil {
		d.err = fmt.Errorf("quantity %q: %w", *s, err)
	}
	if err == nil && q.String() != *s { // only reads: parseQty cached it
		d.rewritten = true
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

func (d *decoder) target(t metricTargetV1) recommender.MetricTarget {
	return recommender.MetricTarget{Type: t.Type, Value: d.qty(t.Value), AverageValue: d.qty(t.AverageValue),
		AverageUtilization: t.AverageUtilization}
}

func (d *decoder) rules(r *rulesV1) *recommender.ScalingRules {
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

func (d *decoder) spec(s *specV1) recommender.Spec {
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

func (d *decoder) state(s *stateV1) recommender.State {
	out := recommender.State{Seeded: s.Seeded, Conditions: decConditions(s.Conditions)}
	for _, r := range s.History.Recommendations {
		out.History.Recommendations = append(out.History.Recommendations,
			recommender.Recommendation{Time: r.Time, Replicas: r.Replicas})
	}
	out.History.ScaleUpEvents = decEvents(s.History.ScaleUpEvents)
	out.History.ScaleDownEvents = decEvents(s.History.ScaleDownEvents)
	return out
}

func (d *decoder) value(v valueStV1) recommender.MetricValueStatus {
	return recommender.MetricValueStatus{Value: d.qty(v.Value), AverageValue: d.qty(v.AverageValue),
		AverageUtilization: v.AverageUtilization}
}

func (d *decoder) decision(ld *lastDecV1) *store.LastDecision {
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

// float is a float64 that also encodes NaN and infinities (as JSON strings), which
// encoding/json refuses; a ratio the engine computed must never make a write fail.
type float float64

// MarshalJSON writes what appendFloat writes; Marshal no longer calls it, but it keeps a record
// encodable by json.Marshal, the reference appendRecord is tested against.
func (f float) MarshalJSON() ([]byte, error) {
	switch v := float64(f); {
	case math.IsNaN(v):
		return []byte(`"NaN"`), nil
	case math.IsInf(v, 1):
		return []byte(`"+Inf"`), nil
	case math.IsInf(v, -1):
		return []byte(`"-Inf"`), nil
	}
	return json.Marshal(float64(f))
}

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
