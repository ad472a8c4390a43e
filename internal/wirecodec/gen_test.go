package wirecodec

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

var deterministic = proto.MarshalOptions{Deterministic: true}

// check decodes b with the codec (taking its DecodeError, as the server does) and with
// proto.Unmarshal and fails t unless both fail with the same error (the codec leaving the
// request empty) or both succeed with equal messages whose deterministic encodings (unknown
// fields included) are equal. It reports whether the fast path decoded b by itself.
func check(t testing.TB, b []byte) (fast bool) {
	t.Helper()
	want := new(pb.RecommendRequest)
	werr := proto.Unmarshal(b, want)

	// The codec gets its own copy in two buffers (materialized into a pooled one) and a
	// message holding something already; the copy is cleared after decoding, which would
	// show in the result if it referred to the input.
	in := bytes.Clone(b)
	half := len(in) / 2
	data := mem.BufferSlice{mem.SliceBuffer(in[:half]), mem.SliceBuffer(in[half:])}
	// The codec is the server's, pooled: the messages of every request checked before were
	// cleared and recycled, and would show here had anything of them survived.
	got := &pb.RecommendRequest{CurrentReplicas: 7, Pods: []*pb.PodState{{Name: "stale"}}}
	defer releaseChecked(t, got)
	if err := (Codec{Pooled: true}).Unmarshal(data, got); err != nil {
		t.Fatalf("codec returned %v: a request's decoding error is for DecodeError\ninput %x", err, b)
	}
	gerr := DecodeError(got) // as the server asks
	clear(in)

	switch {
	case (werr == nil) != (gerr == nil):
		t.Fatalf("proto.Unmarshal: %v; codec: %v\ninput %x", werr, gerr, b)
	case werr != nil:
		if werr.Error() != gerr.Error() {
			t.Fatalf("proto.Unmarshal: %v; codec: %v\ninput %x", werr, gerr, b)
		}
		if !proto.Equal(got, new(pb.RecommendRequest)) {
			t.Fatalf("a request that did not decode was left %v, want empty\ninput %x", got, b)
		}
		return false
	}
	if !proto.Equal(want, got) { // NaNs are equal here, not to cmp
		t.Fatalf("codec and proto.Unmarshal differ (-proto.Unmarshal +codec):\n%s\ninput %x", cmp.Diff(want, got, protocmp.Transform()), b)
	}
	wb, err := deterministic.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	gb, err := deterministic.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(wb, gb) {
		t.Fatalf("re-encodings differ:\nproto.Unmarshal %x\ncodec           %x\ninput %x", wb, gb, b)
	}
	return decodeFast(b, new(pb.RecommendRequest))
}

// decodeFast is decodeInto with messages of its own: whether the fast path decodes b by itself.
func decodeFast(b []byte, m *pb.RecommendRequest) bool {
	var n counts
	n.request(b)
	return decodeInto(b, m, newSlabs(n))
}

// releaseChecked releases m as the server does and fails t unless the codec holds nothing
// more for it and, when it lent m recycled messages (the fast path decoded m), m is left
// without pods and metrics.
func releaseChecked(t testing.TB, m *pb.RecommendRequest) {
	t.Helper()
	_, pooled := lent.Load(m)
	Release(m)
	if pooled && (len(m.Pods) != 0 || len(m.Metrics) != 0) {
		t.Fatalf("a released request still has %d pods and %d metrics", len(m.Pods), len(m.Metrics))
	}
	if _, held := lent.Load(m); held {
		t.Fatal("the codec still holds a released request's messages")
	}
}

// realisticRequest is a typical Recommend, as the load tool sends it: 20 running, ready pods
// with one container requesting cpu and memory, their CPU samples, a queue depth; the spec
// has a Resource and an External metric and a behavior.
func realisticRequest(now time.Time) *pb.RecommendRequest {
	start := timestamppb.New(now.Add(-time.Hour).Truncate(time.Second))
	sampled := timestamppb.New(now.Add(-10 * time.Second).Truncate(time.Second))
	window := durationpb.New(30 * time.Second)
	ready := true
	pods := make([]*pb.PodState, 20)
	samples := make([]*pb.PodMetricValue, len(pods))
	for i := range pods {
		name := "web-7d9f8b6c5d-" + strconv.Itoa(10000+i)
		pods[i] = &pb.PodState{
			Name: name, Phase: "Running", Ready: &ready,
			ReadyTransitionTime: start, StartTime: start,
			Containers: []*pb.ContainerState{{Name: "app", Requests: map[string]string{"cpu": "500m", "memory": "256Mi"}}},
		}
		samples[i] = &pb.PodMetricValue{Pod: name, Value: strconv.Itoa(430+i*3) + "m", Timestamp: sampled, Window: window}
	}
	return &pb.RecommendRequest{
		Target:          &pb.TargetRef{Cluster: "prod-eu-1", Namespace: "shop", Name: "web"},
		Spec:            realisticSpec(),
		CurrentReplicas: int32(len(pods)),
		Pods:            pods,
		Metrics: []*pb.MetricObservation{
			{PodValues: samples},
			{Values: []string{"300"}},
		},
	}
}

func realisticSpec() *pb.HorizontalPodAutoscalerSpec {
	return &pb.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: &pb.CrossVersionObjectReference{ApiVersion: "apps/v1", Kind: "Deployment", Name: "web"},
		MinReplicas:    proto.Int32(2),
		MaxReplicas:    40,
		Metrics: []*pb.MetricSpec{
			{Type: "Resource", Resource: &pb.ResourceMetricSource{
				Name: "cpu", Target: &pb.MetricTarget{Type: "Utilization", AverageUtilization: proto.Int32(60)},
			}},
			{Type: "External", External: &pb.ExternalMetricSource{
				Metric: &pb.MetricIdentifier{Name: "queue_messages_ready", Selector: &pb.LabelSelector{MatchLabels: map[string]string{"queue": "work"}}},
				Target: &pb.MetricTarget{Type: "AverageValue", AverageValue: proto.String("30")},
			}},
		},
		Behavior: &pb.HorizontalPodAutoscalerBehavior{
			ScaleUp: &pb.HPAScalingRules{
				StabilizationWindowSeconds: proto.Int32(0),
				SelectPolicy:               proto.String("Max"),
				Policies: []*pb.HPAScalingPolicy{
					{Type: "Percent", Value: 100, PeriodSeconds: 15},
					{Type: "Pods", Value: 4, PeriodSeconds: 15},
				},
			},
			ScaleDown: &pb.HPAScalingRules{
				StabilizationWindowSeconds: proto.Int32(30),
				Policies:                   []*pb.HPAScalingPolicy{{Type: "Percent", Value: 20, PeriodSeconds: 15}},
			},
		},
	}
}

// commonStrings are drawn often, so that equal strings meet in the decoder's table; the long
// one is past maxInterned.
var commonStrings = []string{"", "cpu", "memory", "Running", "500m", "256Mi", "app", "web-0", "web-1", "ü", "日本語", "🙂", strings.Repeat("long-", 20)}

func randString(r *rand.Rand) string {
	if r.IntN(2) == 0 {
		return commonStrings[r.IntN(len(commonStrings))]
	}
	n := r.IntN(12)
	if r.IntN(8) == 0 {
		n = 60 + r.IntN(20) // around maxInterned
	}
	var sb strings.Builder
	for range n {
		if r.IntN(2) == 0 {
			sb.WriteByte(byte(' ' + r.IntN(95)))
			continue
		}
		for {
			if c := rune(r.Int32N(utf8.MaxRune + 1)); utf8.ValidRune(c) {
				sb.WriteRune(c)
				break
			}
		}
	}
	return sb.String()
}

func randScalar(r *rand.Rand, fd protoreflect.FieldDescriptor) protoreflect.Value {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(r.IntN(2) == 0)
	case protoreflect.Int32Kind:
		edge := []int32{0, 1, -1, 127, 128, math.MaxInt32, math.MinInt32}
		if r.IntN(2) == 0 {
			return protoreflect.ValueOfInt32(edge[r.IntN(len(edge))])
		}
		return protoreflect.ValueOfInt32(r.Int32() - r.Int32())
	case protoreflect.Int64Kind:
		edge := []int64{0, 1, -1, math.MaxInt64, math.MinInt64, t0.Unix()}
		if r.IntN(2) == 0 {
			return protoreflect.ValueOfInt64(edge[r.IntN(len(edge))])
		}
		return protoreflect.ValueOfInt64(r.Int64() - r.Int64())
	case protoreflect.DoubleKind:
		edge := []float64{0, math.Copysign(0, -1), 0.1, math.Inf(1), math.NaN(), math.MaxFloat64}
		if r.IntN(2) == 0 {
			return protoreflect.ValueOfFloat64(edge[r.IntN(len(edge))])
		}
		return protoreflect.ValueOfFloat64(r.NormFloat64())
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(randString(r))
	}
	panic("randScalar: no generator for " + fd.Kind().String() + " (" + string(fd.FullName()) + ")")
}

// fill sets a random subset of m's fields, recursively, through reflection, so that every
// field of the schema is covered: strings of any script, optional fields set or not,
// submessages absent, empty or filled, lists and maps empty or not, many pods.
func fill(r *rand.Rand, m protoreflect.Message) {
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if r.IntN(4) == 0 {
			continue
		}
		switch {
		case fd.IsList():
			n := r.IntN(4)
			if fd.FullName() == "recommender.v1.RecommendRequest.pods" {
				n = r.IntN(30)
			}
			l := m.Mutable(fd).List()
			for range n {
				if fd.Message() == nil {
					l.Append(randScalar(r, fd))
					continue
				}
				e := l.NewElement()
				if r.IntN(8) != 0 {
					fill(r, e.Message())
				}
				l.Append(e)
			}
		case fd.IsMap():
			mp := m.Mutable(fd).Map()
			for range r.IntN(4) {
				mp.Set(randScalar(r, fd.MapKey()).MapKey(), randScalar(r, fd.MapValue()))
			}
		case fd.Message() != nil:
			child := m.Mutable(fd).Message() // present, even when left empty
			if r.IntN(6) != 0 {
				fill(r, child)
			}
		default:
			m.Set(fd, randScalar(r, fd))
		}
	}
}

func randRequest(r *rand.Rand) *pb.RecommendRequest {
	m := new(pb.RecommendRequest)
	fill(r, m.ProtoReflect())
	return m
}

var requestDesc = (&pb.RecommendRequest{}).ProtoReflect().Descriptor()

// rewrite re-encodes the message b of type md field by field, recursively, with random changes
// that keep it a valid encoding, though not always of the same message: fields in another
// order (which also splits runs of repeated fields), a field twice (a repeated field gains an
// element, a scalar is overwritten, a singular message merges, a map key is overwritten), a
// singular message split in two occurrences that merge, a field dropped (map entries lose
// their key or value). With unknown it also inserts fields the schema does not have, or has
// with another wire type.
func rewrite(r *rand.Rand, b []byte, md protoreflect.MessageDescriptor, unknown bool) []byte {
	return bytes.Join(rewriteFields(r, b, md, unknown), nil)
}

func rewriteFields(r *rand.Rand, b []byte, md protoreflect.MessageDescriptor, unknown bool) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		num, typ, tn := protowire.ConsumeTag(b)
		if tn < 0 {
			panic("rewrite: invalid input")
		}
		n := protowire.ConsumeFieldValue(num, typ, b[tn:])
		if n < 0 {
			panic("rewrite: invalid input")
		}
		field := b[:tn+n]
		b = b[tn+n:]
		fd := md.Fields().ByNumber(num)
		if fd == nil || typ != protowire.BytesType || fd.Message() == nil {
			out = append(out, field)
			continue
		}
		v, _ := protowire.ConsumeBytes(field[tn:])
		inner := rewriteFields(r, v, fd.Message(), unknown)
		if !fd.IsList() && !fd.IsMap() && len(inner) > 1 && r.IntN(4) == 0 {
			i := 1 + r.IntN(len(inner)-1)
			out = append(out, messageField(num, inner[:i]), messageField(num, inner[i:]))
			continue
		}
		out = append(out, messageField(num, inner))
	}
	if r.IntN(3) == 0 {
		r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	}
	if len(out) > 0 && r.IntN(4) == 0 {
		out = insertAt(r, out, out[r.IntN(len(out))])
	}
	if len(out) > 0 && r.IntN(8) == 0 {
		i := r.IntN(len(out))
		out = append(out[:i], out[i+1:]...)
	}
	if unknown && r.IntN(3) == 0 {
		out = insertAt(r, out, unknownField(r, md))
	}
	return out
}

func insertAt(r *rand.Rand, fields [][]byte, f []byte) [][]byte {
	i := r.IntN(len(fields) + 1)
	return append(fields[:i], append([][]byte{f}, fields[i:]...)...)
}

func messageField(num protowire.Number, fields [][]byte) []byte {
	b := protowire.AppendTag(nil, num, protowire.BytesType)
	return protowire.AppendBytes(b, bytes.Join(fields, nil))
}

// unknownField is a field md does not have: an unused number of any wire type (groups
// included), or a field of md with a wire type it does not have.
func unknownField(r *rand.Rand, md protoreflect.MessageDescriptor) []byte {
	num := protowire.MaxValidNumber
	if r.IntN(4) != 0 {
		num = protowire.Number(1 + r.IntN(40))
	}
	typ := []protowire.Type{protowire.VarintType, protowire.Fixed32Type, protowire.Fixed64Type, protowire.BytesType, protowire.StartGroupType}[r.IntN(5)]
	if fd := md.Fields().ByNumber(num); fd != nil {
		// A known number: with a wire type other than its own (strings, messages and maps are
		// length-delimited, the scalars of this schema are varints or a fixed64 double).
		own := protowire.VarintType
		switch fd.Kind() {
		case protoreflect.StringKind, protoreflect.MessageKind:
			own = protowire.BytesType
		case protoreflect.DoubleKind:
			own = protowire.Fixed64Type
		}
		if typ == own {
			typ = protowire.Fixed32Type
		}
	}
	b := protowire.AppendTag(nil, num, typ)
	switch typ {
	case protowire.VarintType:
		b = protowire.AppendVarint(b, r.Uint64()>>r.IntN(64))
	case protowire.Fixed32Type:
		b = protowire.AppendFixed32(b, r.Uint32())
	case protowire.Fixed64Type:
		b = protowire.AppendFixed64(b, r.Uint64())
	case protowire.BytesType:
		b = protowire.AppendString(b, randString(r))
	case protowire.StartGroupType:
		b = protowire.AppendTag(b, 1, protowire.VarintType)
		b = protowire.AppendVarint(b, r.Uint64())
		b = protowire.AppendTag(b, 2, protowire.BytesType)
		b = protowire.AppendString(b, randString(r))
		b = protowire.AppendTag(b, num, protowire.EndGroupType)
	}
	return b
}
