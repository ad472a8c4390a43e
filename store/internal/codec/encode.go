package codec

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/hpa-recommender/hpa-recommender/store"
)

// The record encoder. Every write encodes a record, and json-iterator's reflective encoder
// cost tens of microseconds and much garbage per record on the server's hot path. This one
// writes exactly the bytes json.Marshal writes for a recordV1 (TestAppendRecordMatchesJSON
// holds it to that), json-iterator's departures from encoding/json included:
//   - \b and \f in strings are written \u0008 and \u000c (encoding/json writes \b and \f);
//   - float.MarshalJSON's exponents keep their leading zero, 1e-07 (encoding/json: 1e-7);
//   - map keys are sorted as they decode, each invalid UTF-8 byte read as U+FFFD.
//
// A field added to a record struct must be added here too, in declaration order.

// maxPooledBuffer bounds the buffers Format.encode keeps, so that one huge record does not pin
// its buffer for good.
const maxPooledBuffer = 64 << 10

// buffers holds Format.encode's buffers: growing one to a record's size by appending each time
// cost more than the encoding itself.
var buffers = sync.Pool{New: func() any { return new([]byte) }}

// encodeRecord returns the JSON encoding of r in a slice of its own.
func encodeRecord(r *recordV1) ([]byte, error) {
	var out []byte
	err := JSON.encode(nil, 0, r, nil, func(b, _ []byte) { out = bytes.Clone(b) })
	return out, err
}

// encode calls use with the record of t, revision rev (0: none), in f and the part of it that is
// the spec (JSON: the value of its spec member; binary: its spec section), in a pooled buffer
// that is only valid during the call. JSON is written from r, t converted (encRecord; nil: f
// converts it); binary from t directly. spec, when not nil, is written verbatim in that place
// instead of the spec's encoding (MarshalNormalizedAfter).
func (f Format) encode(t *store.Target, rev int64, r *recordV1, spec []byte, use func(record, spec []byte)) error {
	buf := buffers.Get().(*[]byte)
	defer buffers.Put(buf)
	var (
		b           []byte
		specAt, end int
		err         error
	)
	if f.binary {
		e := binEncoder{b: (*buf)[:0], specBin: spec}
		e.record(t, rev)
		b, specAt, end, err = e.b, e.specAt, e.specEnd, e.err
	} else {
		if r == nil {
			c := encRecord(t, rev)
			r = &c
		}
		e := encoder{b: (*buf)[:0], specJSON: spec}
		e.record(r)
		b, specAt, end, err = e.b, e.specAt, e.specEnd, e.err
	}
	if err != nil {
		return err
	}
	if cap(b) <= maxPooledBuffer {
		*buf = b
	}
	use(b, b[specAt:end])
	return nil
}

// appendRecord appends the JSON encoding of r to b. It fails where json.Marshal does: on a time
// that RFC 3339 cannot represent.
func appendRecord(b []byte, r *recordV1) ([]byte, error) {
	e := encoder{b: b}
	e.record(r)
	if e.err != nil {
		return nil, e.err
	}
	return e.b, nil
}

// encoder keeps the first error so that the per-struct methods stay linear.
type encoder struct {
	b   []byte
	err error
	// specJSON, when not nil, is written as the spec member's value in place of encoding it.
	specJSON []byte
	// specAt and specEnd are where record wrote the spec member's value in b.
	specAt, specEnd int
}

// name appends a member name, after a comma unless it opens its object: no value ends in '{'.
func (e *encoder) name(n string) {
	b := e.b
	if b[len(b)-1] != '{' {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = append(b, n...)
	e.b = append(b, '"', ':')
}

func (e *encoder) str(n, s string) {
	e.name(n)
	e.b = appendString(e.b, s)
}

func (e *encoder) strOmitEmpty(n, s string) {
	if s != "" {
		e.str(n, s)
	}
}

func (e *encoder) strPtr(n string, s *string) {
	if s != nil {
		e.str(n, *s)
	}
}

func (e *encoder) num(n string, v int64) {
	e.name(n)
	e.b = strconv.AppendInt(e.b, v, 10)
}

func (e *encoder) numOmitEmpty(n string, v int64) {
	if v != 0 {
		e.num(n, v)
	}
}

func (e *encoder) int32Ptr(n string, p *int32) {
	if p != nil {
		e.num(n, int64(*p))
	}
}

// timestamp appends t as time.Time.MarshalJSON does. AppendText writes the same RFC 3339 text
// and fails in the same cases (a year outside [0,9999], a zone offset of 24 hours or more)
// without allocating.
func (e *encoder) timestamp(n string, t time.Time) {
	e.name(n)
	e.b = append(e.b, '"')
	b, err := t.AppendText(e.b)
	if err != nil {
		if e.err == nil {
			e.err = fmt.Errorf("%s: %w", n, err)
		}
		return
	}
	e.b = append(b, '"')
}

// list appends s as member n; every list in the record is omitempty.
func list[T any](e *encoder, n string, s []T, elem func(*encoder, *T)) {
	if len(s) == 0 {
		return
	}
	e.name(n)
	e.b = append(e.b, '[')
	for i := range s {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		elem(e, &s[i])
	}
	e.b = append(e.b, ']')
}

func (e *encoder) elemStr(s *string) { e.b = appendString(e.b, *s) }

// labels appends m as member n, omitted when empty, its keys in json-iterator's order: by the
// key as it decodes back. Keys that decode alike (invalid UTF-8) json-iterator leaves in map
// order; they are put in byte order here.
func (e *encoder) labels(n string, m map[string]string) {
	if len(m) == 0 {
		return
	}
	var small [8]string // on the stack: selectors have a few labels
	keys := small[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compareDecodedKeys)
	e.name(n)
	e.b = append(e.b, '{')
	for i, k := range keys {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		e.b = appendString(e.b, k)
		e.b = append(e.b, ':')
		e.b = appendString(e.b, m[k])
	}
	e.b = append(e.b, '}')
}

func compareDecodedKeys(a, b string) int {
	if c := strings.Compare(decodedKey(a), decodedKey(b)); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}

// decodedKey is what appendString(k) decodes to: k with each invalid UTF-8 byte replaced by
// U+FFFD (strings.ToValidUTF8 replaces a run of them with one).
func decodedKey(k string) string {
	if utf8.ValidString(k) {
		return k
	}
	var b strings.Builder
	for _, r := range k {
		b.WriteRune(r)
	}
	return b.String()
}

func (e *encoder) record(r *recordV1) {
	e.b = append(e.b, '{')
	e.num("v", int64(r.V))
	e.numOmitEmpty("rev", r.Revision)
	e.name("key")
	e.key(&r.Key)
	e.name("spec")
	e.specAt = len(e.b)
	if e.specJSON != nil {
		e.b = append(e.b, e.specJSON...)
	} else {
		e.spec(&r.Spec)
	}
	e.specEnd = len(e.b)
	e.name("state")
	e.state(&r.State)
	list(e, "pending", r.Pending, (*encoder).pending)
	list(e, "reported", r.Reported, (*encoder).elemStr)
	if r.LastDecision != nil {
		e.name("lastDecision")
		e.lastDecision(r.LastDecision)
	}
	e.timestamp("lastSeen", r.LastSeen)
	e.b = append(e.b, '}')
}

func (e *encoder) key(k *keyV1) {
	e.b = append(e.b, '{')
	e.str("cluster", k.Cluster)
	e.str("namespace", k.Namespace)
	e.str("name", k.Name)
	e.b = append(e.b, '}')
}

func (e *encoder) spec(s *specV1) {
	e.b = append(e.b, '{')
	e.name("scaleTargetRef")
	e.objRef(&s.ScaleTargetRef)
	e.int32Ptr("minReplicas", s.MinReplicas)
	e.num("maxReplicas", int64(s.MaxReplicas))
	list(e, "metrics", s.Metrics, (*encoder).metric)
	if s.Behavior != nil {
		e.name("behavior")
		e.behavior(s.Behavior)
	}
	e.b = append(e.b, '}')
}

func (e *encoder) objRef(r *objRefV1) {
	e.b = append(e.b, '{')
	e.strOmitEmpty("apiVersion", r.APIVersion)
	e.strOmitEmpty("kind", r.Kind)
	e.strOmitEmpty("name", r.Name)
	e.b = append(e.b, '}')
}

func (e *encoder) metric(m *metricV1) {
	e.b = append(e.b, '{')
	e.str("type", m.Type)
	if x := m.Resource; x != nil {
		e.name("resource")
		e.b = append(e.b, '{')
		e.str("name", x.Name)
		e.name("target")
		e.target(&x.Target)
		e.b = append(e.b, '}')
	}
	if x := m.ContainerResource; x != nil {
		e.name("containerResource")
		e.b = append(e.b, '{')
		e.str("name", x.Name)
		e.str("container", x.Container)
		e.name("target")
		e.target(&x.Target)
		e.b = append(e.b, '}')
	}
	if x := m.Pods; x != nil {
		e.name("pods")
		e.b = append(e.b, '{')
		e.name("metric")
		e.metricID(&x.Metric)
		e.name("target")
		e.target(&x.Target)
		e.b = append(e.b, '}')
	}
	if x := m.Object; x != nil {
		e.name("object")
		e.b = append(e.b, '{')
		e.name("describedObject")
		e.objRef(&x.DescribedObject)
		e.name("metric")
		e.metricID(&x.Metric)
		e.name("target")
		e.target(&x.Target)
		e.b = append(e.b, '}')
	}
	if x := m.External; x != nil {
		e.name("external")
		e.b = append(e.b, '{')
		e.name("metric")
		e.metricID(&x.Metric)
		e.name("target")
		e.target(&x.Target)
		e.b = append(e.b, '}')
	}
	e.b = append(e.b, '}')
}

func (e *encoder) metricID(m *metricIDV1) {
	e.b = append(e.b, '{')
	e.str("name", m.Name)
	if s := m.Selector; s != nil {
		e.name("selector")
		e.b = append(e.b, '{')
		e.labels("matchLabels", s.MatchLabels)
		list(e, "matchExpressions", s.MatchExpressions, (*encoder).selectorReq)
		e.b = append(e.b, '}')
	}
	e.b = append(e.b, '}')
}

func (e *encoder) selectorReq(r *selectorReqV1) {
	e.b = append(e.b, '{')
	e.str("key", r.Key)
	e.str("operator", r.Operator)
	list(e, "values", r.Values, (*encoder).elemStr)
	e.b = append(e.b, '}')
}

func (e *encoder) target(t *metricTargetV1) {
	e.b = append(e.b, '{')
	e.str("type", t.Type)
	e.strPtr("value", t.Value)
	e.strPtr("averageValue", t.AverageValue)
	e.int32Ptr("averageUtilization", t.AverageUtilization)
	e.b = append(e.b, '}')
}

func (e *encoder) behavior(b *behaviorV1) {
	e.b = append(e.b, '{')
	if b.ScaleUp != nil {
		e.name("scaleUp")
		e.rules(b.ScaleUp)
	}
	if b.ScaleDown != nil {
		e.name("scaleDown")
		e.rules(b.ScaleDown)
	}
	e.b = append(e.b, '}')
}

func (e *encoder) rules(r *rulesV1) {
	e.b = append(e.b, '{')
	e.int32Ptr("stabilizationWindowSeconds", r.StabilizationWindowSeconds)
	e.strPtr("selectPolicy", r.SelectPolicy)
	list(e, "policies", r.Policies, (*encoder).policy)
	e.strPtr("tolerance", r.Tolerance)
	e.b = append(e.b, '}')
}

func (e *encoder) policy(p *policyV1) {
	e.b = append(e.b, '{')
	e.str("type", p.Type)
	e.num("value", int64(p.Value))
	e.num("periodSeconds", int64(p.PeriodSeconds))
	e.b = append(e.b, '}')
}

func (e *encoder) state(s *stateV1) {
	e.b = append(e.b, '{')
	if s.Seeded {
		e.name("seeded")
		e.b = append(e.b, "true"...)
	}
	e.name("history")
	e.b = append(e.b, '{')
	list(e, "recommendations", s.History.Recommendations, (*encoder).recommendation)
	list(e, "scaleUpEvents", s.History.ScaleUpEvents, (*encoder).scaleEvent)
	list(e, "scaleDownEvents", s.History.ScaleDownEvents, (*encoder).scaleEvent)
	e.b = append(e.b, '}')
	list(e, "conditions", s.Conditions, (*encoder).condition)
	e.b = append(e.b, '}')
}

func (e *encoder) recommendation(r *recommendationV1) {
	e.b = append(e.b, '{')
	e.timestamp("time", r.Time)
	e.num("replicas", int64(r.Replicas))
	e.b = append(e.b, '}')
}

func (e *encoder) scaleEvent(s *scaleEventV1) {
	e.b = append(e.b, '{')
	e.timestamp("time", s.Time)
	e.num("change", int64(s.Change))
	e.b = append(e.b, '}')
}

func (e *encoder) condition(c *conditionV1) {
	e.b = append(e.b, '{')
	e.str("type", c.Type)
	e.str("status", c.Status)
	e.strOmitEmpty("reason", c.Reason)
	e.strOmitEmpty("message", c.Message)
	e.timestamp("lastTransitionTime", c.LastTransitionTime)
	e.b = append(e.b, '}')
}

func (e *encoder) pending(p *pendingV1) {
	e.b = append(e.b, '{')
	e.str("recommendationId", p.RecommendationID)
	e.timestamp("time", p.Time)
	e.num("currentReplicas", int64(p.CurrentReplicas))
	e.num("desiredReplicas", int64(p.DesiredReplicas))
	e.b = append(e.b, '}')
}

func (e *encoder) lastDecision(d *lastDecV1) {
	e.b = append(e.b, '{')
	e.strOmitEmpty("recommendationId", d.RecommendationID)
	e.timestamp("time", d.Time)
	e.num("currentReplicas", int64(d.CurrentReplicas))
	e.num("desiredReplicas", int64(d.DesiredReplicas))
	list(e, "currentMetrics", d.CurrentMetrics, (*encoder).metricStatus)
	list(e, "conditions", d.Conditions, (*encoder).condition)
	if d.ConditionsAsState {
		e.name("conditionsAsState")
		e.b = append(e.b, "true"...)
	}
	e.name("explanation")
	e.explanation(&d.Explanation)
	e.b = append(e.b, '}')
}

func (e *encoder) metricStatus(m *metricStV1) {
	e.b = append(e.b, '{')
	e.strOmitEmpty("type", m.Type)
	if x := m.Resource; x != nil {
		e.name("resource")
		e.b = append(e.b, '{')
		e.str("name", x.Name)
		e.name("current")
		e.value(&x.Current)
		e.b = append(e.b, '}')
	}
	if x := m.ContainerResource; x != nil {
		e.name("containerResource")
		e.b = append(e.b, '{')
		e.str("name", x.Name)
		e.str("container", x.Container)
		e.name("current")
		e.value(&x.Current)
		e.b = append(e.b, '}')
	}
	if x := m.Pods; x != nil {
		e.name("pods")
		e.b = append(e.b, '{')
		e.name("metric")
		e.metricID(&x.Metric)
		e.name("current")
		e.value(&x.Current)
		e.b = append(e.b, '}')
	}
	if x := m.Object; x != nil {
		e.name("object")
		e.b = append(e.b, '{')
		e.name("metric")
		e.metricID(&x.Metric)
		e.name("current")
		e.value(&x.Current)
		e.name("describedObject")
		e.objRef(&x.DescribedObject)
		e.b = append(e.b, '}')
	}
	if x := m.External; x != nil {
		e.name("external")
		e.b = append(e.b, '{')
		e.name("metric")
		e.metricID(&x.Metric)
		e.name("current")
		e.value(&x.Current)
		e.b = append(e.b, '}')
	}
	e.b = append(e.b, '}')
}

func (e *encoder) value(v *valueStV1) {
	e.b = append(e.b, '{')
	e.strPtr("value", v.Value)
	e.strPtr("averageValue", v.AverageValue)
	e.int32Ptr("averageUtilization", v.AverageUtilization)
	e.b = append(e.b, '}')
}

func (e *encoder) explanation(x *explanationV1) {
	e.b = append(e.b, '{')
	e.strOmitEmpty("message", x.Message)
	list(e, "metrics", x.Metrics, (*encoder).metricExplanation)
	e.num("winningMetric", int64(x.WinningMetric))
	e.num("proposal", int64(x.Proposal))
	e.num("stabilized", int64(x.Stabilized))
	e.numOmitEmpty("stabilizationWindowNanos", int64(x.StabilizationWindow))
	e.num("limited", int64(x.Limited))
	e.strOmitEmpty("limitingPolicy", x.LimitingPolicy)
	e.num("final", int64(x.Final))
	e.strOmitEmpty("limitReason", x.LimitReason)
	e.b = append(e.b, '}')
}

func (e *encoder) metricExplanation(m *metricExplV1) {
	e.b = append(e.b, '{')
	e.num("index", int64(m.Index))
	e.strOmitEmpty("name", m.Name)
	e.num("proposal", int64(m.Proposal))
	e.name("usageRatio")
	e.b = appendFloat(e.b, m.UsageRatio)
	e.num("readyPods", int64(m.ReadyPods))
	e.num("ignoredPods", int64(m.IgnoredPods))
	e.num("missingPods", int64(m.MissingPods))
	e.num("unreadyPods", int64(m.UnreadyPods))
	e.strOmitEmpty("error", m.Error)
	e.b = append(e.b, '}')
}

// appendFloat appends f as float.MarshalJSON writes it: non-finite values as strings, others
// as json-iterator writes a float64 (encoding/json's format without its exponent cleanup).
func appendFloat(b []byte, f float) []byte {
	v := float64(f)
	switch {
	case math.IsNaN(v):
		return append(b, `"NaN"`...)
	case math.IsInf(v, 1):
		return append(b, `"+Inf"`...)
	case math.IsInf(v, -1):
		return append(b, `"-Inf"`...)
	}
	format := byte('f')
	if abs := math.Abs(v); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	return strconv.AppendFloat(b, v, format, -1, 64)
}

// htmlSafe holds the bytes a string keeps as they are without a closer look: ASCII but the
// control characters, '"', '\\', and the '<', '>' and '&' that HTML escaping rewrites.
var htmlSafe = func() (safe [256]bool) {
	for c := range utf8.RuneSelf {
		safe[c] = c >= ' ' && !strings.ContainsRune(`"\<>&`, rune(c))
	}
	return safe
}()

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string escaped as json-iterator's HTML-escaping encoder
// does: \n, \r, \t, \" and \\ short, other unsafe ASCII as \u00XX, U+2028 and U+2029 as \u2028
// and \u2029, and each invalid UTF-8 byte as \ufffd.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if htmlSafe[c] {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
