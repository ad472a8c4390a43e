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

// reuseCalls is how many calls of a target send one encoding of its request. Building a
// request and marshalling it (proto.Marshal of the generated message) costs the generator
// tens of microseconds, several times the rest of a call's client side, CPU that on a shared
// machine is taken from the server it measures: encoding every call halved the rate the
// generator drove the no-op baseline at. One set of encodings serves a whole Run (every target
// is encoded once before the first run, unmeasured: fill), and a target's request is built again after
// reuseCalls calls, or as soon as a reported scale changed its replica count: its CPU demand
// still follows the workload's cycle, one step every reuseCalls calls. It costs a copy of each
// target's request in memory, about 2.3 KB.
const reuseCalls = 8

// requests holds each target's encoded Recommend request, reused for reuseCalls calls.
type requests struct {
	wl      *workload.Workload
	targets []atomic.Pointer[encodedRequest]
}

// encodedRequest is one target's request as proto.Marshal wrote it, for replicas pods. Its
// bytes are never written again: calls in flight may be sending them.
type encodedRequest struct {
	replicas int32
	uses     atomic.Int32
	b        []byte
}

func newRequests(wl *workload.Workload) *requests {
	return &requests{wl: wl, targets: make([]atomic.Pointer[encodedRequest], wl.Targets())}
}

// fill encodes every target's request, as its next call would.
func (r *requests) fill(now time.Time) error {
	for i := range r.targets {
		if _, err := r.encoded(i, now); err != nil {
			return err
		}
	}
	return nil
}

// encoded returns target i's request, encoded: the one its last calls sent, unless it has
// been sent reuseCalls times or the target's replica count changed since; then the workload's
// next Request(i, now), marshalled.
func (r *requests) encoded(i int, now time.Time) ([]byte, error) {
	replicas := r.wl.Replicas(i)
	if e := r.targets[i].Load(); e != nil && e.replicas == replicas && e.uses.Add(1) <= reuseCalls {
		return e.b, nil
	}
	req := r.wl.Request(i, now)
	b, err := proto.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encode the request of %s: %w", req.GetTarget().GetName(), err)
	}
	e := &encodedRequest{replicas: req.GetCurrentReplicas(), b: b}
	e.uses.Store(1)
	r.targets[i].Store(e)
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
