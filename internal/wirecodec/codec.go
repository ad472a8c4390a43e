// Package wirecodec is the server's gRPC codec: grpc-go's default proto codec, except that it
// decodes recommender.v1.RecommendRequest, the hottest request, with a hand-written decoder.
//
// protobuf-go's generic decoding of a typical Recommend (20 pods with their timestamps and
// requests maps, 20 per-pod samples) took about 110 µs and 630 allocations under load. The
// decoder here allocates the request's messages of each kind in one slice, sizes maps, and
// shares one string among equal short strings: a quarter of the allocations, and a fraction
// of the time (BenchmarkDecodeRecommendRequest). Its result is exactly proto.Unmarshal's: whenever it meets
// anything outside what clients normally send (unknown fields, unexpected wire types,
// malformed or invalid input) it starts over with proto.Unmarshal, so errors and unknown
// fields are protobuf-go's own.
//
// The codec is not registered globally: the server installs it with grpc.ForceServerCodecV2,
// so clients and other servers in the same process keep grpc-go's default.
package wirecodec

import (
	"google.golang.org/grpc/encoding"
	encproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

// defaultCodec is grpc-go's proto codec (registered by encoding/proto's init, which runs
// before this package's), captured before anything could shadow it.
var defaultCodec = encoding.GetCodecV2(encproto.Name)

// Codec is an encoding.CodecV2 named "proto". Its zero value is ready to use.
type Codec struct{}

// Name is "proto", the name of the codec it replaces.
func (Codec) Name() string { return encproto.Name }

// Marshal is the default codec's: responses are small.
func (Codec) Marshal(v any) (mem.BufferSlice, error) { return defaultCodec.Marshal(v) }

// Unmarshal decodes a *pb.RecommendRequest with the fast decoder and anything else with the
// default codec.
func (Codec) Unmarshal(data mem.BufferSlice, v any) error {
	req, ok := v.(*pb.RecommendRequest)
	if !ok || req == nil {
		return defaultCodec.Unmarshal(data, v)
	}
	// As the default codec: one contiguous view of the message (no copy when it arrived in
	// one buffer). Nothing decoded refers to it: strings and unknown fields are copies.
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	return unmarshalRequest(buf.ReadOnlyData(), req)
}
