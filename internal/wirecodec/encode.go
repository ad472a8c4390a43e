package wirecodec

import (
	"encoding/binary"
	"math"
	"unicode/utf8"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

// marshalResponse encodes m, which is not nil, into one buffer of the exact size, as the
// default codec would (a pooled buffer above grpc-go's pooling threshold), or reports false
// when it cannot promise proto.Marshal's bytes: the caller then uses the default codec, whose
// bytes and errors are protobuf-go's own.
func marshalResponse(m *pb.RecommendResponse) (mem.BufferSlice, bool) {
	n, ok := responseSize(m)
	if !ok {
		return nil, false
	}
	if mem.IsBelowBufferPoolingThreshold(n) {
		b := make([]byte, n)
		if !writeResponse(b, m) {
			return nil, false
		}
		return mem.BufferSlice{mem.SliceBuffer(b)}, true
	}
	pool := mem.DefaultBufferPool()
	buf := pool.Get(n)
	*buf = (*buf)[:n]
	if !writeResponse(*buf, m) {
		pool.Put(buf)
		return nil, false
	}
	return mem.BufferSlice{mem.NewBuffer(buf, pool)}, true
}

// responseSize is proto.Size(m), and whether writeResponse encodes m as proto.Marshal does. It
// does not for messages with unknown fields (protobuf-go writes them back; the encoder does
// not), strings that are not valid UTF-8 (proto.Marshal fails on them, and its error is the
// one to return) and maps of more than one entry: protobuf-go writes those in Go's map
// iteration order, which changes from one call to the next, so no encoder can promise its
// bytes.
func responseSize(m *pb.RecommendResponse) (int, bool) {
	var s sizer
	n := s.response(m)
	return n, !s.unsure
}

// writeResponse writes m into b, whose length is responseSize(m), and reports whether it
// filled b exactly. It cannot fail unless m changed since it was measured, a data race the
// default codec does not guard against either (it marshals with UseCachedSize): a message
// that shrank is then reported, one that grew panics with an index out of range.
func writeResponse(b []byte, m *pb.RecommendResponse) bool {
	w := writer{b: b, i: len(b)}
	w.response(m)
	return w.i == 0
}

// The encoder writes fields in field-number order, as protobuf-go does, and leaves out what
// protobuf-go leaves out: proto3 scalars with implicit presence that hold their zero value (a
// double only when it is +0: -0 is written), absent optional scalars and absent (nil)
// messages. A nil element of a repeated message field is an empty message. Every field number
// of these messages is below 16, so every tag is one byte.

// Wire types as they appear in a one-byte tag; see also varintType and bytesType.
const fixed64Type = uint64(protowire.Fixed64Type)

// sizer computes the encoded sizes of the response's messages, and notes whether anything
// makes writeResponse's bytes unsure (see responseSize).
type sizer struct{ unsure bool }

// fieldSize is the size of a length-delimited field (tag, length and content) whose content
// is n bytes.
func fieldSize(n int) int { return 1 + protowire.SizeBytes(n) }

func (s *sizer) known(m proto.Message) {
	if len(m.ProtoReflect().GetUnknown()) > 0 {
		s.unsure = true
	}
}

// str is the size of a string field with implicit presence.
func (s *sizer) str(v string) int {
	if v == "" {
		return 0
	}
	return s.strAlways(v)
}

// strAlways is the size of a string field that is written even when empty: an optional one
// that is set, a repeated one's element, a map entry's key or value.
func (s *sizer) strAlways(v string) int {
	if !utf8.ValidString(v) {
		s.unsure = true
	}
	return fieldSize(len(v))
}

func (s *sizer) optStr(v *string) int {
	if v == nil {
		return 0
	}
	return s.strAlways(*v)
}

func int32Size(v int32) int {
	if v == 0 {
		return 0
	}
	return 1 + protowire.SizeVarint(uint64(v))
}

func optInt32Size(v *int32) int {
	if v == nil {
		return 0
	}
	return 1 + protowire.SizeVarint(uint64(*v))
}

func doubleSize(v float64) int {
	if v == 0 && !math.Signbit(v) {
		return 0
	}
	return 1 + 8
}

func (s *sizer) timestamp(t *timestamppb.Timestamp) int {
	s.known(t)
	return secondsNanosSize(t.Seconds, t.Nanos)
}

func (s *sizer) duration(d *durationpb.Duration) int {
	s.known(d)
	return secondsNanosSize(d.Seconds, d.Nanos)
}

func secondsNanosSize(seconds int64, nanos int32) int {
	n := int32Size(nanos)
	if seconds != 0 {
		n += 1 + protowire.SizeVarint(uint64(seconds))
	}
	return n
}

func (s *sizer) response(m *pb.RecommendResponse) int {
	s.known(m)
	n := int32Size(m.DesiredReplicas) + int32Size(m.CurrentReplicas) + s.str(m.RecommendationId)
	if m.DecisionTime != nil {
		n += fieldSize(s.timestamp(m.DecisionTime))
	}
	if m.Scale {
		n += 2
	}
	for _, e := range m.CurrentMetrics {
		n += fieldSize(s.metricStatus(e))
	}
	for _, e := range m.Conditions {
		n += fieldSize(s.condition(e))
	}
	if m.Explanation != nil {
		n += fieldSize(s.explanation(m.Explanation))
	}
	return n
}

func (s *sizer) metricStatus(m *pb.MetricStatus) int {
	if m == nil {
		return 0
	}
	s.known(m)
	n := s.str(m.Type)
	if r := m.Resource; r != nil {
		s.known(r)
		n += fieldSize(s.str(r.Name) + s.valueStatusField(r.Current))
	}
	if r := m.ContainerResource; r != nil {
		s.known(r)
		n += fieldSize(s.str(r.Name) + s.valueStatusField(r.Current) + s.str(r.Container))
	}
	if p := m.Pods; p != nil {
		s.known(p)
		n += fieldSize(s.metricIDField(p.Metric) + s.valueStatusField(p.Current))
	}
	if o := m.Object; o != nil {
		s.known(o)
		n += fieldSize(s.metricIDField(o.Metric) + s.valueStatusField(o.Current) + s.objectRefField(o.DescribedObject))
	}
	if e := m.External; e != nil {
		s.known(e)
		n += fieldSize(s.metricIDField(e.Metric) + s.valueStatusField(e.Current))
	}
	return n
}

// valueStatusField is the size of a MetricValueStatus field: 0 when absent.
func (s *sizer) valueStatusField(m *pb.MetricValueStatus) int {
	if m == nil {
		return 0
	}
	s.known(m)
	return fieldSize(s.optStr(m.Value) + s.optStr(m.AverageValue) + optInt32Size(m.AverageUtilization))
}

func (s *sizer) objectRefField(m *pb.CrossVersionObjectReference) int {
	if m == nil {
		return 0
	}
	s.known(m)
	return fieldSize(s.str(m.ApiVersion) + s.str(m.Kind) + s.str(m.Name))
}

func (s *sizer) metricIDField(m *pb.MetricIdentifier) int {
	if m == nil {
		return 0
	}
	s.known(m)
	n := s.str(m.Name)
	if sel := m.Selector; sel != nil {
		n += fieldSize(s.selector(sel))
	}
	if src := m.Source; src != nil {
		s.known(src)
		n += fieldSize(s.str(src.ApiGroup))
	}
	return fieldSize(n)
}

func (s *sizer) selector(m *pb.LabelSelector) int {
	s.known(m)
	n := 0
	if len(m.MatchLabels) > 1 {
		s.unsure = true // see responseSize
	}
	for k, v := range m.MatchLabels {
		n += fieldSize(s.strAlways(k) + s.strAlways(v))
	}
	for _, e := range m.MatchExpressions {
		n += fieldSize(s.requirement(e))
	}
	return n
}

func (s *sizer) requirement(m *pb.LabelSelectorRequirement) int {
	if m == nil {
		return 0
	}
	s.known(m)
	n := s.str(m.Key) + s.str(m.Operator)
	for _, v := range m.Values {
		n += s.strAlways(v)
	}
	return n
}

func (s *sizer) condition(m *pb.Condition) int {
	if m == nil {
		return 0
	}
	s.known(m)
	n := s.str(m.Type) + s.str(m.Status) + s.str(m.Reason) + s.str(m.Message)
	if m.LastTransitionTime != nil {
		n += fieldSize(s.timestamp(m.LastTransitionTime))
	}
	return n
}

func (s *sizer) explanation(m *pb.Explanation) int {
	s.known(m)
	n := s.str(m.Message) + int32Size(m.WinningMetric) + int32Size(m.Proposal) + int32Size(m.Stabilized) +
		int32Size(m.Limited) + s.str(m.LimitingPolicy) + int32Size(m.Final) + s.str(m.LimitReason)
	for _, e := range m.Metrics {
		n += fieldSize(s.metricExplanation(e))
	}
	if m.StabilizationWindow != nil {
		n += fieldSize(s.duration(m.StabilizationWindow))
	}
	return n
}

func (s *sizer) metricExplanation(m *pb.MetricExplanation) int {
	if m == nil {
		return 0
	}
	s.known(m)
	return int32Size(m.Index) + s.str(m.Name) + int32Size(m.Proposal) + doubleSize(m.UsageRatio) +
		int32Size(m.ReadyPods) + int32Size(m.IgnoredPods) + int32Size(m.MissingPods) + int32Size(m.UnreadyPods) +
		s.str(m.Error)
}

// writer writes an encoding back to front: b[i:] is written, and each field goes just before
// it, so a message's fields are written last to first and its length, known once its content
// is written, goes before the content without a second pass or a copy.
type writer struct {
	b []byte
	i int
}

func (w *writer) writeByte(c byte) {
	w.i--
	w.b[w.i] = c
}

func (w *writer) tag(num byte, typ uint64) { w.writeByte(num<<3 | byte(typ)) }

func (w *writer) varint(v uint64) {
	if v < 0x80 { // inlined: tags, lengths and counts mostly
		w.writeByte(byte(v))
		return
	}
	w.longVarint(v)
}

//go:noinline
func (w *writer) longVarint(v uint64) {
	n := protowire.SizeVarint(v)
	w.i -= n
	b := w.b[w.i : w.i+n]
	for j := range n - 1 {
		b[j] = byte(v) | 0x80
		v >>= 7
	}
	b[n-1] = byte(v)
}

// str writes a string field with implicit presence.
func (w *writer) str(num byte, v string) {
	if v != "" {
		w.strAlways(num, v)
	}
}

func (w *writer) strAlways(num byte, v string) {
	w.i -= len(v)
	copy(w.b[w.i:], v)
	w.varint(uint64(len(v)))
	w.tag(num, bytesType)
}

func (w *writer) optStr(num byte, v *string) {
	if v != nil {
		w.strAlways(num, *v)
	}
}

func (w *writer) int32(num byte, v int32) {
	if v != 0 {
		w.varint(uint64(v))
		w.tag(num, varintType)
	}
}

func (w *writer) optInt32(num byte, v *int32) {
	if v != nil {
		w.varint(uint64(*v))
		w.tag(num, varintType)
	}
}

func (w *writer) double(num byte, v float64) {
	if v == 0 && !math.Signbit(v) {
		return
	}
	w.i -= 8
	binary.LittleEndian.PutUint64(w.b[w.i:], math.Float64bits(v))
	w.tag(num, fixed64Type)
}

// field writes the tag and length of a length-delimited field whose content was written
// since w.i was end.
func (w *writer) field(num byte, end int) {
	w.varint(uint64(end - w.i))
	w.tag(num, bytesType)
}

// secondsNanos writes a Timestamp or a Duration message field.
func (w *writer) secondsNanos(num byte, seconds int64, nanos int32) {
	end := w.i
	w.int32(2, nanos)
	if seconds != 0 {
		w.varint(uint64(seconds))
		w.tag(1, varintType)
	}
	w.field(num, end)
}

func (w *writer) response(m *pb.RecommendResponse) {
	if m.Explanation != nil {
		end := w.i
		w.explanation(m.Explanation)
		w.field(8, end)
	}
	for i := len(m.Conditions) - 1; i >= 0; i-- {
		end := w.i
		w.condition(m.Conditions[i])
		w.field(7, end)
	}
	for i := len(m.CurrentMetrics) - 1; i >= 0; i-- {
		end := w.i
		w.metricStatus(m.CurrentMetrics[i])
		w.field(6, end)
	}
	w.str(5, m.RecommendationId)
	if m.Scale {
		w.writeByte(1)
		w.tag(4, varintType)
	}
	w.int32(3, m.CurrentReplicas)
	w.int32(2, m.DesiredReplicas)
	if t := m.DecisionTime; t != nil {
		w.secondsNanos(1, t.Seconds, t.Nanos)
	}
}

func (w *writer) metricStatus(m *pb.MetricStatus) {
	if m == nil {
		return
	}
	if e := m.External; e != nil {
		end := w.i
		w.metricCurrent(e.Metric, e.Current)
		w.field(6, end)
	}
	if o := m.Object; o != nil {
		end := w.i
		w.objectRef(3, o.DescribedObject)
		w.metricCurrent(o.Metric, o.Current)
		w.field(5, end)
	}
	if p := m.Pods; p != nil {
		end := w.i
		w.metricCurrent(p.Metric, p.Current)
		w.field(4, end)
	}
	if r := m.ContainerResource; r != nil {
		end := w.i
		w.str(3, r.Container)
		w.valueStatus(2, r.Current)
		w.str(1, r.Name)
		w.field(3, end)
	}
	if r := m.Resource; r != nil {
		end := w.i
		w.valueStatus(2, r.Current)
		w.str(1, r.Name)
		w.field(2, end)
	}
	w.str(1, m.Type)
}

// metricCurrent writes fields 1 and 2 of the Pods, Object and External statuses: metric and
// current.
func (w *writer) metricCurrent(id *pb.MetricIdentifier, current *pb.MetricValueStatus) {
	w.valueStatus(2, current)
	if id == nil {
		return
	}
	end := w.i
	if src := id.Source; src != nil {
		srcEnd := w.i
		w.str(1, src.ApiGroup)
		w.field(3, srcEnd)
	}
	if sel := id.Selector; sel != nil {
		selEnd := w.i
		w.selector(sel)
		w.field(2, selEnd)
	}
	w.str(1, id.Name)
	w.field(1, end)
}

func (w *writer) valueStatus(num byte, m *pb.MetricValueStatus) {
	if m == nil {
		return
	}
	end := w.i
	w.optInt32(3, m.AverageUtilization)
	w.optStr(2, m.AverageValue)
	w.optStr(1, m.Value)
	w.field(num, end)
}

func (w *writer) objectRef(num byte, m *pb.CrossVersionObjectReference) {
	if m == nil {
		return
	}
	end := w.i
	w.str(3, m.Name)
	w.str(2, m.Kind)
	w.str(1, m.ApiVersion)
	w.field(num, end)
}

func (w *writer) selector(m *pb.LabelSelector) {
	for i := len(m.MatchExpressions) - 1; i >= 0; i-- {
		end := w.i
		if e := m.MatchExpressions[i]; e != nil {
			for j := len(e.Values) - 1; j >= 0; j-- {
				w.strAlways(3, e.Values[j])
			}
			w.str(2, e.Operator)
			w.str(1, e.Key)
		}
		w.field(2, end)
	}
	for k, v := range m.MatchLabels { // at most one entry (responseSize)
		end := w.i
		w.strAlways(2, v)
		w.strAlways(1, k)
		w.field(1, end)
	}
}

func (w *writer) condition(m *pb.Condition) {
	if m == nil {
		return
	}
	if t := m.LastTransitionTime; t != nil {
		w.secondsNanos(5, t.Seconds, t.Nanos)
	}
	w.str(4, m.Message)
	w.str(3, m.Reason)
	w.str(2, m.Status)
	w.str(1, m.Type)
}

func (w *writer) explanation(m *pb.Explanation) {
	w.str(10, m.LimitReason)
	w.int32(9, m.Final)
	w.str(8, m.LimitingPolicy)
	w.int32(7, m.Limited)
	if d := m.StabilizationWindow; d != nil {
		w.secondsNanos(6, d.Seconds, d.Nanos)
	}
	w.int32(5, m.Stabilized)
	w.int32(4, m.Proposal)
	w.int32(3, m.WinningMetric)
	for i := len(m.Metrics) - 1; i >= 0; i-- {
		end := w.i
		w.metricExplanation(m.Metrics[i])
		w.field(2, end)
	}
	w.str(1, m.Message)
}

func (w *writer) metricExplanation(m *pb.MetricExplanation) {
	if m == nil {
		return
	}
	w.str(9, m.Error)
	w.int32(8, m.UnreadyPods)
	w.int32(7, m.MissingPods)
	w.int32(6, m.IgnoredPods)
	w.int32(5, m.ReadyPods)
	w.double(4, m.UsageRatio)
	w.int32(3, m.Proposal)
	w.str(2, m.Name)
	w.int32(1, m.Index)
}
