package bench

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	encproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/hpa-recommender/hpa-recommender/internal/workload"
	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

// TestRecommendSendsRequest sends encoded requests as the generator does (recommend) to a
// server that decodes them with the proto codec: it receives Request's request, as plain
// "application/grpc" (protobuf, what the generated client sends), and the response decodes.
func TestRecommendSendsRequest(t *testing.T) {
	var (
		mu           sync.Mutex
		contentTypes []string
	)
	srv := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		md, _ := metadata.FromIncomingContext(ctx)
		mu.Lock()
		contentTypes = append(contentTypes, md.Get("content-type")...)
		mu.Unlock()
		return h(ctx, req)
	}))
	received := make(chan *pb.RecommendRequest, 1)
	answer := fixedResponse()
	pb.RegisterRecommenderServiceServer(srv, &recordingServer{NoopServer{resp: answer}, received})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	conns, closeAll, err := dial([]string{lis.Addr().String()}, 1, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeAll)

	wl := workload.NewWorkload("c", "ns", 5)
	now := time.Now()
	for i := range 5 {
		wl.Applied(i, int32(5*i+1))
		resp, err := recommend(t.Context(), conns.conns[0].cc, wl, i, now)
		if err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(resp, answer) {
			t.Errorf("target %d: response %v, want the baseline's", i, resp)
		}
		got := <-received
		wl.Rewind(i)
		if want := wl.Request(i, now); !proto.Equal(got, want) {
			t.Errorf("target %d: the server received another request (-want +got):\n%s", i, cmp.Diff(want, got, protocmp.Transform()))
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(contentTypes) != 5 {
		t.Fatalf("content types %q, want one per call", contentTypes)
	}
	for _, ct := range contentTypes {
		if ct != "application/grpc" {
			t.Errorf("content type %q, want application/grpc", ct)
		}
	}
}

// recordingServer is the baseline, passing on each request it receives.
type recordingServer struct {
	NoopServer
	received chan<- *pb.RecommendRequest
}

func (s *recordingServer) Recommend(ctx context.Context, req *pb.RecommendRequest) (*pb.RecommendResponse, error) {
	s.received <- req
	return s.NoopServer.Recommend(ctx, req)
}

// BenchmarkRequest is the generator's per-call cost of a Recommend request up to the bytes
// gRPC writes, each freed as gRPC frees it once written: "message" builds the request with
// Request and marshals it with grpc-go's proto codec, as the generator did; "wire" encodes it
// with encodeRequest and passes it through requestCodec, as the generator does.
func BenchmarkRequest(b *testing.B) {
	const targets = 1000
	wl := workload.NewWorkload("bench", "bench", targets)
	now := time.Now()
	run := func(b *testing.B, codec encoding.CodecV2, msg func(i int) any) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			data, err := codec.Marshal(msg(i % targets))
			if err != nil {
				b.Fatal(err)
			}
			data.Free()
		}
	}
	b.Run("message", func(b *testing.B) {
		run(b, encoding.GetCodecV2(encproto.Name), func(i int) any { return wl.Request(i, now) })
	})
	b.Run("wire", func(b *testing.B) {
		run(b, requestCodec{}, func(i int) any { return encodeRequest(wl, i, now) })
	})
}
