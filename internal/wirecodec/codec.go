// Package wirecodec is the server's gRPC codec: grpc-go's default proto codec, except that it
// decodes recommender.v1.RecommendRequest, the hottest request, with a hand-written decoder,
// and encodes RecommendResponse, the hottest response, with a hand-written encoder.
//
// protobuf-go's generic decoding of a typical Recommend (20 pods with their timestamps and
// requests maps, 20 per-pod samples) took about 110 µs and 630 allocations under load. The
// decoder here allocates the request's messages of each kind in one slice, sizes maps, and
// shares one string among equal short strings: a quarter of the allocations, and a fraction
// of the time (BenchmarkDecodeRecommendRequest). Requests that send the same spec bytes get one
// shared spec message (spec.go), to which the server attaches its converted spec (Attach);
// specs that differ only in scaleTargetRef are composed of one shared template (Template); and
// a container that repeats the one before it in a request is that message again. A decoded
// request is therefore read-only: the server never modifies one. With Pooled (the server's
// codec), a request's messages come from recycled slabs that the server hands back with Release
// when the call is over (pool.go). Its result is exactly proto.Unmarshal's: whenever it meets
// anything outside what clients normally send (unknown fields, unexpected wire types,
// malformed or invalid input) it starts over with proto.Unmarshal, so errors and unknown
// fields are protobuf-go's own.
//
// The encoder (encode.go) writes exactly proto.Marshal's bytes: fields in field-number order,
// zero values of implicit-presence fields left out, set optional fields and present messages
// written. It measures the response in one pass (validating its strings as UTF-8 and looking
// for unknown fields on the way) and writes it back to front in a second, into one buffer of
// the exact size, taken from grpc-go's buffer pool above its pooling threshold as the default
// codec does. It hands the response to the default codec, which then decides bytes and errors,
// when it cannot promise proto.Marshal's bytes: unknown fields anywhere, a string that is not
// valid UTF-8 (proto.Marshal's error is returned), and a label selector's match_labels of more
// than one entry, which protobuf-go writes in Go's random map order. A realistic response
// (BenchmarkMarshalRecommendResponse) takes about 60 % of the default codec's time, with the
// same allocations.
//
// The codec is not registered globally: the server installs it with grpc.ForceServerCodecV2,
// so clients and other servers in the same process keep grpc-go's default.
//
// A request of the recommender.v1 API that cannot be decoded is not failed here: grpc-go would
// answer any codec error with Internal, which tells the caller the server is at fault. The
// codec instead leaves the message empty and keeps the error for DecodeError, which the server
// asks before anything else is done with the request and answers InvalidArgument.
package wirecodec

import (
	"sync"

	"google.golang.org/grpc/encoding"
	encproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

// apiPackage is the protobuf package whose requests get DecodeError instead of a codec error.
const apiPackage = "recommender.v1"

// undecodable holds, per message the codec could not decode, the decoding error, until
// DecodeError takes it.
var undecodable sync.Map // proto.Message -> error

// defaultCodec is grpc-go's proto codec (registered by encoding/proto's init, which runs
// before this package's), captured before anything could shadow it.
var defaultCodec = encoding.GetCodecV2(encproto.Name)

// Codec is an encoding.CodecV2 named "proto". Its zero value is ready to use.
type Codec struct {
	// Pooled decodes each RecommendRequest into recycled messages (pool.go), which the server
	// must hand back with Release once the call is over; until then they are held.
	Pooled bool
}

// Name is "proto", the name of the codec it replaces.
func (Codec) Name() string { return encproto.Name }

// Marshal encodes a *pb.RecommendResponse with the fast encoder (encode.go) and anything else
// with the default codec. The fast encoder's bytes are proto.Marshal's; for a response it
// cannot promise that of, it hands over to the default codec, whose result and errors are then
// returned as they are.
func (Codec) Marshal(v any) (mem.BufferSlice, error) {
	if m, ok := v.(*pb.RecommendResponse); ok && m != nil {
		if data, ok := marshalResponse(m); ok {
			return data, nil
		}
	}
	return defaultCodec.Marshal(v)
}

// Unmarshal decodes a *pb.RecommendRequest with the fast decoder and anything else with the
// default codec. When a message of the recommender.v1 API does not decode, it resets the
// message, keeps the error for DecodeError and returns nil; other messages' errors are
// returned as the default codec's.
func (c Codec) Unmarshal(data mem.BufferSlice, v any) error {
	err := unmarshal(data, v, c.Pooled)
	if err == nil {
		return nil
	}
	m, ok := v.(proto.Message)
	if !ok || m.ProtoReflect().Descriptor().ParentFile().Package() != apiPackage {
		return err
	}
	proto.Reset(m) // a handler that never asks DecodeError sees an empty request, never a partial one
	undecodable.Store(m, err)
	return nil
}

// DecodeError returns the error the codec met decoding m, and forgets it; nil when m was
// decoded (or did not come from the codec). The server calls it once for every request of the
// recommender.v1 API, before anything else reads the request: each failed decode holds an
// entry until then.
func DecodeError(m any) error {
	if err, ok := undecodable.LoadAndDelete(m); ok {
		return err.(error)
	}
	return nil
}

func unmarshal(data mem.BufferSlice, v any, pooled bool) error {
	req, ok := v.(*pb.RecommendRequest)
	if !ok || req == nil {
		return defaultCodec.Unmarshal(data, v)
	}
	// As the default codec: one contiguous view of the message (no copy when it arrived in
	// one buffer). Nothing decoded refers to it: strings and unknown fields are copies.
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	return unmarshalRequest(buf.ReadOnlyData(), req, pooled)
}
