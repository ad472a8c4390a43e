package bench

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	encproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	"github.com/hpa-recommender/hpa-recommender/internal/workload"
	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

// requests encodes the generator's Recommend requests. Building a whole request and
// marshalling it (proto.Marshal of the generated message) on every call costs the generator
// tens of microseconds, most of it the 20-odd pods with their maps of container requests,
// CPU that on a shared machine is taken from the server it measures: it halved the rate the
// generator drove the no-op baseline at. But a target's pods, spec and reference change only
// with its replica count, and only its Metrics (the CPU samples and the queue depth) change
// from one call to the next. So each target keeps the encoding of what its calls share
// (workload.Unobserved), made when the target is first called or its replica count changed,
// and each call marshals only its own Metrics (workload.Observations) after it: protobuf
// reads two encodings of one message concatenated as the merged message, and as the shared
// part holds fields 1 to 5 and Metrics is field 6 the bytes are those proto.Marshal writes for
// the whole request. Every target's shared part is encoded once before the first run
// (fill, unmeasured); it costs about 2 KB of memory per target.
type requests struct {
	wl      *workload.Workload
	targets []atomic.Pointer[unobserved]
}

// unobserved is one target's shared part, encoded, for replicas pods. Its bytes are never
// written again.
type unobserved struct {
	replicas int32
	b        []byte
}

func newRequests(wl *workload.Workload) *requests {
	return &requests{wl: wl, targets: make([]atomic.Pointer[unobserved], wl.Targets())}
}

// fill encodes every target's shared part.
func (r *requests) fill() error {
	for i := range r.targets {
		if _, err := r.shared(i, r.wl.Replicas(i)); err != nil {
			return err
		}
	}
	return nil
}

// shared returns target i's shared part for replicas pods, encoding it if it has none yet or
// one for another replica count.
func (r *requests) shared(i int, replicas int32) (*unobserved, error) {
	if e := r.targets[i].Load(); e != nil && e.replicas == replicas {
		return e, nil
	}
	b, err := proto.Marshal(r.wl.Unobserved(i, replicas))
	if err != nil {
		return nil, fmt.Errorf("encode the request of %s: %w", r.wl.Ref(i).GetName(), err)
	}
	e := &unobserved{replicas: replicas, b: b}
	r.targets[i].Store(e)
	return e, nil
}

// encoded returns target i's next request (the workload's Request(i, now)), encoded, and counts
// the call.
func (r *requests) encoded(i int, now time.Time) ([]byte, error) {
	replicas := r.wl.Replicas(i)
	e, err := r.shared(i, replicas)
	if err != nil {
		return nil, err
	}
	obs := &pb.RecommendRequest{Metrics: r.wl.Observations(i, replicas, now)}
	b := make([]byte, len(e.b), len(e.b)+proto.Size(obs))
	copy(b, e.b)
	if b, err = (proto.MarshalOptions{UseCachedSize: true}).MarshalAppend(b, obs); err != nil {
		return nil, fmt.Errorf("encode the request of %s: %w", r.wl.Ref(i).GetName(), err)
	}
	return b, nil
}

// recommend sends target i's encoded request (encoded) on cc.
func (r *requests) recommend(ctx context.Context, cc grpc.ClientConnInterface, i int, now time.Time) (*pb.RecommendResponse, error) {
	b, err := r.encoded(i, now)
	if err != nil {
		return nil, err
	}
	resp := new(pb.RecommendResponse)
	if err := cc.Invoke(ctx, pb.RecommenderService_Recommend_FullMethodName, encodedMessage(b), resp, recommendOpts...); err != nil {
		return nil, fmt.Errorf("recommend %s: %w", r.wl.Ref(i).GetName(), err)
	}
	return resp, nil
}

// encodedMessage is a request already encoded, which requestCodec sends as it is.
type encodedMessage []byte

// protoCodec is grpc-go's proto codec, the one every call uses by default.
var protoCodec = encoding.GetCodecV2(encproto.Name)

// requestCodec sends an encodedMessage as it is, and leaves everything else, the response
// included, to the proto codec.
type requestCodec struct{}

// Marshal hands an encoded request over to gRPC, which only reads it.
func (requestCodec) Marshal(v any) (mem.BufferSlice, error) {
	if b, ok := v.(encodedMessage); ok {
		return mem.BufferSlice{mem.SliceBuffer(b)}, nil
	}
	return protoCodec.Marshal(v)
}

// Unmarshal is the proto codec's.
func (requestCodec) Unmarshal(data mem.BufferSlice, v any) error {
	return protoCodec.Unmarshal(data, v)
}

// Name is empty: grpc-go sends a forced codec's name as the content-subtype, and an empty one
// keeps the content-type the plain "application/grpc" (protobuf) of the generated client, so
// servers see the same calls as from it.
func (requestCodec) Name() string { return "" }

// recommendOpts are the options of every encoded Recommend: those of the generated client and
// the codec. Made once, as a call would allocate them.
var recommendOpts = []grpc.CallOption{grpc.StaticMethod(), grpc.ForceCodecV2(requestCodec{})}
