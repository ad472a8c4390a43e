package bench

import (
	"context"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/hpa-recommender/hpa-recommender/internal/workload"
	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

// NoopServer is the baseline: a RecommenderService that decodes each request and answers a
// fixed, realistically sized response without deciding or storing anything. Driving it with
// the same generator, payloads and transport as the real service isolates the cost of the
// service itself from that of the generator, gRPC and the loopback.
type NoopServer struct {
	pb.UnimplementedRecommenderServiceServer
	resp *pb.RecommendResponse
	grpc *grpc.Server
	lis  net.Listener
}

// StartNoop serves the baseline on a free loopback port.
func StartNoop() (*NoopServer, error) { return ListenNoop("127.0.0.1:0") }

// ListenNoop serves the baseline on addr (host:port; port 0 picks a free one).
func ListenNoop(addr string) (*NoopServer, error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &NoopServer{resp: fixedResponse(), grpc: grpc.NewServer(), lis: lis}
	pb.RegisterRecommenderServiceServer(s.grpc, s)
	go func() { _ = s.grpc.Serve(lis) }()
	return s, nil
}

// Addr is the address to dial.
func (s *NoopServer) Addr() string { return s.lis.Addr().String() }

// Stop stops serving.
func (s *NoopServer) Stop() { s.grpc.Stop() }

// Recommend answers the fixed "no change" decision.
func (s *NoopServer) Recommend(context.Context, *pb.RecommendRequest) (*pb.RecommendResponse, error) {
	return s.resp, nil
}

// ReportScale answers recorded.
func (s *NoopServer) ReportScale(context.Context, *pb.ReportScaleRequest) (*pb.ReportScaleResponse, error) {
	return &pb.ReportScaleResponse{Recorded: true}, nil
}

// fixedResponse is shaped like the service's answer to a workload.Workload request that does not
// scale: two metric statuses, three conditions and an explanation.
func fixedResponse() *pb.RecommendResponse {
	now := timestamppb.New(time.Now().Truncate(time.Second))
	cond := func(typ, reason, msg string) *pb.Condition {
		return &pb.Condition{Type: typ, Status: "True", Reason: reason, Message: msg, LastTransitionTime: now}
	}
	return &pb.RecommendResponse{
		DecisionTime:    now,
		DesiredReplicas: workload.InitialReplicas,
		CurrentReplicas: workload.InitialReplicas,
		CurrentMetrics: []*pb.MetricStatus{
			{Type: "Resource", Resource: &pb.ResourceMetricStatus{Name: "cpu", Current: &pb.MetricValueStatus{AverageValue: proto.String("300m"), AverageUtilization: proto.Int32(60)}}},
			{Type: "External", External: &pb.ExternalMetricStatus{
				Metric:  &pb.MetricIdentifier{Name: "queue_messages_ready", Selector: &pb.LabelSelector{MatchLabels: map[string]string{"queue": "work"}}},
				Current: &pb.MetricValueStatus{AverageValue: proto.String("21")},
			}},
		},
		Conditions: []*pb.Condition{
			cond("AbleToScale", "ReadyForNewScale", "recommended size matches current size"),
			cond("ScalingActive", "ValidMetricFound", "the HPA was able to successfully calculate a replica count from cpu resource utilization (percentage of request)"),
			{Type: "ScalingLimited", Status: "False", Reason: "DesiredWithinRange", Message: "the desired count is within the acceptable range", LastTransitionTime: now},
		},
		Explanation: &pb.Explanation{
			Message: "cpu resource utilization (percentage of request) proposes 20; within tolerance of the current 20",
			Metrics: []*pb.MetricExplanation{
				{Index: 0, Name: "cpu resource utilization (percentage of request)", Proposal: 20, UsageRatio: 1.0, ReadyPods: 20},
				{Index: 1, Name: "external metric queue_messages_ready", Proposal: 14, UsageRatio: 0.7},
			},
			Proposal: 20, Stabilized: 20, StabilizationWindow: durationpb.New(30 * time.Second), Limited: 20, Final: 20,
		},
	}
}
