package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	encproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"

	"github.com/hpa-recommender/hpa-recommender/internal/workload"
	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

// protoCodec is grpc-go's proto codec, the one every call uses by default.
var protoCodec = encoding.GetCodecV2(encproto.Name)

// requestCodec sends a request that is already encoded (a mem.Buffer from encodeRequest) as
// it is, and leaves everything else, the response included, to the proto codec.
type requestCodec struct{}

// Marshal hands an encoded request over to gRPC, which frees it once written.
func (requestCodec) Marshal(v any) (mem.BufferSlice, error) {
	if b, ok := v.(mem.Buffer); ok {
		return mem.BufferSlice{b}, nil
	}
	return protoCodec.Marshal(v)
}

// Unmarshal is the proto codec's.
func (requestCodec) Unmarshal(data mem.BufferSlice, v any) error {
	return protoCodec.Unmarshal(data, v)
}

// Name is empty: grpc-go sends a forced codec's name as the content-subtype, and an empty one
// keeps the content-type the plain "application/grpc" (protobuf) of the generated client, so
// servers see the same calls as before.
func (requestCodec) Name() string { return "" }

// recommendOpts are the options of every encoded Recommend: those of the generated client and
// the codec. Made once, as a call would allocate them.
var recommendOpts = []grpc.CallOption{grpc.StaticMethod(), grpc.ForceCodecV2(requestCodec{})}

// recommend sends target i's next Recommend request (Request(i, now), encoded by
// AppendRequest) on cc.
func recommend(ctx context.Context, cc grpc.ClientConnInterface, wl *workload.Workload, i int, now time.Time) (*pb.RecommendResponse, error) {
	resp := new(pb.RecommendResponse)
	if err := cc.Invoke(ctx, pb.RecommenderService_Recommend_FullMethodName, encodeRequest(wl, i, now), resp, recommendOpts...); err != nil {
		return nil, fmt.Errorf("recommend %s: %w", wl.Ref(i).GetName(), err)
	}
	return resp, nil
}

// encodeRequest is w.AppendRequest into a buffer of wireBuffers. The buffer goes back to the
// pool when gRPC frees it, once it has written the request (and only then: the transport
// writes asynchronously, possibly after a failed call has returned). A buffer gRPC never
// takes, because the call failed first, is left to the garbage collector.
func encodeRequest(w *workload.Workload, i int, now time.Time) mem.Buffer {
	b := wireBuffers.Get(0)
	*b = w.AppendRequest(*b, i, now)
	return mem.NewBuffer(b, wireBuffers)
}

// wireBuffers holds the buffers of encoded requests. Each grows to the size of the requests it
// holds, so it needs neither sizes nor tiers: the generator's requests are all about alike.
var wireBuffers = &bufferPool{}

// bufferPool is a mem.BufferPool of buffers of any capacity.
type bufferPool struct{ pool sync.Pool }

// Get returns a buffer of length n.
func (p *bufferPool) Get(n int) *[]byte {
	if b, ok := p.pool.Get().(*[]byte); ok && cap(*b) >= n {
		*b = (*b)[:n]
		return b
	}
	b := make([]byte, n)
	return &b
}

// Put recycles b.
func (p *bufferPool) Put(b *[]byte) { p.pool.Put(b) }
