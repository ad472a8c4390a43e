package wirecodec

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/hpa-recommender/hpa-recommender/internal/apiconv"
	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
	"github.com/hpa-recommender/hpa-recommender/recommender"
)

// fastMarshal is the fast encoder alone, into a buffer of its own: m's encoding, or false when
// it hands m over to the default codec.
func fastMarshal(m *pb.RecommendResponse) ([]byte, bool) {
	n, ok := responseSize(m)
	if !ok {
		return nil, false
	}
	b := make([]byte, n)
	return b, writeResponse(b, m)
}

// eachMessage calls fn on m and on every message in it, depth first.
func eachMessage(m protoreflect.Message, fn func(protoreflect.Message)) {
	fn(m)
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsMap():
			if fd.MapValue().Message() != nil {
				v.Map().Range(func(_ protoreflect.MapKey, v protoreflect.Value) bool {
					eachMessage(v.Message(), fn)
					return true
				})
			}
		case fd.IsList():
			if fd.Message() != nil {
				for i := range v.List().Len() {
					eachMessage(v.List().Get(i).Message(), fn)
				}
			}
		case fd.Message() != nil:
			eachMessage(v.Message(), fn)
		}
		return true
	})
}

// promisable is what the fast encoder must decide by itself, found here through reflection:
// whether m holds nothing that makes it hand over to the default codec (unknown fields,
// invalid UTF-8, a map of more than one entry). multiMap reports the last of these.
func promisable(m *pb.RecommendResponse) (ok, multiMap bool) {
	ok = true
	eachMessage(m.ProtoReflect(), func(m protoreflect.Message) {
		if len(m.GetUnknown()) > 0 {
			ok = false
		}
		m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
			switch {
			case fd.IsMap():
				if v.Map().Len() > 1 {
					ok, multiMap = false, true
				}
				v.Map().Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
					if !utf8.ValidString(k.String()) || !utf8.ValidString(v.String()) {
						ok = false
					}
					return true
				})
			case fd.IsList() && fd.Kind() == protoreflect.StringKind:
				for i := range v.List().Len() {
					if !utf8.ValidString(v.List().Get(i).String()) {
						ok = false
					}
				}
			case fd.Kind() == protoreflect.StringKind:
				if !utf8.ValidString(v.String()) {
					ok = false
				}
			}
			return true
		})
	})
	return ok, multiMap
}

// checkResponse fails t unless the codec marshals m as the default codec does: the fast
// encoder exactly when promisable says so, with proto.Marshal's bytes; otherwise the default
// codec's bytes or error. Maps of more than one entry come out in random order from
// protobuf-go, so those encodings are compared decoded. It reports whether the fast encoder
// encoded m.
func checkResponse(t testing.TB, m *pb.RecommendResponse) (fast bool) {
	t.Helper()
	want, werr := proto.Marshal(m)
	got, fast := fastMarshal(m)
	promised, multiMap := promisable(m)
	if fast != promised {
		t.Fatalf("the fast encoder took the message: %v; want %v\n%v", fast, promised, m)
	}
	if fast && !bytes.Equal(got, want) {
		t.Fatalf("fast encoder and proto.Marshal differ:\nfast          %x\nproto.Marshal %x\n%v", got, want, m)
	}

	data, gerr := Codec{}.Marshal(m)
	defer data.Free()
	switch {
	case werr != nil || gerr != nil:
		_, derr := defaultCodec.Marshal(m)
		if gerr == nil || derr == nil || gerr.Error() != werr.Error() || gerr.Error() != derr.Error() || !errors.Is(gerr, proto.Error) {
			t.Fatalf("proto.Marshal: %v; default codec: %v; codec: %v\n%v", werr, derr, gerr, m)
		}
	case multiMap:
		out := new(pb.RecommendResponse)
		if err := proto.Unmarshal(data.Materialize(), out); err != nil || !proto.Equal(m, out) {
			t.Fatalf("codec's encoding decodes to %v (%v), want %v", out, err, m)
		}
	case !bytes.Equal(data.Materialize(), want):
		t.Fatalf("codec and proto.Marshal differ:\ncodec         %x\nproto.Marshal %x\n%v", data.Materialize(), want, m)
	}
	return fast
}

func randResponse(r *rand.Rand) *pb.RecommendResponse {
	m := new(pb.RecommendResponse)
	fill(r, m.ProtoReflect())
	return m
}

// TestRandomResponsesMatchProtoMarshal: random responses (every field of every message set or
// not, sub-messages absent, empty or filled, lists and maps of 0 to 3 elements, edge values of
// every scalar: negative and extreme integers, NaN, infinities, -0) encode as proto.Marshal
// encodes them, and on the fast path unless a map has several entries.
func TestRandomResponsesMatchProtoMarshal(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	n := 5000
	if testing.Short() {
		n = 500
	}
	fast := 0
	for range n {
		if checkResponse(t, randResponse(r)) {
			fast++
		}
	}
	if fast < n*3/4 {
		t.Fatalf("only %d of %d responses took the fast path; the generator is off", fast, n)
	}
}

// setEvery sets every field of m, recursively: lists get two elements, maps one entry,
// scalars the value of value.
func setEvery(t *testing.T, m protoreflect.Message, value func(*testing.T, protoreflect.FieldDescriptor) protoreflect.Value) {
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		switch {
		case fd.IsMap():
			if fd.MapValue().Message() != nil {
				t.Fatalf("%s: a map of messages; the test (and encode.go) does not handle them", fd.FullName())
			}
			m.Mutable(fd).Map().Set(value(t, fd.MapKey()).MapKey(), value(t, fd.MapValue()))
		case fd.IsList():
			l := m.Mutable(fd).List()
			for range 2 {
				if fd.Message() == nil {
					l.Append(value(t, fd))
					continue
				}
				e := l.NewElement()
				setEvery(t, e.Message(), value)
				l.Append(e)
			}
		case fd.Message() != nil:
			setEvery(t, m.Mutable(fd).Message(), value)
		default:
			m.Set(fd, value(t, fd))
		}
	}
}

// nonZero is a value of fd's kind that is not zero and names fd, with varints of many bytes.
func nonZero(t *testing.T, fd protoreflect.FieldDescriptor) protoreflect.Value {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(true)
	case protoreflect.Int32Kind:
		return protoreflect.ValueOfInt32(-1 - int32(fd.Number()))
	case protoreflect.Int64Kind:
		return protoreflect.ValueOfInt64(1<<40 + int64(fd.Number()))
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(float64(fd.Number()) + 0.5)
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(string(fd.FullName()))
	}
	t.Fatalf("%s: no test value for kind %s; the encoder (encode.go) likely needs it too", fd.FullName(), fd.Kind())
	return protoreflect.Value{}
}

// zero is fd's zero value: implicit-presence fields stay unset, optional ones are set.
func zero(t *testing.T, fd protoreflect.FieldDescriptor) protoreflect.Value {
	switch v := nonZero(t, fd).Interface().(type) {
	case bool:
		return protoreflect.ValueOfBool(false)
	case int32:
		return protoreflect.ValueOfInt32(0)
	case int64:
		return protoreflect.ValueOfInt64(0)
	case float64:
		return protoreflect.ValueOfFloat64(0)
	case string:
		return protoreflect.ValueOfString("")
	default:
		t.Fatalf("%s: no zero value for %T", fd.FullName(), v)
		return protoreflect.Value{}
	}
}

// fullResponse is a response with every field of every message set (see setEvery), to value.
func fullResponse(t *testing.T, value func(*testing.T, protoreflect.FieldDescriptor) protoreflect.Value) *pb.RecommendResponse {
	m := new(pb.RecommendResponse)
	setEvery(t, m.ProtoReflect(), value)
	return m
}

// TestEveryResponseFieldIsEncoded fails when a field is added to a message of the response
// and encode.go does not write it: every field of every message reachable from
// RecommendResponse is set and the encoding must still be proto.Marshal's. With zero values,
// implicit-presence fields are left out and optional ones kept, as protobuf-go does.
func TestEveryResponseFieldIsEncoded(t *testing.T) {
	full := fullResponse(t, nonZero)
	types, fields := map[protoreflect.FullName]bool{}, 0
	eachMessage(full.ProtoReflect(), func(m protoreflect.Message) {
		md := m.Descriptor()
		if types[md.FullName()] {
			return
		}
		types[md.FullName()] = true
		for i := range md.Fields().Len() {
			fd := md.Fields().Get(i)
			fields++
			if !m.Has(fd) {
				t.Errorf("%s is not set: the test's message is not full", fd.FullName())
			}
			if od := fd.ContainingOneof(); od != nil && !od.IsSynthetic() {
				t.Errorf("%s is in oneof %s: encode.go does not handle oneofs", fd.FullName(), od.Name())
			}
		}
	})
	// RecommendResponse, Timestamp, Duration, MetricStatus and its five sources,
	// MetricValueStatus, MetricIdentifier, LabelSelector, LabelSelectorRequirement,
	// MetricSourceReference, CrossVersionObjectReference, Condition, Explanation,
	// MetricExplanation.
	if len(types) != 18 {
		t.Errorf("%d message types reachable from RecommendResponse, want 18 (update encode.go): %v", len(types), types)
	}
	t.Logf("%d message types, %d fields", len(types), fields)
	if !checkResponse(t, full) {
		t.Fatal("the fast encoder gave up on the full response")
	}
	if !checkResponse(t, fullResponse(t, zero)) {
		t.Fatal("the fast encoder gave up on the full response of zero values")
	}
}

// TestResponseEdgeCases: hand-made responses the random ones may miss.
func TestResponseEdgeCases(t *testing.T) {
	long := strings.Repeat("x", 20000) // a three-byte length
	tests := []struct {
		name string
		m    *pb.RecommendResponse
	}{
		{"empty", &pb.RecommendResponse{}},
		{"empty messages present", &pb.RecommendResponse{
			DecisionTime:   &timestamppb.Timestamp{},
			CurrentMetrics: []*pb.MetricStatus{{}, {Resource: &pb.ResourceMetricStatus{}}, {Pods: &pb.PodsMetricStatus{Metric: &pb.MetricIdentifier{Selector: &pb.LabelSelector{}, Source: &pb.MetricSourceReference{}}, Current: &pb.MetricValueStatus{}}}},
			Conditions:     []*pb.Condition{{}, {LastTransitionTime: &timestamppb.Timestamp{}}},
			Explanation:    &pb.Explanation{Metrics: []*pb.MetricExplanation{{}}, StabilizationWindow: &durationpb.Duration{}},
		}},
		{"nil list elements", &pb.RecommendResponse{
			CurrentMetrics: []*pb.MetricStatus{nil, {Object: &pb.ObjectMetricStatus{Metric: &pb.MetricIdentifier{Selector: &pb.LabelSelector{MatchExpressions: []*pb.LabelSelectorRequirement{nil, {Key: "k"}}}}}}},
			Conditions:     []*pb.Condition{nil, nil},
			Explanation:    &pb.Explanation{Metrics: []*pb.MetricExplanation{nil}},
		}},
		{"optional fields present and zero", &pb.RecommendResponse{CurrentMetrics: []*pb.MetricStatus{{External: &pb.ExternalMetricStatus{
			Current: &pb.MetricValueStatus{Value: proto.String(""), AverageValue: proto.String(""), AverageUtilization: proto.Int32(0)},
		}}}}},
		{"extreme integers", &pb.RecommendResponse{
			DecisionTime:    &timestamppb.Timestamp{Seconds: math.MinInt64, Nanos: math.MinInt32},
			DesiredReplicas: math.MaxInt32, CurrentReplicas: -1, Scale: true,
			Conditions:  []*pb.Condition{{LastTransitionTime: &timestamppb.Timestamp{Seconds: math.MaxInt64, Nanos: math.MaxInt32}}},
			Explanation: &pb.Explanation{WinningMetric: math.MinInt32, Final: 127, Limited: 128, StabilizationWindow: &durationpb.Duration{Seconds: -1, Nanos: -1}},
		}},
		{"doubles", &pb.RecommendResponse{Explanation: &pb.Explanation{Metrics: []*pb.MetricExplanation{
			{UsageRatio: math.Copysign(0, -1)}, {UsageRatio: math.NaN()}, {UsageRatio: math.Inf(-1)},
			{UsageRatio: math.SmallestNonzeroFloat64}, {UsageRatio: 0}, {UsageRatio: math.Float64frombits(0x7ff8_0000_0000_0001)},
		}}}},
		{"empty strings in lists and maps", &pb.RecommendResponse{CurrentMetrics: []*pb.MetricStatus{{Pods: &pb.PodsMetricStatus{Metric: &pb.MetricIdentifier{
			Selector: &pb.LabelSelector{MatchLabels: map[string]string{"": ""}, MatchExpressions: []*pb.LabelSelectorRequirement{{Values: []string{"", "a", ""}}, {Values: []string{}}}},
		}}}}}},
		{"long strings", &pb.RecommendResponse{RecommendationId: long[:127], Conditions: []*pb.Condition{{Message: long[:128]}, {Message: long}}, Explanation: &pb.Explanation{Message: long[:16384]}}},
		{"realistic", realisticResponse(t)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !checkResponse(t, tt.m) {
				t.Fatal("the fast encoder gave up")
			}
		})
	}
}

// stringSlots returns a setter for every string in m: string fields set or not, optional
// strings that are set, list elements, map keys and values.
func stringSlots(m protoreflect.Message) []func(string) {
	var slots []func(string)
	eachMessage(m, func(m protoreflect.Message) {
		fields := m.Descriptor().Fields()
		for i := range fields.Len() {
			fd := fields.Get(i)
			switch {
			case fd.IsMap():
				mp := m.Mutable(fd).Map()
				mp.Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
					slots = append(slots,
						func(s string) { mp.Clear(k); mp.Set(protoreflect.ValueOfString(s).MapKey(), v) },
						func(s string) { mp.Set(k, protoreflect.ValueOfString(s)) })
					return true
				})
			case fd.IsList() && fd.Kind() == protoreflect.StringKind:
				l := m.Mutable(fd).List()
				for j := range l.Len() {
					slots = append(slots, func(s string) { l.Set(j, protoreflect.ValueOfString(s)) })
				}
			case fd.Kind() == protoreflect.StringKind && (m.Has(fd) || !fd.HasPresence()):
				slots = append(slots, func(s string) { m.Set(fd, protoreflect.ValueOfString(s)) })
			}
		}
	})
	return slots
}

// TestInvalidUTF8GivesProtoMarshalsError: each string of a full response in turn made invalid
// UTF-8 makes the codec fail as proto.Marshal and the default codec do.
func TestInvalidUTF8GivesProtoMarshalsError(t *testing.T) {
	full := fullResponse(t, nonZero)
	n := len(stringSlots(full.ProtoReflect()))
	if n < 30 {
		t.Fatalf("only %d strings in the full response", n)
	}
	for i := range n {
		for _, bad := range []string{"\xff", "a\xc3(", "\xed\xa0\x80", "ok but \xf4\x90\x80\x80 not"} {
			m := proto.CloneOf(full)
			stringSlots(m.ProtoReflect())[i](bad)
			if _, err := proto.Marshal(m); err == nil {
				t.Fatalf("string %d: proto.Marshal accepts %q", i, bad)
			}
			checkResponse(t, m)
		}
	}
}

// TestUnknownFieldsGiveProtoMarshalsBytes: unknown fields in any message of the response (the
// default codec writes them back) make the codec hand over to the default codec.
func TestUnknownFieldsGiveProtoMarshalsBytes(t *testing.T) {
	unknown := protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.VarintType), 1)
	full := fullResponse(t, nonZero)
	n := 0
	eachMessage(full.ProtoReflect(), func(protoreflect.Message) { n++ })
	for i := range n {
		m := proto.CloneOf(full)
		j := 0
		eachMessage(m.ProtoReflect(), func(m protoreflect.Message) {
			if j == i {
				m.SetUnknown(unknown)
			}
			j++
		})
		if checkResponse(t, m) {
			t.Fatalf("message %d: the fast encoder took a response with unknown fields", i)
		}
	}
}

// TestResponsesTheCodecHandsOver: a nil response is the default codec's; a map of several
// entries, which protobuf-go encodes in random order, goes to the default codec.
func TestResponsesTheCodecHandsOver(t *testing.T) {
	var nilResp *pb.RecommendResponse
	want, werr := defaultCodec.Marshal(nilResp)
	got, gerr := Codec{}.Marshal(nilResp)
	if werr != nil || gerr != nil || !bytes.Equal(got.Materialize(), want.Materialize()) || len(got) != len(want) {
		t.Errorf("nil response: codec %x, %v; default codec %x, %v", got.Materialize(), gerr, want.Materialize(), werr)
	}

	m := &pb.RecommendResponse{CurrentMetrics: []*pb.MetricStatus{{Type: "Pods", Pods: &pb.PodsMetricStatus{
		Metric: &pb.MetricIdentifier{Name: "rps", Selector: &pb.LabelSelector{MatchLabels: map[string]string{"app": "web", "tier": "front"}}},
	}}}}
	if checkResponse(t, m) {
		t.Error("the fast encoder took a map of two entries")
	}
}

// TestMarshalBuffers: as the default codec, the codec returns one buffer, pooled above grpc-go's
// pooling threshold and a plain slice below it.
func TestMarshalBuffers(t *testing.T) {
	small := realisticResponse(t)
	large := proto.CloneOf(small)
	large.Conditions[0].Message = strings.Repeat("long ", 400)
	for _, tt := range []struct {
		name   string
		m      *pb.RecommendResponse
		pooled bool
	}{{"small", small, false}, {"large", large, true}} {
		t.Run(tt.name, func(t *testing.T) {
			data, err := Codec{}.Marshal(tt.m)
			if err != nil {
				t.Fatal(err)
			}
			defer data.Free()
			want, err := defaultCodec.Marshal(tt.m)
			if err != nil {
				t.Fatal(err)
			}
			defer want.Free()
			if len(data) != 1 || !bytes.Equal(data.Materialize(), want.Materialize()) {
				t.Fatalf("%d buffers, want 1 with the default codec's bytes", len(data))
			}
			if _, slice := data[0].(mem.SliceBuffer); slice == tt.pooled {
				t.Errorf("%d bytes in a %T, want pooled: %v", data.Len(), data[0], tt.pooled)
			}
		})
	}
}

// realisticResponse is what the server answers a Recommend for a target with a Resource CPU
// utilization metric and a Pods metric on 20 pods, first seen and scaled up: three
// conditions, two metric explanations, quantities as strings. It runs the server's own path
// (conversion, decision, conversion back) and adds the recommendation id.
func realisticResponse(t testing.TB) *pb.RecommendResponse {
	now := t0
	req := realisticRequest(now)
	req.Spec.Metrics[1] = &pb.MetricSpec{Type: "Pods", Pods: &pb.PodsMetricSource{
		Metric: &pb.MetricIdentifier{Name: "http_requests_per_second"},
		Target: &pb.MetricTarget{Type: "AverageValue", AverageValue: proto.String("100")},
	}}
	samples := make([]*pb.PodMetricValue, len(req.Pods))
	for i, p := range req.Pods {
		samples[i] = &pb.PodMetricValue{Pod: p.Name, Value: strconv.Itoa(110+i) + "500m", Timestamp: timestamppb.New(now.Add(-15 * time.Second))}
	}
	req.Metrics[1] = &pb.MetricObservation{PodValues: samples}
	in, opts, violations := apiconv.RecommendFromProto(req, recommender.DefaultOptions())
	if len(violations) > 0 {
		t.Fatalf("realistic request: %v", violations)
	}
	d, _ := recommender.Decide(now, opts, in, recommender.State{})
	resp := apiconv.DecisionToProto(&d)
	resp.RecommendationId = "3f9a6c0e2b7d41e58c1a9d07"
	if len(resp.CurrentMetrics) != 2 || len(resp.Conditions) != 3 || len(resp.Explanation.GetMetrics()) != 2 || !resp.Scale {
		t.Fatalf("realistic response is not as described:\n%v", resp)
	}
	return resp
}

func FuzzMarshalRecommendResponse(f *testing.F) {
	f.Add(mustMarshal(f, proto.MarshalOptions{}, realisticResponse(f)))
	r := rand.New(rand.NewPCG(9, 10))
	for range 8 {
		f.Add(mustMarshal(f, proto.MarshalOptions{}, randResponse(r)))
	}
	// Invariant: any response protobuf-go decodes, the codec encodes as proto.Marshal does, on
	// the fast path unless it has unknown fields or a map of several entries.
	f.Fuzz(func(t *testing.T, b []byte) {
		m := new(pb.RecommendResponse)
		if proto.Unmarshal(b, m) != nil {
			return
		}
		checkResponse(t, m)
	})
}

// BenchmarkMarshalRecommendResponse: the codec's Marshal of a realistic response, with
// grpc-go's default codec and with the fast encoder; the buffer is freed, as grpc-go does
// once it is written.
func BenchmarkMarshalRecommendResponse(b *testing.B) {
	m := realisticResponse(b)
	for _, bc := range []struct {
		name  string
		codec interface {
			Marshal(any) (mem.BufferSlice, error)
		}
	}{{"default", defaultCodec}, {"fast", Codec{}}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				data, err := bc.codec.Marshal(m)
				if err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(data.Len()))
				data.Free()
			}
		})
	}
}
