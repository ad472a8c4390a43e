package wirecodec

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/encoding"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

func bufferOf(b []byte) mem.BufferSlice { return mem.BufferSlice{mem.SliceBuffer(b)} }

// TestOtherTypesAreTheDefaultCodecs: Name, Marshal and the Unmarshal of anything but a
// RecommendRequest are grpc-go's default codec's (Marshal's bytes are also for a
// RecommendResponse, which the fast encoder writes; encode_test.go tests it), and the codec is
// not registered globally.
func TestOtherTypesAreTheDefaultCodecs(t *testing.T) {
	def := encoding.GetCodecV2("proto")
	if _, ok := def.(Codec); ok {
		t.Fatal(`wirecodec is registered globally as "proto"`)
	}
	if (Codec{}).Name() != def.Name() {
		t.Fatalf("name %q, want %q", Codec{}.Name(), def.Name())
	}
	// No maps: protobuf-go encodes their entries in random order.
	msgs := []proto.Message{
		&pb.RecommendRequest{Target: &pb.TargetRef{Name: "web"}, Metrics: []*pb.MetricObservation{{Values: []string{"1"}}}},
		&pb.RecommendResponse{DesiredReplicas: 3, Explanation: &pb.Explanation{Message: "ü"}},
		&pb.ReportScaleRequest{Target: &pb.TargetRef{Name: "web"}, RecommendationId: "r1"},
		&healthpb.HealthCheckRequest{Service: "recommender.v1.RecommenderService"},
	}
	for _, m := range msgs {
		got, err := Codec{}.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		want, err := def.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Materialize(), want.Materialize()) {
			t.Errorf("%T: Marshal differs from the default codec's", m)
		}
		out := m.ProtoReflect().New().Interface()
		if err := (Codec{}).Unmarshal(got, out); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(m, out, protocmp.Transform()); diff != "" {
			t.Errorf("%T: round trip (-in +out):\n%s", m, diff)
		}
	}
	invalid := []byte{0x0a, 0x02, 0xff, 0xfe} // field 1, a string of invalid UTF-8
	werr := def.Unmarshal(bufferOf(invalid), new(healthpb.HealthCheckRequest))
	gerr := Codec{}.Unmarshal(bufferOf(invalid), new(healthpb.HealthCheckRequest))
	if werr == nil || gerr == nil || werr.Error() != gerr.Error() {
		t.Errorf("invalid health request: default codec %v, wirecodec %v", werr, gerr)
	}
	for _, v := range []any{"not a message", 42} {
		_, werr := def.Marshal(v)
		_, gerr := Codec{}.Marshal(v)
		if werr == nil || gerr == nil || werr.Error() != gerr.Error() {
			t.Errorf("Marshal(%v): default codec %v, wirecodec %v", v, werr, gerr)
		}
		werr = def.Unmarshal(bufferOf(nil), v)
		gerr = Codec{}.Unmarshal(bufferOf(nil), v)
		if werr == nil || gerr == nil || werr.Error() != gerr.Error() {
			t.Errorf("Unmarshal into %T: default codec %v, wirecodec %v", v, werr, gerr)
		}
	}
}

// TestUndecodableAPIRequestsAreDeferred: a recommender.v1 request that does not decode is
// reset and its error (the default codec's) kept for DecodeError, which forgets it once taken;
// a decoded one has no error; a message of another API still fails in the codec.
func TestUndecodableAPIRequestsAreDeferred(t *testing.T) {
	garbage := []byte{0xff, 0xff, 0xff, 0x01}
	for _, m := range []proto.Message{new(pb.RecommendRequest), new(pb.ReportScaleRequest), new(pb.GetTargetRequest)} {
		want := defaultCodec.Unmarshal(bufferOf(garbage), m.ProtoReflect().New().Interface())
		if want == nil {
			t.Fatalf("%T: the default codec decoded garbage", m)
		}
		if err := (Codec{}).Unmarshal(bufferOf(garbage), m); err != nil {
			t.Fatalf("%T: Unmarshal returned %v, want nil and the error kept", m, err)
		}
		if !proto.Equal(m, m.ProtoReflect().New().Interface()) {
			t.Errorf("%T: left %v, want an empty message", m, m)
		}
		if got := DecodeError(m); got == nil || got.Error() != want.Error() {
			t.Errorf("%T: DecodeError %v, want %v", m, got, want)
		}
		if got := DecodeError(m); got != nil {
			t.Errorf("%T: DecodeError a second time: %v, want nil (taken)", m, got)
		}
	}
	valid, err := proto.Marshal(&pb.RecommendRequest{CurrentReplicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	ok := new(pb.RecommendRequest)
	if err := (Codec{}).Unmarshal(bufferOf(valid), ok); err != nil || ok.GetCurrentReplicas() != 3 {
		t.Fatalf("valid request: %v, %v", err, ok)
	}
	if err := DecodeError(ok); err != nil {
		t.Errorf("valid request: DecodeError %v", err)
	}
	if err := (Codec{}).Unmarshal(bufferOf(garbage), new(healthpb.HealthCheckRequest)); err == nil {
		t.Error("a health request that does not decode: no error from the codec")
	}
	if n := Undecodable(); n != 0 {
		t.Errorf("%d errors still held", n)
	}
}
