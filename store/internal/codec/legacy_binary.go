package codec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/hpa-recommender/hpa-recommender/recommender"
	"github.com/hpa-recommender/hpa-recommender/store"
)

// Legacy record format 3: the record of format 2 (recordV1 and the same rules: conditionsAsState,
// quantities as their canonical text, durations in nanoseconds) in a hand-made binary layout,
// which the bbolt store and the memory store wrote until format 4. It is read only by Upgrade,
// never written.
//
// Layout, every integer little-endian:
//
//	byte 0       binaryMagic (never '{', so a reader tells the formats apart by it)
//	bytes 1-8    revision, uint64 (0: none, as for a negative one), where Revise writes it
//	bytes 9-16   lastSeen, seconds since the Unix epoch, int64
//	bytes 17-20  lastSeen, nanoseconds, uint32
//	then         key; the spec's length (uint32) and the spec, a section of its own so that its
//	             bytes can be reused; state, pending, reported, lastDecision; nothing follows.
//
// In the body, a string is its length (uvarint) and bytes; an int32 or int64 a varint; a time
// seconds (varint) and nanoseconds (uvarint); a float64 its 8 bytes; a list its length
// (uvarint) and elements; an optional value a byte, 0 absent or 1 present, and the value; a
// map its entries sorted by key. A string is kept byte for byte (JSON would rewrite invalid
// UTF-8); times must be in the years 0 to 9999, as in JSON.
const binaryMagic = 0xB3

// binaryHeader is the fixed part that opens a binary record.
const binaryHeader = 21

// isBinary reports whether b opens as a binary record.
func isBinary(b []byte) bool { return len(b) > 0 && b[0] == binaryMagic }

// binDecoder reads a binary record into a target. Every string is carved from text, one copy
// of the record made up front, so the result never aliases the input and costs one allocation
// for all its strings. It keeps the first error; reads past it return zero values.
type binDecoder struct {
	b    []byte
	text string // the record as a string, b's copy
	off  int
	err  error
	// qtyErr is the first quantity whose text does not parse: the record reads, but not as a
	// target (decRecord's error).
	qtyErr error
}

// errBinaryRecord wraps every malformed binary record's error.
var errBinaryRecord = errors.New("malformed binary record")

func (d *binDecoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s at byte %d", errBinaryRecord, what, d.off)
	}
}

func (d *binDecoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 {
		d.fail("bad unsigned varint")
		return 0
	}
	d.off += n
	return v
}

func (d *binDecoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b[d.off:])
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.off += n
	return v
}

func (d *binDecoder) int32() int32 {
	v := d.varint()
	if v < math.MinInt32 || v > math.MaxInt32 {
		d.fail("int32 out of range")
		return 0
	}
	return int32(v)
}

// count reads a list's length, which cannot exceed the bytes left (every element takes one).
func (d *binDecoder) count() int {
	n := d.uvarint()
	if n > uint64(len(d.b)-d.off) {
		d.fail("list longer than the record")
		return 0
	}
	return int(n)
}

func (d *binDecoder) str() string {
	n := d.uvarint()
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.b)-d.off) {
		d.fail("string longer than the record")
		return ""
	}
	s := d.text[d.off : d.off+int(n)]
	d.off += int(n)
	return s
}

func (d *binDecoder) flag() bool {
	if d.err != nil {
		return false
	}
	if d.off >= len(d.b) {
		d.fail("truncated")
		return false
	}
	c := d.b[d.off]
	d.off++
	if c > 1 {
		d.fail("bad presence byte")
	}
	return c == 1
}

func (d *binDecoder) int32Ptr() *int32 {
	if !d.flag() {
		return nil
	}
	v := d.int32()
	return &v
}

func (d *binDecoder) strPtr() *string {
	if !d.flag() {
		return nil
	}
	v := d.str()
	return &v
}

func (d *binDecoder) time() time.Time {
	sec := d.varint()
	nsec := d.uvarint()
	if nsec >= 1e9 {
		d.fail("nanoseconds out of range")
		return time.Time{}
	}
	return binTime(sec, int64(nsec))
}

// binTime is the time the record holds, as JSON decodes one: UTC, without a location.
func binTime(sec, nsec int64) time.Time { return time.Unix(sec, nsec).UTC() }

func binDecList[T any](d *binDecoder, elem func(*binDecoder, *T)) []T {
	n := d.count()
	if n == 0 || d.err != nil {
		return nil
	}
	s := make([]T, n)
	for i := range s {
		elem(d, &s[i])
	}
	return s
}

func (d *binDecoder) strs() []string {
	return binDecList(d, func(d *binDecoder, s *string) { *s = d.str() })
}

// binaryHeaderFields reads the header of a binary record: its revision and lastSeen.
func binaryHeaderFields(b []byte) (rev int64, lastSeen time.Time, err error) {
	if len(b) < binaryHeader || b[0] != binaryMagic {
		return 0, time.Time{}, fmt.Errorf("%w: shorter than its header", errBinaryRecord)
	}
	r := binary.LittleEndian.Uint64(b[1:9])
	if r > math.MaxInt64 {
		return 0, time.Time{}, fmt.Errorf("%w: revision %d out of range", errBinaryRecord, r)
	}
	nsec := binary.LittleEndian.Uint32(b[17:21])
	if nsec >= 1e9 {
		return 0, time.Time{}, fmt.Errorf("%w: lastSeen nanoseconds out of range", errBinaryRecord)
	}
	return int64(r), binTime(int64(binary.LittleEndian.Uint64(b[9:17])), int64(nsec)), nil
}

// decodeBinary decodes a binary record into a target, as decRecord converts a JSON record's
// (the same nil and empty, the decision's conditions a copy of the state's for
// conditionsAsState).
func decodeBinary(b []byte) (*store.Target, error) {
	rev, seen, err := binaryHeaderFields(b)
	if err != nil {
		return nil, err
	}
	d := binDecoder{b: b, text: string(b), off: binaryHeader}
	t := &store.Target{Revision: rev, LastSeen: seen}
	t.Key = store.Key{Cluster: d.str(), Namespace: d.str(), Name: d.str()}
	if d.err == nil && len(b)-d.off < 4 {
		d.fail("truncated")
	}
	if d.err == nil {
		n := binary.LittleEndian.Uint32(b[d.off:])
		d.off += 4
		switch {
		case uint64(n) > uint64(len(b)-d.off):
			d.fail("spec section longer than the record")
		default:
			// The decoder itself, its bytes cut at the section's end (a decoder of its own
			// would be one more allocation: method values make decoders escape).
			end := d.off + int(n)
			whole := d.text
			d.b, d.text = b[:end], d.text[:end]
			d.spec(&t.Spec)
			if d.err == nil && d.off != end {
				d.fail("spec section longer than its spec")
			}
			d.b, d.text, d.off = b, whole, end
		}
	}
	d.state(&t.State)
	t.Pending = binDecList(&d, func(d *binDecoder, p *store.PendingDecision) {
		p.RecommendationID, p.Time = d.str(), d.time()
		p.CurrentReplicas, p.DesiredReplicas = d.int32(), d.int32()
	})
	t.Reported = d.strs()
	if d.flag() {
		t.LastDecision = d.lastDecision(t.State.Conditions)
	}
	if d.err == nil && d.off != len(b) {
		d.fail("bytes after the record")
	}
	if d.err != nil {
		return nil, d.err
	}
	if d.qtyErr != nil {
		return nil, fmt.Errorf("decode target %s: %w", t.Key, d.qtyErr)
	}
	return t, nil
}

// qty reads an optional quantity's text and parses it as decRecord does.
func (d *binDecoder) qty() *resource.Quantity {
	if !d.flag() {
		return nil
	}
	s := d.str()
	if d.err != nil {
		return nil
	}
	q, err := resource.ParseQuantity(s)
	if err != nil && d.qtyErr == nil {
		d.qtyErr = fmt.Errorf("quantity %q: %w", s, err)
	}
	return &q
}

func (d *binDecoder) spec(s *recommender.Spec) {
	d.objRef(&s.ScaleTargetRef)
	s.MinReplicas = d.int32Ptr()
	s.MaxReplicas = d.int32()
	s.Metrics = binDecList(d, (*binDecoder).metric)
	if d.flag() {
		s.Behavior = &recommender.Behavior{ScaleUp: d.rules(), ScaleDown: d.rules()}
	}
}

func (d *binDecoder) objRef(r *recommender.ObjectReference) {
	r.APIVersion, r.Kind, r.Name = d.str(), d.str(), d.str()
}

func (d *binDecoder) metric(m *recommender.MetricSpec) {
	m.Type = d.str()
	if d.flag() {
		m.Resource = &recommender.ResourceMetricSource{Name: d.str()}
		d.target(&m.Resource.Target)
	}
	if d.flag() {
		m.ContainerResource = &recommender.ContainerResourceMetricSource{Name: d.str(), Container: d.str()}
		d.target(&m.ContainerResource.Target)
	}
	if d.flag() {
		m.Pods = &recommender.PodsMetricSource{}
		d.metricID(&m.Pods.Metric)
		d.target(&m.Pods.Target)
	}
	if d.flag() {
		m.Object = &recommender.ObjectMetricSource{}
		d.objRef(&m.Object.DescribedObject)
		d.metricID(&m.Object.Metric)
		d.target(&m.Object.Target)
	}
	if d.flag() {
		m.External = &recommender.ExternalMetricSource{}
		d.metricID(&m.External.Metric)
		d.target(&m.External.Target)
	}
}

func (d *binDecoder) metricID(m *recommender.MetricIdentifier) {
	m.Name = d.str()
	if !d.flag() {
		return
	}
	m.Selector = &recommender.LabelSelector{}
	if n := d.count(); n > 0 && d.err == nil {
		m.Selector.MatchLabels = make(map[string]string, n)
		prev := ""
		for i := range n {
			k, v := d.str(), d.str()
			if i > 0 && k <= prev {
				d.fail("labels not sorted")
			}
			m.Selector.MatchLabels[k], prev = v, k
		}
	}
	m.Selector.MatchExpressions = binDecList(d, func(d *binDecoder, r *recommender.LabelSelectorRequirement) {
		r.Key, r.Operator, r.Values = d.str(), d.str(), d.strs()
	})
}

func (d *binDecoder) target(t *recommender.MetricTarget) {
	t.Type = d.str()
	t.Value, t.AverageValue = d.qty(), d.qty()
	t.AverageUtilization = d.int32Ptr()
}

func (d *binDecoder) rules() *recommender.ScalingRules {
	if !d.flag() {
		return nil
	}
	r := &recommender.ScalingRules{StabilizationWindowSeconds: d.int32Ptr(), SelectPolicy: d.strPtr()}
	r.Policies = binDecList(d, func(d *binDecoder, p *recommender.ScalingPolicy) {
		p.Type, p.Value, p.PeriodSeconds = d.str(), d.int32(), d.int32()
	})
	r.Tolerance = d.qty()
	return r
}

func (d *binDecoder) state(s *recommender.State) {
	s.Seeded = d.flag()
	s.History.Recommendations = binDecList(d, func(d *binDecoder, r *recommender.Recommendation) {
		r.Time, r.Replicas = d.time(), d.int32()
	})
	events := func(d *binDecoder, s *recommender.ScaleEvent) { s.Time, s.Change = d.time(), d.int32() }
	s.History.ScaleUpEvents = binDecList(d, events)
	s.History.ScaleDownEvents = binDecList(d, events)
	s.Conditions = binDecList(d, (*binDecoder).condition)
}

func (d *binDecoder) condition(c *recommender.Condition) {
	c.Type, c.Status, c.Reason, c.Message = d.str(), d.str(), d.str(), d.str()
	c.LastTransitionTime = d.time()
}

// lastDecision reads the last decision; with conditionsAsState its conditions are a copy of
// state's, which the caller may change apart from them.
func (d *binDecoder) lastDecision(state []recommender.Condition) *store.LastDecision {
	out := &store.LastDecision{RecommendationID: d.str()}
	x := &out.Decision
	x.Time = d.time()
	x.CurrentReplicas, x.DesiredReplicas = d.int32(), d.int32()
	x.CurrentMetrics = binDecList(d, (*binDecoder).metricStatus)
	asState := d.flag()
	x.Conditions = binDecList(d, (*binDecoder).condition)
	if asState {
		if len(x.Conditions) > 0 {
			d.fail("lastDecision has both conditions and conditionsAsState")
		}
		x.Conditions = slices.Clone(state)
	}
	e := &x.Explanation
	e.Message = d.str()
	e.Metrics = binDecList(d, func(d *binDecoder, m *recommender.MetricExplanation) {
		m.Index, m.Name, m.Proposal = d.int32(), d.str(), d.int32()
		if d.err == nil && len(d.b)-d.off < 8 {
			d.fail("truncated")
		}
		if d.err == nil {
			m.UsageRatio = math.Float64frombits(binary.LittleEndian.Uint64(d.b[d.off:]))
			d.off += 8
		}
		m.ReadyPods, m.IgnoredPods, m.MissingPods, m.UnreadyPods = d.int32(), d.int32(), d.int32(), d.int32()
		m.Error = d.str()
	})
	e.WinningMetric, e.Proposal, e.Stabilized = d.int32(), d.int32(), d.int32()
	e.StabilizationWindow = time.Duration(d.varint())
	e.Limited, e.LimitingPolicy, e.Final, e.LimitReason = d.int32(), d.str(), d.int32(), d.str()
	return out
}

func (d *binDecoder) metricStatus(m *recommender.MetricStatus) {
	m.Type = d.str()
	if d.flag() {
		m.Resource = &recommender.ResourceMetricStatus{Name: d.str()}
		d.value(&m.Resource.Current)
	}
	if d.flag() {
		m.ContainerResource = &recommender.ContainerResourceMetricStatus{Name: d.str(), Container: d.str()}
		d.value(&m.ContainerResource.Current)
	}
	if d.flag() {
		m.Pods = &recommender.PodsMetricStatus{}
		d.metricID(&m.Pods.Metric)
		d.value(&m.Pods.Current)
	}
	if d.flag() {
		m.Object = &recommender.ObjectMetricStatus{}
		d.metricID(&m.Object.Metric)
		d.value(&m.Object.Current)
		d.objRef(&m.Object.DescribedObject)
	}
	if d.flag() {
		m.External = &recommender.ExternalMetricStatus{}
		d.metricID(&m.External.Metric)
		d.value(&m.External.Current)
	}
}

func (d *binDecoder) value(v *recommender.MetricValueStatus) {
	v.Value, v.AverageValue = d.qty(), d.qty()
	v.AverageUtilization = d.int32Ptr()
}
