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
// Successive calls of a target follow its demand cycle, and a reported scale makes the next
// call send the new replica count.
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
	if err := reqs.fill(); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	calls := 0
	// check makes target i's next call and fails t unless the server received what Request
	// builds for that call.
	check := func(i int) *pb.RecommendRequest {
		t.Helper()
		calls++
		resp, err := reqs.recommend(t.Context(), conns.conns[0].cc, i, now)
		if err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(resp, answer) {
			t.Errorf("target %d: response %v, want the baseline's", i, resp)
		}
		got := <-received
		wl.Rewind(i)
		if want := wl.Request(i, now); !proto.Equal(got, want) {
			t.Fatalf("target %d, call %d: the server received another request (-want +got):\n%s", i, calls, cmp.Diff(want, got, protocmp.Transform()))
		}
		return got
	}
	for i := range 5 {
		first := check(i)
		if second := check(i); proto.Equal(first, second) {
			t.Errorf("target %d: two calls sent the same request; want its demand to move", i)
		}
		wl.Applied(i, int32(5*i+1))
		if got := check(i); got.GetCurrentReplicas() != int32(5*i+1) || len(got.GetPods()) != 5*i+1 {
			t.Errorf("target %d: after a scale to %d the call sent %d replicas, %d pods", i, 5*i+1, got.GetCurrentReplicas(), len(got.GetPods()))
		}
	}
	// The encoding is as long as proto.Marshal's of the whole request: no field twice.
	b, err := reqs.encoded(3, now)
	if err != nil {
		t.Fatal(err)
	}
	wl.Rewind(3)
	if want := proto.Size(wl.Request(3, now)); len(b) != want {
		t.Errorf("the encoding is %d bytes, proto.Marshal's %d", len(b), want)
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
// gRPC writes: "whole" builds the request with Request and marshals it with proto.Marshal;
// "observations" is what the generator pays per call, the call's Metrics built and marshalled
// after the target's shared part.
func BenchmarkRequest(b *testing.B) {
	const targets = 1000
	wl := workload.NewWorkload("bench", "bench", targets)
	now := time.Now()
	b.Run("whole", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if _, err := proto.Marshal(wl.Request(i%targets, now)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("observations", func(b *testing.B) {
		reqs := newRequests(wl)
		if err := reqs.fill(); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if _, err := reqs.encoded(i%targets, now); err != nil {
				b.Fatal(err)
			}
		}
	})
}
