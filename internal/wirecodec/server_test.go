package wirecodec_test

import (
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/hpa-recommender/hpa-recommender/internal/wirecodec"
	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
	"github.com/hpa-recommender/hpa-recommender/server"
	"github.com/hpa-recommender/hpa-recommender/server/servertest"
	"github.com/hpa-recommender/hpa-recommender/store/memstore"
)

// rawCodec sends a request as the bytes it is given, which a protobuf-go client would refuse
// to encode when they are invalid, and decodes responses with protobuf-go.
type rawCodec struct{}

func (rawCodec) Name() string { return "proto" }

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(v.([]byte))}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	return proto.Unmarshal(data.Materialize(), v.(proto.Message))
}

// cpuAndQueue is 20 ready pods requesting 500m CPU and using 450m (90 % against a 60 %
// target: 30 replicas) and a queue of 300 against 30 per pod (10 replicas): the decision is 30
// (the behavior allows doubling, max is 40).
func cpuAndQueue(now time.Time) *pb.RecommendRequest {
	start := timestamppb.New(now.Add(-time.Hour))
	ready := true
	req := &pb.RecommendRequest{
		Target: &pb.TargetRef{Cluster: "c1", Namespace: "shop", Name: "web"},
		Spec: &pb.HorizontalPodAutoscalerSpec{
			MinReplicas: proto.Int32(2),
			MaxReplicas: 40,
			Metrics: []*pb.MetricSpec{
				{Type: "Resource", Resource: &pb.ResourceMetricSource{
					Name: "cpu", Target: &pb.MetricTarget{Type: "Utilization", AverageUtilization: proto.Int32(60)},
				}},
				{Type: "External", External: &pb.ExternalMetricSource{
					Metric: &pb.MetricIdentifier{Name: "queue"},
					Target: &pb.MetricTarget{Type: "AverageValue", AverageValue: proto.String("30")},
				}},
			},
			Behavior: &pb.HorizontalPodAutoscalerBehavior{ScaleUp: &pb.HPAScalingRules{
				Policies: []*pb.HPAScalingPolicy{{Type: "Percent", Value: 100, PeriodSeconds: 15}},
			}},
		},
		CurrentReplicas: 20,
		Metrics:         []*pb.MetricObservation{{}, {Values: []string{"300"}}},
	}
	for i := range 20 {
		name := "web-" + strconv.Itoa(i)
		req.Pods = append(req.Pods, &pb.PodState{
			Name: name, Phase: "Running", Ready: &ready, ReadyTransitionTime: start, StartTime: start,
			Containers: []*pb.ContainerState{{Name: "app", Requests: map[string]string{"cpu": "500m", "memory": "256Mi"}}},
		})
		req.Metrics[0].PodValues = append(req.Metrics[0].PodValues, &pb.PodMetricValue{
			Pod: name, Value: "450m", Timestamp: timestamppb.New(now.Add(-10 * time.Second)), Window: durationpb.New(30 * time.Second),
		})
	}
	return req
}

// serveDefault serves h's RecommenderService on loopback with grpc-go's default codec: how the
// server answered before it had this codec.
func serveDefault(t *testing.T, h pb.RecommenderServiceServer) *grpc.ClientConn {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	pb.RegisterRecommenderServiceServer(gs, h)
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	return dial(t, lis.Addr().String())
}

func dial(t *testing.T, addr string) *grpc.ClientConn {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// TestServerAnswersRecommendAsBefore: the server (through this codec) answers Recommend as the
// same handlers behind grpc-go's default codec, over gRPC on loopback, for valid, invalid and
// dry-run requests, for one with an unknown field, and for requests that cannot be decoded.
func TestServerAnswersRecommendAsBefore(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	cfg := server.DefaultConfig()
	addr, _ := servertest.Start(t, cfg, server.Deps{Now: clock})
	conn := dial(t, addr)
	cfg.Store = server.StoreMemory
	st := memstore.New()
	t.Cleanup(func() { st.Close() })
	handlers, err := server.New(cfg, server.Deps{Store: st, Now: clock, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	before := serveDefault(t, handlers)

	const method = "/recommender.v1.RecommenderService/Recommend"
	// call sends b raw (so that it may be invalid) to both servers and compares the answers.
	ctx := t.Context()
	call := func(what string, b []byte) *pb.RecommendResponse {
		t.Helper()
		var got, want pb.RecommendResponse
		gerr := conn.Invoke(ctx, method, b, &got, grpc.ForceCodecV2(rawCodec{}))
		werr := before.Invoke(ctx, method, b, &want, grpc.ForceCodecV2(rawCodec{}))
		if diff := cmp.Diff(status.Convert(werr).Proto(), status.Convert(gerr).Proto(), protocmp.Transform()); diff != "" {
			t.Errorf("%s: status (-before +now):\n%s", what, diff)
		}
		if diff := cmp.Diff(&want, &got, protocmp.Transform(), protocmp.IgnoreFields(&pb.RecommendResponse{}, "recommendation_id")); diff != "" {
			t.Errorf("%s: response (-before +now):\n%s", what, diff)
		}
		return &got
	}
	marshal := func(m proto.Message) []byte {
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}

	dry := cpuAndQueue(now)
	dry.DryRun = true
	if resp := call("dry run", marshal(dry)); resp.DesiredReplicas != 30 || !resp.Scale {
		t.Fatalf("desired %d scale %v, want 30 true:\n%v", resp.DesiredReplicas, resp.Scale, resp)
	}
	unready := cpuAndQueue(now)
	unready.Pods[3].Ready = proto.Bool(false)
	unready.Pods[4].DeletionTimestamp = timestamppb.New(now)
	unready.Pods[5].Phase = "Pending"
	unready.Metrics[0].PodValues = unready.Metrics[0].PodValues[:15]
	badQuantity := cpuAndQueue(now)
	badQuantity.Metrics[1].Values = []string{"ten"}
	badQuantity.Pods[0].Containers[0].Requests["cpu"] = "half"
	call("first", marshal(cpuAndQueue(now)))
	call("unready, deleting, pending and missing pods", marshal(unready))
	call("again", marshal(cpuAndQueue(now)))
	call("bad quantities", marshal(badQuantity))
	call("empty", nil)

	valid := marshal(dry)
	call("an unknown field", protowire.AppendVarint(protowire.AppendTag(valid, 1000, protowire.VarintType), 1))
	name := "web-0"
	if strings.Count(string(valid), name) != 2 { // the pod and its sample
		t.Fatalf("%q occurs %d times in the request", name, strings.Count(string(valid), name))
	}
	invalid := []byte(strings.Replace(string(valid), name, "web-\xff", 1))
	// Requests that do not decode: behind the default codec grpc-go answers Internal; the
	// server answers InvalidArgument with the same protobuf error.
	undecodable := func(what string, b []byte, mention string) {
		t.Helper()
		werr := before.Invoke(ctx, method, b, new(pb.RecommendResponse), grpc.ForceCodecV2(rawCodec{}))
		gerr := conn.Invoke(ctx, method, b, new(pb.RecommendResponse), grpc.ForceCodecV2(rawCodec{}))
		want, got := status.Convert(werr), status.Convert(gerr)
		protoErr, found := strings.CutPrefix(want.Message(), "grpc: failed to unmarshal the received message: ")
		if want.Code() != codes.Internal || !found {
			t.Fatalf("%s: the default codec answered %v; the test expects grpc-go's Internal", what, werr)
		}
		if got.Code() != codes.InvalidArgument || !strings.HasSuffix(got.Message(), protoErr) || !strings.Contains(got.Message(), mention) {
			t.Errorf("%s: got %v, want InvalidArgument ending in %q and naming %q", what, gerr, protoErr, mention)
		}
		if br := badRequest(got); len(br) != 1 || br[0].GetField() != "" || !strings.HasSuffix(br[0].GetDescription(), protoErr) {
			t.Errorf("%s: BadRequest %v, want one violation of the whole request (empty path)", what, br)
		}
	}
	undecodable("invalid UTF-8 in a pod name", invalid, "invalid UTF-8")
	undecodable("truncated", valid[:len(valid)-1], "recommender.v1.RecommendRequest")
	undecodable("garbage", []byte{0xff, 0xff, 0xff, 0x01}, "recommender.v1.RecommendRequest")
	if n := wirecodec.Undecodable(); n != 0 {
		t.Errorf("the codec still holds %d decoding errors", n)
	}
	if n := wirecodec.Lent(); n != 0 {
		t.Errorf("the codec still lends messages to %d finished requests", n)
	}
}

func badRequest(st *status.Status) []*errdetails.BadRequest_FieldViolation {
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			return br.GetFieldViolations()
		}
	}
	return nil
}

// TestUndecodableRequestsBeforeAuth: with tokens configured, an undecodable request of any
// method is answered InvalidArgument whether or not the caller authenticated (the check comes
// before authentication, so no decoding error is left held by a rejected call), and a valid
// request without a token is still Unauthenticated.
func TestUndecodableRequestsBeforeAuth(t *testing.T) {
	cfg := server.DefaultConfig()
	cfg.TokensFile = filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(cfg.TokensFile, []byte("secret,c1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr, _ := servertest.Start(t, cfg, server.Deps{})
	conn := dial(t, addr)
	garbage := []byte{0xff, 0xff, 0xff, 0x01}
	authed := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer secret")
	for _, ctx := range []context.Context{t.Context(), authed} {
		for _, method := range []string{"Recommend", "ReportScale", "GetTarget", "ListTargets", "DeleteTarget", "Simulate"} {
			err := conn.Invoke(ctx, "/recommender.v1.RecommenderService/"+method, garbage, new(emptypb.Empty), grpc.ForceCodecV2(rawCodec{}))
			if st := status.Convert(err); st.Code() != codes.InvalidArgument || !strings.Contains(st.Message(), "recommender.v1."+method+"Request") {
				t.Errorf("%s: %v, want InvalidArgument naming recommender.v1.%sRequest", method, err, method)
			}
		}
	}
	_, err := pb.NewRecommenderServiceClient(conn).GetTarget(t.Context(), &pb.GetTargetRequest{Target: &pb.TargetRef{Cluster: "c1", Namespace: "n", Name: "x"}})
	if status.Code(err) != codes.Unauthenticated {
		t.Errorf("a valid request without a token: %v, want Unauthenticated", err)
	}
	if n := wirecodec.Undecodable(); n != 0 {
		t.Errorf("the codec still holds %d decoding errors", n)
	}
	// A Recommend decoded into recycled messages and then refused (no token, another
	// cluster's target) or answered hands them back all the same.
	rec := pb.NewRecommenderServiceClient(conn)
	req := &pb.RecommendRequest{Target: &pb.TargetRef{Cluster: "c1", Namespace: "n", Name: "x"}, Spec: &pb.HorizontalPodAutoscalerSpec{MaxReplicas: 3},
		CurrentReplicas: 1, Pods: []*pb.PodState{{Name: "p", Phase: "Running", Ready: proto.Bool(true), StartTime: timestamppb.New(time.Now().Add(-time.Hour)),
			Containers: []*pb.ContainerState{{Name: "c", Requests: map[string]string{"cpu": "1"}}}}},
		Metrics: []*pb.MetricObservation{{PodValues: []*pb.PodMetricValue{{Pod: "p", Value: "500m", Timestamp: timestamppb.Now()}}}}}
	if _, err := rec.Recommend(t.Context(), req); status.Code(err) != codes.Unauthenticated {
		t.Errorf("Recommend without a token: %v, want Unauthenticated", err)
	}
	other := proto.CloneOf(req)
	other.Target.Cluster = "c2"
	if _, err := rec.Recommend(authed, other); status.Code(err) != codes.PermissionDenied {
		t.Errorf("Recommend for another cluster: %v, want PermissionDenied", err)
	}
	if _, err := rec.Recommend(authed, req); err != nil {
		t.Errorf("Recommend: %v", err)
	}
	if n := wirecodec.Lent(); n != 0 {
		t.Errorf("the codec still lends messages to %d finished requests", n)
	}
}
