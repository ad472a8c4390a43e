package wirecodec

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

var t0 = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

func mustMarshal(t testing.TB, opts proto.MarshalOptions, m proto.Message) []byte {
	t.Helper()
	b, err := opts.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRandomRequestsMatchProtoUnmarshal: random requests, encoded by protobuf-go (plainly and
// deterministically) and rewritten (reordered, split, duplicated, dropped fields), decode as
// proto.Unmarshal decodes them, all on the fast path.
func TestRandomRequestsMatchProtoUnmarshal(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	n := 600
	if testing.Short() {
		n = 100
	}
	for i := range n {
		m := randRequest(r)
		plain := mustMarshal(t, proto.MarshalOptions{}, m)
		encodings := [][]byte{plain, mustMarshal(t, deterministic, m)}
		for range 3 {
			encodings = append(encodings, rewrite(r, plain, requestDesc, false))
		}
		for j, b := range encodings {
			if !check(t, b) {
				t.Fatalf("request %d encoding %d: the fast path gave up on input it should decode: %x", i, j, b)
			}
		}
	}
}

func TestRealisticRequestIsDecodedOnFastPath(t *testing.T) {
	b := mustMarshal(t, proto.MarshalOptions{}, realisticRequest(t0))
	if !check(t, b) {
		t.Fatal("the fast path gave up on a typical request")
	}
}

// TestUnknownFieldsArePreserved: unknown fields (at every level, of every wire type, and known
// numbers with other wire types) decode as proto.Unmarshal keeps them, and re-encode the same.
func TestUnknownFieldsArePreserved(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	withUnknown := 0
	for range 600 {
		b := rewrite(r, mustMarshal(t, proto.MarshalOptions{}, randRequest(r)), requestDesc, true)
		check(t, b)
		var m pb.RecommendRequest
		if proto.Unmarshal(b, &m) == nil && len(m.ProtoReflect().GetUnknown()) > 0 {
			withUnknown++
		}
	}
	if withUnknown < 50 {
		t.Fatalf("only %d requests kept unknown fields at the top level; the generator is off", withUnknown)
	}

	// One by hand: an unknown varint and group at the top level, an unknown field in a pod.
	pod := protowire.AppendTag(nil, 1, protowire.BytesType)
	pod = protowire.AppendString(pod, "p")
	pod = protowire.AppendTag(pod, 99, protowire.Fixed32Type)
	pod = protowire.AppendFixed32(pod, 7)
	b := protowire.AppendTag(nil, 100, protowire.VarintType)
	b = protowire.AppendVarint(b, 1)
	b = protowire.AppendTag(b, 5, protowire.BytesType)
	b = protowire.AppendBytes(b, pod)
	b = protowire.AppendTag(b, 101, protowire.StartGroupType)
	b = protowire.AppendTag(b, 1, protowire.VarintType)
	b = protowire.AppendVarint(b, 2)
	b = protowire.AppendTag(b, 101, protowire.EndGroupType)
	check(t, b)
	var m pb.RecommendRequest
	if err := (Codec{}).Unmarshal(bufferOf(b), &m); err != nil {
		t.Fatal(err)
	}
	if len(m.ProtoReflect().GetUnknown()) == 0 || len(m.Pods) != 1 || len(m.Pods[0].ProtoReflect().GetUnknown()) == 0 {
		t.Fatalf("unknown fields lost: %v", &m)
	}
}

// TestMergesAndOverwrites: a singular message that occurs twice merges, a scalar takes its last
// value, repeated fields in several runs append, a map entry may lack its key or value and a
// repeated key overwrites, all on the fast path.
func TestMergesAndOverwrites(t *testing.T) {
	field := func(num protowire.Number, typ protowire.Type, v any) []byte {
		b := protowire.AppendTag(nil, num, typ)
		switch v := v.(type) {
		case uint64:
			return protowire.AppendVarint(b, v)
		case string:
			return protowire.AppendString(b, v)
		case []byte:
			return protowire.AppendBytes(b, v)
		}
		panic(fmt.Sprintf("field: %T", v))
	}
	cat := func(fields ...[]byte) []byte { return bytes.Join(fields, nil) }
	const bt, vt = protowire.BytesType, protowire.VarintType

	pod := cat(
		field(1, bt, "a"),
		field(5, bt, field(1, vt, uint64(10))), // start_time.seconds
		field(3, vt, uint64(1)),
		field(7, bt, field(1, bt, "c1")),
		field(9, bt, cat(field(1, bt, "cpu"), field(2, bt, "1"))),
		field(5, bt, field(2, vt, uint64(20))), // start_time.nanos, merged
		field(3, vt, uint64(0)),                // ready, overwritten
		field(7, bt, field(1, bt, "c2")),
		field(9, bt, cat(field(2, bt, "2"), field(1, bt, "cpu"))), // same key again
		field(9, bt, field(2, bt, "no key")),
		field(9, bt, field(1, bt, "no value")),
		field(1, bt, "b"), // name, overwritten
	)
	sample := cat(
		field(4, bt, field(1, vt, uint64(30))),
		field(1, bt, "b"),
		field(4, bt, field(2, vt, uint64(5))),
	)
	metric := cat(field(3, bt, "1"), field(1, bt, sample), field(3, bt, "2"), field(2, bt, "x"), field(2, bt, "y"))
	b := cat(
		field(1, bt, field(1, bt, "cluster")),
		field(5, bt, pod),
		field(6, bt, metric),
		field(2, bt, field(4, bt, field(1, bt, "Resource"))),
		field(5, bt, field(1, bt, "second")),
		field(1, bt, field(3, bt, "name")),
		field(2, bt, field(4, bt, field(1, bt, "External"))),
		field(4, vt, uint64(3)),
		field(4, vt, uint64(4)),
		field(6, bt, []byte{}),
	)
	if !check(t, b) {
		t.Fatal("the fast path gave up")
	}
	var m pb.RecommendRequest
	if err := (Codec{}).Unmarshal(bufferOf(b), &m); err != nil {
		t.Fatal(err)
	}
	p := m.Pods[0]
	switch {
	case m.Target.GetCluster() != "cluster" || m.Target.GetName() != "name":
		t.Errorf("target %v, want the two occurrences merged", m.Target)
	case len(m.Spec.GetMetrics()) != 2:
		t.Errorf("spec %v, want the metrics of both occurrences", m.Spec)
	case m.GetStatusReplicas() != 4:
		t.Errorf("status_replicas %d, want the last, 4", m.GetStatusReplicas())
	case len(m.Pods) != 2 || len(m.Metrics) != 2:
		t.Errorf("%d pods and %d metrics, want 2 and 2", len(m.Pods), len(m.Metrics))
	case p.Name != "b" || p.GetReady() || p.Ready == nil:
		t.Errorf("pod name %q ready %v, want the last ones", p.Name, p.Ready)
	case p.StartTime.GetSeconds() != 10 || p.StartTime.GetNanos() != 20:
		t.Errorf("start_time %v, want both occurrences merged", p.StartTime)
	case len(p.Containers) != 2 || p.Containers[1].Name != "c2":
		t.Errorf("containers %v, want both runs", p.Containers)
	case len(p.Requests) != 3 || p.Requests["cpu"] != "2" || p.Requests[""] != "no key" || p.Requests["no value"] != "":
		t.Errorf("requests %v", p.Requests)
	case m.Metrics[0].GetValue() != "y" || len(m.Metrics[0].Values) != 2:
		t.Errorf("metric %v", m.Metrics[0])
	case m.Metrics[0].PodValues[0].Window.GetSeconds() != 30 || m.Metrics[0].PodValues[0].Window.GetNanos() != 5:
		t.Errorf("window %v, want both occurrences merged", m.Metrics[0].PodValues[0].Window)
	}
}

// TestListsDoNotShareCapacity: every parent's repeated field ends where its own elements do, so
// appending to one never writes into the next parent's, which shares its array.
func TestListsDoNotShareCapacity(t *testing.T) {
	req := realisticRequest(t0)
	req.Pods[0].InitContainers = []*pb.InitContainerState{{Name: "i0"}}
	req.Pods[1].InitContainers = []*pb.InitContainerState{{Name: "i1"}}
	req.Metrics[1].PodValues = []*pb.PodMetricValue{{Pod: "p"}}
	req.Metrics = append(req.Metrics, &pb.MetricObservation{Values: []string{"1"}})
	var m pb.RecommendRequest
	if err := (Codec{}).Unmarshal(bufferOf(mustMarshal(t, proto.MarshalOptions{}, req)), &m); err != nil {
		t.Fatal(err)
	}
	before := proto.Clone(&m).(*pb.RecommendRequest)
	_ = append(m.Pods[0].Containers, &pb.ContainerState{Name: "x"})
	_ = append(m.Pods[0].InitContainers, &pb.InitContainerState{Name: "x"})
	_ = append(m.Metrics[0].PodValues, &pb.PodMetricValue{Pod: "x"})
	_ = append(m.Metrics[1].Values, "x")
	if !proto.Equal(&m, before) {
		t.Fatal("appending to one message's list changed another message")
	}
}

// markedRequest sets every string the fast path decodes, and a few it leaves to protobuf-go,
// to a distinct marker; every other one is longer than maxInterned.
func markedRequest() (*pb.RecommendRequest, []string) {
	var marks []string
	mk := func() string {
		s := fmt.Sprintf("Q%03d", len(marks))
		if len(marks)%2 == 1 {
			s += strings.Repeat("-", maxInterned)
		}
		marks = append(marks, s)
		return s
	}
	ts := &timestamppb.Timestamp{Seconds: 1}
	req := &pb.RecommendRequest{
		Target: &pb.TargetRef{Cluster: mk(), Namespace: mk(), Name: mk()},
		Spec:   &pb.HorizontalPodAutoscalerSpec{Metrics: []*pb.MetricSpec{{Type: mk()}}},
	}
	for range 2 {
		req.Pods = append(req.Pods, &pb.PodState{
			Name: mk(), Phase: mk(), StartTime: ts,
			Containers:     []*pb.ContainerState{{Name: mk(), Requests: map[string]string{mk(): mk()}}},
			InitContainers: []*pb.InitContainerState{{Name: mk(), RestartPolicy: mk(), Requests: map[string]string{mk(): mk()}}},
			Requests:       map[string]string{mk(): mk()},
		})
		req.Metrics = append(req.Metrics, &pb.MetricObservation{
			PodValues: []*pb.PodMetricValue{{Pod: mk(), Value: mk(), Timestamp: ts, Window: &durationpb.Duration{Seconds: 2}}},
			Value:     proto.String(mk()),
			Values:    []string{mk(), mk()},
			Error:     mk(),
		})
	}
	return req, marks
}

// TestInvalidUTF8IsRejected: each string, in turn, made invalid UTF-8 (of the same length)
// fails both decoders, interned or not, seen before or not.
func TestInvalidUTF8IsRejected(t *testing.T) {
	req, marks := markedRequest()
	b := mustMarshal(t, proto.MarshalOptions{}, req)
	if !check(t, b) {
		t.Fatal("the fast path gave up on the valid request")
	}
	invalid := []string{"\xff\xfe\xfd\xfc", "ab\xc3(", "\xed\xa0\x80a", "a\xf4\x90\x80", "\xc0\x80ab", "abc\xe2"}
	for _, mark := range marks {
		if bytes.Count(b, []byte(mark)) != 1 {
			t.Fatalf("marker %q occurs %d times in the encoding", mark, bytes.Count(b, []byte(mark)))
		}
		for _, bad := range invalid {
			c := bytes.Replace(b, []byte(mark[:4]), []byte(bad), 1)
			if check(t, c) {
				t.Fatalf("the fast path accepted invalid UTF-8 %q in place of %q", bad, mark)
			}
			if proto.Unmarshal(c, new(pb.RecommendRequest)) == nil {
				t.Fatalf("proto.Unmarshal accepted invalid UTF-8 in place of %q", mark)
			}
		}
	}
}

// TestMalformedInput: truncations at every offset, and every byte changed in a few ways, of
// valid requests decode (or fail) as with proto.Unmarshal.
func TestMalformedInput(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	marked, _ := markedRequest()
	inputs := [][]byte{
		mustMarshal(t, proto.MarshalOptions{}, realisticRequest(t0)),
		mustMarshal(t, proto.MarshalOptions{}, marked),
	}
	for len(inputs) < 6 {
		// Small ones: each costs its length squared.
		if b := rewrite(r, mustMarshal(t, proto.MarshalOptions{}, randRequest(r)), requestDesc, true); len(b) > 300 && len(b) < 1200 {
			inputs = append(inputs, b)
		}
	}
	for k, b := range inputs {
		c := bytes.Clone(b)
		for i := range b {
			check(t, b[:i])
			if k == 0 {
				continue // the large one is only truncated
			}
			for _, x := range []byte{1, 0x80, 0xff} {
				c[i] = b[i] ^ x
				check(t, c)
			}
			c[i] = b[i]
		}
	}
}

// TestLengthsPastTheEnd: a length-delimited field running past its parent's end fails, though
// the bytes are there in the grandparent.
func TestLengthsPastTheEnd(t *testing.T) {
	// over is a message field num whose length claims extra bytes more than content has.
	over := func(num protowire.Number, content []byte, extra int) []byte {
		b := protowire.AppendTag(nil, num, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(len(content)+extra))
		return append(b, content...)
	}
	msg := func(num protowire.Number, content []byte) []byte { return over(num, content, 0) }
	str := func(num protowire.Number, s string) []byte { return msg(num, []byte(s)) }
	filler := str(1, "name-and-more-bytes")
	cases := map[string][]byte{
		"pod":             over(5, filler, 3),
		"pod name":        msg(5, over(1, []byte("p"), 3)),
		"container":       append(msg(5, append(over(7, str(1, "c"), 2), filler...)), filler...),
		"map entry":       msg(5, append(over(9, str(1, "cpu"), 3), filler...)),
		"map key":         msg(5, msg(9, append(over(1, []byte("cpu"), 3), str(2, "500m")...))),
		"start_time":      msg(5, append(over(5, nil, 2), filler...)),
		"sample":          msg(6, append(over(1, str(1, "p"), 3), filler...)),
		"sample window":   msg(6, msg(1, append(over(4, nil, 2), filler...))),
		"metric values":   msg(6, append(over(3, []byte("1"), 4), filler...)),
		"target":          append(over(1, str(1, "c"), 2), filler...),
		"length overflow": append(protowire.AppendTag(nil, 5, protowire.BytesType), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01),
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			check(t, b)
			if proto.Unmarshal(b, new(pb.RecommendRequest)) == nil {
				t.Fatalf("proto.Unmarshal accepted %x", b)
			}
		})
	}
}

// TestWrongWireTypes: known fields with other wire types decode as proto.Unmarshal keeps
// them (as unknown fields, dropped in map entries) or fails.
func TestWrongWireTypes(t *testing.T) {
	tag := func(num protowire.Number, typ protowire.Type) []byte { return protowire.AppendTag(nil, num, typ) }
	msg := func(num protowire.Number, content ...[]byte) []byte {
		return protowire.AppendBytes(tag(num, protowire.BytesType), bytes.Join(content, nil))
	}
	varint := func(num protowire.Number, v uint64) []byte {
		return protowire.AppendVarint(tag(num, protowire.VarintType), v)
	}
	fixed := func(num protowire.Number) []byte { return protowire.AppendFixed64(tag(num, protowire.Fixed64Type), 1) }
	cases := map[string][]byte{
		"pods as varint":           varint(5, 1),
		"current_replicas as len":  msg(3),
		"pod name as varint":       msg(5, varint(1, 1)),
		"ready as fixed64":         msg(5, fixed(3)),
		"start_time as varint":     msg(5, varint(5, 1)),
		"seconds as fixed64":       msg(5, msg(5, fixed(1))),
		"nanos as len":             msg(6, msg(1, msg(4, msg(2)))),
		"map key as varint":        msg(5, msg(9, varint(1, 1), msg(2))),
		"map value as fixed64":     msg(5, msg(7, msg(2, msg(1), fixed(2)))),
		"sample pod as varint":     msg(6, msg(1, varint(1, 3))),
		"values as varint":         msg(6, varint(3, 3)),
		"end group alone":          tag(5, protowire.EndGroupType),
		"group in pod":             msg(5, tag(7, protowire.StartGroupType), tag(7, protowire.EndGroupType)),
		"unterminated group":       tag(9, protowire.StartGroupType),
		"field number 0":           varint(0, 1),
		"field number past max":    protowire.AppendVarint(protowire.AppendVarint(nil, uint64(protowire.MaxValidNumber+1)<<3), 1),
		"reserved wire type 6":     []byte{5<<3 | 6, 0},
		"overlong varint":          append(tag(3, protowire.VarintType), 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01),
		"varint overflowing 64":    append(tag(3, protowire.VarintType), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02),
		"padded varint (accepted)": append(tag(3, protowire.VarintType), 0x81, 0x80, 0x00),
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			if check(t, b) && !strings.Contains(name, "accepted") {
				t.Fatalf("the fast path decoded %x", b)
			}
		})
	}
}

func FuzzDecodeRecommendRequest(f *testing.F) {
	r := rand.New(rand.NewPCG(7, 8))
	f.Add([]byte{})
	f.Add(mustMarshal(f, proto.MarshalOptions{}, realisticRequest(t0)))
	f.Add(mustMarshal(f, deterministic, realisticRequest(t0)))
	marked, _ := markedRequest()
	f.Add(mustMarshal(f, proto.MarshalOptions{}, marked))
	for added := 0; added < 6; {
		plain := mustMarshal(f, proto.MarshalOptions{}, randRequest(r))
		if len(plain) > 1500 {
			continue // small seeds mutate and minimize faster
		}
		added++
		f.Add(plain)
		f.Add(rewrite(r, plain, requestDesc, false))
		f.Add(rewrite(r, plain, requestDesc, true))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		check(t, b)
		// The same request naming two other workloads: the second is composed of the
		// template the first left, when the fast path composes such a spec (TestSpecTemplates).
		check(t, withRefName(b, "other-1"))
		check(t, withRefName(b, "other-2"))
	})
}

// BenchmarkDecodeRecommendRequest decodes a typical request (20 pods, 2 metric observations, a
// spec with 2 metrics and a behavior) with proto.Unmarshal and with the codec.
func BenchmarkDecodeRecommendRequest(b *testing.B) {
	in := mustMarshal(b, proto.MarshalOptions{}, realisticRequest(t0))
	decoders := []struct {
		name   string
		decode func([]byte, *pb.RecommendRequest) error
	}{
		{"proto.Unmarshal", func(b []byte, m *pb.RecommendRequest) error { return proto.Unmarshal(b, m) }},
		{"wirecodec", func(b []byte, m *pb.RecommendRequest) error { return Codec{}.Unmarshal(bufferOf(b), m) }},
	}
	for _, d := range decoders {
		b.Run(d.name, func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			b.ReportAllocs()
			for b.Loop() {
				if err := d.decode(in, new(pb.RecommendRequest)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// decodeRequest decodes b with the codec, failing t on any error.
func decodeRequest(t *testing.T, b []byte) *pb.RecommendRequest {
	t.Helper()
	m := new(pb.RecommendRequest)
	if err := (Codec{}).Unmarshal(bufferOf(b), m); err != nil {
		t.Fatal(err)
	}
	if err := DecodeError(m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestSpecsAreShared: requests with the same spec bytes get the same spec message, which
// Interned reports; a spec field that occurs twice merges into a copy, leaving the shared
// message as it was; a spec too big to keep is decoded each time and not interned.
func TestSpecsAreShared(t *testing.T) {
	req := realisticRequest(t0)
	req.Spec.MaxReplicas = 4242 // bytes no other test sends
	b := mustMarshal(t, proto.MarshalOptions{}, req)
	first, second := decodeRequest(t, b), decodeRequest(t, b)
	if first.Spec != second.Spec {
		t.Fatal("two requests with the same spec bytes got different spec messages")
	}
	if !Interned(first.Spec) {
		t.Fatal("Interned is false for a shared spec")
	}
	if !proto.Equal(first.Spec, req.Spec) {
		t.Fatalf("shared spec %v, want %v", first.Spec, req.Spec)
	}

	// The spec again, then a second spec field: proto.Unmarshal merges the two.
	extra := &pb.HorizontalPodAutoscalerSpec{MinReplicas: proto.Int32(3)}
	twice := append(bytes.Clone(b), protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), mustMarshal(t, proto.MarshalOptions{}, extra))...)
	if !check(t, twice) {
		t.Fatal("the fast path gave up on a repeated spec")
	}
	merged := decodeRequest(t, twice)
	if merged.Spec == first.Spec || Interned(merged.Spec) {
		t.Fatal("a merged spec is the shared message")
	}
	if merged.Spec.GetMinReplicas() != 3 || merged.Spec.GetMaxReplicas() != 4242 {
		t.Fatalf("merged spec %v, want minReplicas 3 and maxReplicas 4242", merged.Spec)
	}
	if !proto.Equal(first.Spec, req.Spec) {
		t.Fatalf("merging changed the shared spec: %v", first.Spec)
	}

	huge := realisticRequest(t0)
	huge.Spec.ScaleTargetRef.Name = strings.Repeat("x", maxSpecSize)
	hb := mustMarshal(t, proto.MarshalOptions{}, huge)
	if !check(t, hb) {
		t.Fatal("the fast path gave up on a huge spec")
	}
	h1, h2 := decodeRequest(t, hb), decodeRequest(t, hb)
	if h1.Spec == h2.Spec || Interned(h1.Spec) {
		t.Fatal("a spec above maxSpecSize was shared")
	}
}

// TestSpecTableDropsAtRandom: the table holds at most DefaultSpecTableSize specs; past that each new spec
// takes the place of one it had (Interned turns false for it, and its attachment is gone), and
// the new one is shared. It drops at random: over many specs, old ones are not all dropped
// first.
func TestSpecTableDropsAtRandom(t *testing.T) {
	req := realisticRequest(t0)
	decodeN := func(n int) *pb.HorizontalPodAutoscalerSpec {
		req.Spec.MinReplicas = proto.Int32(int32(200000 + n))
		return decodeRequest(t, mustMarshal(t, proto.MarshalOptions{}, req)).Spec
	}
	const extra = 1000
	const maxSpecs = DefaultSpecTableSize
	got := make([]*pb.HorizontalPodAutoscalerSpec, maxSpecs+extra)
	for i := range got {
		got[i] = decodeN(i)
		if !Attach(got[i], i) {
			t.Fatalf("spec %d: Attach refused the spec just decoded", i)
		}
	}
	kept, keptOld := 0, 0
	for i, s := range got {
		v, shared := Attachment(s)
		if shared != Interned(s) {
			t.Fatalf("spec %d: Attachment says shared %t, Interned %t", i, shared, !shared)
		}
		if !shared {
			if Attach(s, "late") {
				t.Fatalf("spec %d: Attach took a dropped spec", i)
			}
			continue
		}
		if v != i {
			t.Fatalf("spec %d: attachment %v, want %d", i, v, i)
		}
		kept++
		if i < extra {
			keptOld++
		}
	}
	// Other tests may have left specs in the table: it is full, and every spec decoded now is
	// either kept or was dropped for a later one.
	if kept > maxSpecs || kept < maxSpecs-extra {
		t.Fatalf("the table holds %d of the last %d specs, want at most %d and at least %d", kept, len(got), maxSpecs, maxSpecs-extra)
	}
	if last := got[len(got)-1]; !Interned(last) || decodeN(len(got)-1) != last {
		t.Fatal("the newest spec is not shared")
	}
	// Dropping the oldest first would have dropped every one of the first 1000: at random, each
	// survives about maxSpecs/(maxSpecs+extra) of the drops, so hundreds do.
	if keptOld == 0 {
		t.Fatal("every one of the oldest specs was dropped: the table does not drop at random")
	}
	if s := specs.size; s > specs.maxBytes() {
		t.Fatalf("the table holds %d bytes of keys, over %d", s, specs.maxBytes())
	}
}

// TestSetSpecTableSize: a smaller table drops specs at once to fit and keeps no more after; a
// negative size keeps none (every spec decoded, nothing attached); 0 restores the default.
func TestSetSpecTableSize(t *testing.T) {
	t.Cleanup(func() { SetSpecTableSize(0) })
	req := realisticRequest(t0)
	decodeN := func(n int) *pb.HorizontalPodAutoscalerSpec {
		req.Spec.MinReplicas = proto.Int32(int32(300000 + n))
		return decodeRequest(t, mustMarshal(t, proto.MarshalOptions{}, req)).Spec
	}
	for i := range 50 {
		decodeN(i)
	}
	SetSpecTableSize(10)
	if n := len(specs.byBytes); n > 10 {
		t.Fatalf("%d specs kept after SetSpecTableSize(10)", n)
	}
	for i := range 50 {
		if s := decodeN(1000 + i); !Interned(s) {
			t.Fatalf("spec %d not shared with room for 10", i)
		}
		if n := len(specs.byBytes); n > 10 {
			t.Fatalf("%d specs kept, bound 10", n)
		}
	}
	SetSpecTableSize(-1)
	if n := len(specs.byBytes); n != 0 {
		t.Fatalf("%d specs kept after SetSpecTableSize(-1)", n)
	}
	a, b := decodeN(2000), decodeN(2000)
	if a == b || Interned(a) || Attach(a, 1) {
		t.Fatal("with no table a spec was shared")
	}
	if !proto.Equal(a, b) {
		t.Fatal("the two decodings differ")
	}
	SetSpecTableSize(0)
	if specs.max != DefaultSpecTableSize {
		t.Fatalf("SetSpecTableSize(0) left a bound of %d", specs.max)
	}
	if s := decodeN(2000); !Interned(s) || decodeN(2000) != s {
		t.Fatal("with the default table a spec is not shared")
	}
}

// TestRepeatedContainersAreShared: a container whose bytes repeat the container decoded just
// before (the pods of one workload) is the same message; any difference, in its name or its
// requests, gives a message of its own. Either way the request is proto.Unmarshal's.
func TestRepeatedContainersAreShared(t *testing.T) {
	req := realisticRequest(t0)
	req.Pods[3].Containers[0].Requests = map[string]string{"cpu": "250m", "memory": "256Mi"}
	req.Pods[5].Containers = append(req.Pods[5].Containers, &pb.ContainerState{Name: "sidecar"})
	b := mustMarshal(t, deterministic, req)
	if !check(t, b) {
		t.Fatal("the fast path gave up")
	}
	m := decodeRequest(t, b)
	first := m.Pods[0].Containers[0]
	for i, p := range m.Pods {
		c := p.Containers[0]
		switch i {
		case 3:
			if c == first || c.Requests["cpu"] != "250m" {
				t.Errorf("pod 3's container %v: want its own requests in a message of its own", c)
			}
		case 4:
			if c == first || c == m.Pods[3].Containers[0] {
				t.Errorf("pod 4's container is shared with a container of other bytes")
			}
		default:
			if i < 3 && c != first {
				t.Errorf("pod %d's container is not shared with pod 0's, which has the same bytes", i)
			}
		}
	}
	if p := m.Pods[5]; len(p.Containers) != 2 || p.Containers[1].Name != "sidecar" || p.Containers[0] != m.Pods[4].Containers[0] {
		t.Errorf("pod 5's containers %v: want pod 4's container, then the sidecar", p.Containers)
	}
	if c := m.Pods[6].Containers[0]; c != m.Pods[7].Containers[0] || c == m.Pods[5].Containers[1] {
		t.Errorf("pods 6 and 7 do not share their container, or share the sidecar")
	}
}

// TestRepeatedTimestampsAreShared: a timestamp or window with the same bytes as the one decoded
// before it is the same message; a second occurrence of the field merges into a copy, so the
// message it shared with an earlier pod or sample keeps its value.
func TestRepeatedTimestampsAreShared(t *testing.T) {
	seconds := func(num protowire.Number, s uint64) []byte {
		inner := protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), s)
		return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), inner)
	}
	nanos := func(num protowire.Number, n uint64) []byte {
		inner := protowire.AppendVarint(protowire.AppendTag(nil, 2, protowire.VarintType), n)
		return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), inner)
	}
	msg := func(num protowire.Number, fields ...[]byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), bytes.Join(fields, nil))
	}
	name := func(num protowire.Number, s string) []byte {
		return protowire.AppendString(protowire.AppendTag(nil, num, protowire.BytesType), s)
	}
	// Pods a and b start at 10 s; b's start_time occurs again with 20 ns. Samples a, b and c
	// have timestamp 30 s and window 60 s; b's window occurs again with 5 ns; d's window is
	// 60 s, then 5 ns, then 60 s again (the bytes of the window decoded last).
	b := bytes.Join([][]byte{
		msg(5, name(1, "a"), seconds(5, 10)),
		msg(5, name(1, "b"), seconds(5, 10), nanos(5, 20)),
		msg(6,
			msg(1, name(1, "a"), seconds(3, 30), seconds(4, 60)),
			msg(1, name(1, "b"), seconds(3, 30), seconds(4, 60), nanos(4, 5)),
			msg(1, name(1, "c"), seconds(3, 30), seconds(4, 60)),
			msg(1, name(1, "d"), seconds(4, 60), nanos(4, 5), seconds(4, 60))),
	}, nil)
	if !check(t, b) {
		t.Fatal("the fast path gave up")
	}
	m := decodeRequest(t, b)
	a, p := m.Pods[0], m.Pods[1]
	if a.StartTime.GetSeconds() != 10 || a.StartTime.GetNanos() != 0 || p.StartTime.GetNanos() != 20 || a.StartTime == p.StartTime {
		t.Errorf("start times %v and %v: want 10s and 10s+20ns in two messages", a.StartTime, p.StartTime)
	}
	s := m.Metrics[0].PodValues
	if s[0].Timestamp != s[1].Timestamp || s[1].Timestamp != s[2].Timestamp {
		t.Error("three equal sample timestamps in a row are not one message")
	}
	if s[0].Window.GetNanos() != 0 || s[1].Window.GetNanos() != 5 || s[0].Window == s[1].Window {
		t.Errorf("windows %v and %v: want 60s and 60s+5ns in two messages", s[0].Window, s[1].Window)
	}
	if d := s[3].Window; d.GetSeconds() != 60 || d.GetNanos() != 5 {
		t.Errorf("window of sample d %v: want its three occurrences merged, 60s+5ns", d)
	}
	if s[2].Window != s[0].Window || s[0].Window.GetSeconds() != 60 || s[0].Window.GetNanos() != 0 {
		t.Errorf("window of sample c %v: want sample a's message, still 60s (the merge went into a copy)", s[2].Window)
	}
}

// withRefName returns the request b with name appended as one more name field to every
// scaleTargetRef of its spec fields (in proto3 the last one wins): the same request naming
// another workload, its bytes otherwise as they were. Malformed input comes back unchanged.
func withRefName(b []byte, name string) []byte {
	edit := func(b []byte, field protowire.Number, f func([]byte) []byte) []byte {
		var out []byte
		for len(b) > 0 {
			num, typ, n := protowire.ConsumeField(b)
			if n < 0 {
				return nil
			}
			if num == field && typ == protowire.BytesType {
				v, _ := protowire.ConsumeBytes(b[protowire.SizeTag(num):n])
				out = protowire.AppendTag(out, num, typ)
				out = protowire.AppendBytes(out, f(v))
			} else {
				out = append(out, b[:n]...)
			}
			b = b[n:]
		}
		return out
	}
	out := edit(b, 2, func(spec []byte) []byte {
		return edit(spec, 1, func(ref []byte) []byte {
			return protowire.AppendString(protowire.AppendTag(bytes.Clone(ref), 3, protowire.BytesType), name)
		})
	})
	if out == nil {
		return b
	}
	return out
}

// TestSpecTemplates: specs that differ only in scaleTargetRef are composed of one template once
// two of them have been seen: each request's spec is still exactly proto.Unmarshal's (check),
// the same bytes still give the same shared message, and Template names the template, a
// shared spec without scaleTargetRef. Whatever the fast path leaves to protobuf-go in a
// reference, and fields unknown at the spec's top level (which a composed message could not
// carry), make no template.
func TestSpecTemplates(t *testing.T) {
	ref := func(fields ...[]byte) []byte { return bytes.Join(fields, nil) }
	str := func(num protowire.Number, s string) []byte {
		return protowire.AppendString(protowire.AppendTag(nil, num, protowire.BytesType), s)
	}
	field := func(num protowire.Number, v []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), v)
	}
	var rest []byte // the spec without its reference: bytes no other case or test sends
	unknown := protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.VarintType), 1)
	cases := []struct {
		name    string
		spec    func(name string) []byte // the spec field's value for a workload name
		compose bool
	}{
		{"reference first", func(n string) []byte {
			return append(field(1, ref(str(1, "apps/v1"), str(2, "Deployment"), str(3, n))), rest...)
		}, true},
		{"reference last, fields in any order", func(n string) []byte {
			return append(bytes.Clone(rest), field(1, ref(str(3, n), str(2, "Deployment")))...)
		}, true},
		{"reference in the middle, minReplicas after it", func(n string) []byte {
			return ref(rest, field(1, ref(str(3, n))), protowire.AppendVarint(protowire.AppendTag(nil, 2, protowire.VarintType), 2))
		}, true},
		{"two references", func(n string) []byte { return ref(field(1, str(3, "x")), rest, field(1, str(3, n))) }, false},
		{"unknown field in the reference", func(n string) []byte { return append(field(1, ref(str(3, n), unknown)), rest...) }, false},
		{"invalid UTF-8 in the reference", func(n string) []byte { return append(field(1, str(3, n+"\xff")), rest...) }, false},
		{"unknown field in the spec", func(n string) []byte { return ref(field(1, str(3, n)), rest, unknown) }, false},
		{"unknown field inside a metric", func(n string) []byte {
			return ref(field(1, str(3, n)), rest, field(4, ref(str(1, "Resource"), unknown)))
		}, true},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec := realisticSpec()
			spec.ScaleTargetRef = nil
			spec.MaxReplicas = int32(4300 + i)
			rest = mustMarshal(t, proto.MarshalOptions{}, spec)
			var templates []*pb.HorizontalPodAutoscalerSpec
			for j := range 3 {
				req := realisticRequest(t0)
				req.Spec = nil
				b := append(mustMarshal(t, proto.MarshalOptions{}, req), field(2, c.spec(fmt.Sprintf("w%d-%d", i, j)))...)
				check(t, b)
				m := new(pb.RecommendRequest)
				if err := (Codec{}).Unmarshal(bufferOf(b), m); err != nil {
					t.Fatal(err)
				}
				if DecodeError(m) != nil { // as proto.Unmarshal fails (check)
					templates = append(templates, nil)
					continue
				}
				if again := decodeRequest(t, b); again.Spec != m.Spec && Interned(m.Spec) {
					t.Fatal("the same spec bytes gave two messages")
				}
				templates = append(templates, Template(m.Spec))
			}
			// The first spec is decoded whole; from the second on, the template is shared.
			if templates[0] != nil {
				t.Fatal("the first spec of a template was composed")
			}
			for _, tmpl := range templates[1:] {
				if (tmpl != nil) != c.compose || tmpl != templates[len(templates)-1] {
					t.Fatalf("templates %v, want one shared template: %t", templates, c.compose)
				}
			}
			if tmpl := templates[2]; tmpl != nil {
				if tmpl.ScaleTargetRef != nil || !Interned(tmpl) || Template(tmpl) != nil {
					t.Fatalf("template %v: a shared spec without scaleTargetRef, itself decoded whole", tmpl)
				}
			}
		})
	}
}

// TestTemplateSharedByTwoSpecs: a template takes an entry only once two different specs
// (references) have asked for it; the same spec asking again, as a target whose spec the table
// dropped does on its next call, does not make one.
func TestTemplateSharedByTwoSpecs(t *testing.T) {
	var table specTable
	table.max = 8
	tmpl, a, b := []byte("template"), []byte("ref a"), []byte("ref b")
	for i, c := range []struct {
		ref  []byte
		want bool
	}{{a, false}, {a, false}, {b, true}, {a, false}, {b, true}} {
		if got := table.shares(tmpl, c.ref); got != c.want {
			t.Fatalf("ask %d (%s): shares %t, want %t", i, c.ref, got, c.want)
		}
	}
	// It remembers at most four templates per entry of the table, then starts over.
	for i := range 4 * table.max {
		table.shares([]byte(fmt.Sprint("other template ", i)), a)
	}
	if len(table.seen) > 4*table.max {
		t.Fatalf("%d templates remembered, bound %d", len(table.seen), 4*table.max)
	}
}
