package bench

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/hpa-recommender/hpa-recommender/internal/workload"
	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

// TestRecommendSendsRequest sends encoded requests as the generator does (requests.recommend)
// to a server that decodes them with the proto codec: it receives Request's request, as plain
// "application/grpc" (protobuf, what the generated client sends), and the response decodes.
// A target's next calls send the same request again, up to reuseCalls in all, and a reported
// scale makes the next call send the new replica count.
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
	reqs := newRequests(wl)
	now := time.Now()
	call := func(i int) *pb.RecommendRequest {
		t.Helper()
		resp, err := reqs.recommend(t.Context(), conns.conns[0].cc, i, now)
		if err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(resp, answer) {
			t.Errorf("target %d: response %v, want the baseline's", i, resp)
		}
		return <-received
	}
	calls := 0
	for i := range 5 {
		wl.Applied(i, int32(5*i+1))
		got := call(i)
		calls++
		wl.Rewind(i)
		want := wl.Request(i, now)
		if !proto.Equal(got, want) {
			t.Errorf("target %d: the server received another request (-want +got):\n%s", i, cmp.Diff(want, got, protocmp.Transform()))
		}
		for k := 2; k <= reuseCalls; k++ {
			calls++
			if again := call(i); !proto.Equal(again, want) {
				t.Fatalf("target %d, call %d of %d: another request", i, k, reuseCalls)
			}
		}
		calls++
		if next := call(i); proto.Equal(next, want) {
			t.Errorf("target %d: call %d sent the first call's request again; want the next one", i, reuseCalls+1)
		}
		wl.Applied(i, 3)
		calls++
		if got := call(i); got.GetCurrentReplicas() != 3 || len(got.GetPods()) != 3 {
			t.Errorf("target %d: after a scale to 3 the call sent %d replicas, %d pods", i, got.GetCurrentReplicas(), len(got.GetPods()))
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(contentTypes) != calls {
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
// gRPC writes: "marshal" builds the request with Request and marshals it with proto.Marshal,
// as every call would without reuse; "reused" is what the generator pays per call, building and
// marshalling once every reuseCalls calls of a target.
func BenchmarkRequest(b *testing.B) {
	const targets = 1000
	wl := workload.NewWorkload("bench", "bench", targets)
	now := time.Now()
	b.Run("marshal", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if _, err := proto.Marshal(wl.Request(i%targets, now)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("reused", func(b *testing.B) {
		reqs := newRequests(wl)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if _, err := reqs.encoded(i%targets, now); err != nil {
				b.Fatal(err)
			}
		}
	})
}
