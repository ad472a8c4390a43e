package workload

import (
	"fmt"
	"strconv"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

// The generator's hot loop writes each Recommend request's wire encoding directly instead of
// building the message and marshalling it: in profiles, building took 13 % of the generator's
// CPU and marshalling 17 %, CPU that on a shared machine is taken from the server it measures
// (BenchmarkRequest: about 30 times less time per request, one allocation instead of 358). The
// encoding is the one proto.Marshal would write for the message RequestWithPods builds (same
// fields, in field-number order, each once), so the server decodes the very same request.

// wireParts are the encodings of what all the requests of a workload share. They are
// marshalled once from the messages RequestWithPods uses, so the two encodings cannot drift.
type wireParts struct {
	// spec is RecommendRequest's spec field, tag, length and message, as every target sends it
	// with SetSharedSpec.
	spec []byte
	// specRef is the spec's scaleTargetRef's fields before its name (field 3), and specTail
	// the spec's fields after its scaleTargetRef (field 1): what the specs of all targets share.
	specRef, specTail []byte
	// specs are the spec messages of every target, with SetDistinctSpecs (else nil).
	specs [][]byte
	// podTail is a PodState's fields after its name (field 1).
	podTail []byte
	// window is PodMetricValue's window field (4), the last.
	window []byte
}

func newWireParts(w *Workload) wireParts {
	ref := proto.CloneOf(w.spec.ScaleTargetRef)
	ref.Name = ""
	rest := proto.CloneOf(w.spec)
	rest.ScaleTargetRef = nil
	return wireParts{
		spec:     mustMarshal("spec", &pb.RecommendRequest{Spec: w.spec}),
		specRef:  mustMarshal("scaleTargetRef", ref),
		specTail: mustMarshal("spec", rest),
		podTail:  mustMarshal("pod", w.pod("", proto.Bool(true))),
		window:   mustMarshal("sample window", &pb.PodMetricValue{Window: w.window}),
	}
}

// mustMarshal encodes m deterministically (map entries sorted). The messages it is given are
// the workload's constants; failing to encode them is a bug.
func mustMarshal(what string, m proto.Message) []byte {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		panic(fmt.Errorf("workload: encode the %s of every request: %w", what, err))
	}
	return b
}

// AppendRequest appends to b the wire encoding of the request Request(i, now) would return,
// without building it, and counts the call as Request does.
func (w *Workload) AppendRequest(b []byte, i int, now time.Time) []byte {
	return w.appendRequestWithPods(b, i, w.targets[i].replicas.Load(), now)
}

// appendRequestWithPods is RequestWithPods's request, encoded.
func (w *Workload) appendRequestWithPods(b []byte, i int, replicas int32, now time.Time) []byte {
	c := w.nextCall(i, replicas, now)
	b = w.appendRef(b, 1, i)
	b = w.appendSpec(b, 2, i)
	if replicas != 0 {
		b = protowire.AppendTag(b, 3, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(replicas))
	}
	var start int
	for j := range int(replicas) {
		b, start = openField(b, 5)
		b = appendPodName(b, 1, i, j)
		b = append(b, w.wire.podTail...)
		b = closeField(b, start)
	}
	b = w.appendSamples(b, 6, i, replicas, c)
	// The queue depth: a MetricObservation with one value (field 3).
	b, start = openField(b, 6)
	b, v := openField(b, 3)
	b = strconv.AppendInt(b, c.queue, 10)
	b = closeField(b, v)
	return closeField(b, start)
}

// appendRef appends target i's reference as message field num.
func (w *Workload) appendRef(b []byte, num protowire.Number, i int) []byte {
	b, start := openField(b, num)
	b = appendString(b, 1, w.cluster)
	b = appendString(b, 2, w.namespace)
	b, name := openField(b, 3)
	b = append(b, targetPrefix...)
	b = strconv.AppendInt(b, int64(i), 10)
	b = closeField(b, name)
	return closeField(b, start)
}

// appendSpec appends target i's spec (specOf) as message field num.
func (w *Workload) appendSpec(b []byte, num protowire.Number, i int) []byte {
	if w.sharedSpec {
		return append(b, w.wire.spec...)
	}
	b, start := openField(b, num)
	if w.wire.specs != nil {
		b = append(b, w.wire.specs[i]...)
		return closeField(b, start)
	}
	b, ref := openField(b, 1)
	b = append(b, w.wire.specRef...)
	b, name := openField(b, 3)
	b = append(b, targetPrefix...)
	b = strconv.AppendInt(b, int64(i), 10)
	b = closeField(b, name)
	b = closeField(b, ref)
	b = append(b, w.wire.specTail...)
	return closeField(b, start)
}

// appendSamples appends, as MetricObservation field num, the CPU samples of call c of target i,
// one per pod.
func (w *Workload) appendSamples(b []byte, num protowire.Number, i int, replicas int32, c call) []byte {
	// The samples' timestamp and window are the same for all: encoded once.
	var tailBuf [64]byte
	tail := appendTimestamp(tailBuf[:0], 3, c.sampleTime)
	tail = append(tail, w.wire.window...)

	b, start := openField(b, num)
	for j := range int(replicas) {
		var sample, value int
		b, sample = openField(b, 1) // pod_values
		b = appendPodName(b, 1, i, j)
		b, value = openField(b, 2)
		b = strconv.AppendInt(b, c.sample(j), 10)
		b = append(b, 'm')
		b = closeField(b, value)
		b = append(b, tail...)
		b = closeField(b, sample)
	}
	return closeField(b, start)
}

// appendPodName appends pod j of target i's name (podPrefix(i) and j) as string field num.
func appendPodName(b []byte, num protowire.Number, i, j int) []byte {
	b, start := openField(b, num)
	b = append(b, targetPrefix...)
	b = strconv.AppendInt(b, int64(i), 10)
	b = append(b, '-')
	b = strconv.AppendInt(b, int64(j), 10)
	return closeField(b, start)
}

// appendTimestamp appends t as google.protobuf.Timestamp field num, as timestamppb.New(t).
func appendTimestamp(b []byte, num protowire.Number, t time.Time) []byte {
	b, start := openField(b, num)
	if s := t.Unix(); s != 0 {
		b = protowire.AppendTag(b, 1, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(s))
	}
	if ns := t.Nanosecond(); ns != 0 {
		b = protowire.AppendTag(b, 2, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(ns))
	}
	return closeField(b, start)
}

// appendString appends string field num, unless s is empty: proto3 leaves it out then.
func appendString(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

// openField appends the tag of length-delimited field num and one byte for its length, and
// returns where its content starts. The content is appended next, then closeField writes its
// length. Lengths are written after the content so that nothing is measured twice.
func openField(b []byte, num protowire.Number) ([]byte, int) {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	b = append(b, 0)
	return b, len(b)
}

// closeField writes the length of the field whose content started at start and runs to the end
// of b. Most fields are under 128 bytes, one byte of length; the content of a longer one (the
// list of samples) is moved right to make room for its length.
func closeField(b []byte, start int) []byte {
	n := len(b) - start
	if n < 0x80 {
		b[start-1] = byte(n)
		return b
	}
	k := protowire.SizeVarint(uint64(n))
	b = append(b, make([]byte, k-1)...)
	copy(b[start-1+k:], b[start:start+n])
	protowire.AppendVarint(b[:start-1], uint64(n))
	return b
}
