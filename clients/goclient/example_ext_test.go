package goclient_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/hpa-recommender/hpa-recommender/clients/goclient"
	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
	"github.com/hpa-recommender/hpa-recommender/server"
	"github.com/hpa-recommender/hpa-recommender/store/memstore"
)

// startServer runs a real hpa-recommender with the in-memory store on a loopback port and
// returns its address and a function that stops it.
func startServer() (string, func()) {
	cfg := server.DefaultConfig()
	cfg.Store = server.StoreMemory
	cfg.MetricsListen = ""
	srv, err := server.New(cfg, server.Deps{
		Store:  memstore.New(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		log.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = srv.Serve(ctx, lis); close(done) }()
	return lis.Addr().String(), func() { cancel(); <-done }
}

// webRequest is a Deployment "web" at 2 replicas whose pods use 90% of their CPU request
// against a 60% target.
func webRequest() *pb.RecommendRequest {
	started := time.Now().Add(-time.Hour)
	pod := func(name string) *pb.PodState {
		return &pb.PodState{
			Name: name, Phase: "Running", Ready: proto.Bool(true),
			StartTime:           timestamppbNew(started),
			ReadyTransitionTime: timestamppbNew(started.Add(30 * time.Second)),
			Containers:          []*pb.ContainerState{{Name: "app", Requests: map[string]string{"cpu": "500m"}}},
		}
	}
	return &pb.RecommendRequest{
		Target: &pb.TargetRef{Cluster: "prod", Namespace: "shop", Name: "web"},
		Spec: &pb.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: &pb.CrossVersionObjectReference{ApiVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:    proto.Int32(2),
			MaxReplicas:    10,
			Metrics: []*pb.MetricSpec{{
				Type: "Resource",
				Resource: &pb.ResourceMetricSource{Name: "cpu", Target: &pb.MetricTarget{
					Type: "Utilization", AverageUtilization: proto.Int32(60),
				}},
			}},
		},
		CurrentReplicas: 2,
		Pods:            []*pb.PodState{pod("web-a"), pod("web-b")},
		Metrics: []*pb.MetricObservation{{PodValues: []*pb.PodMetricValue{
			{Pod: "web-a", Value: "450m", Timestamp: timestamppbNew(time.Now())},
			{Pod: "web-b", Value: "450m", Timestamp: timestamppbNew(time.Now())},
		}}},
	}
}

func ExampleClient_Recommend() {
	addr, stop := startServer()
	defer stop()

	c, err := goclient.New(addr, goclient.WithTimeout(5*time.Second), goclient.WithRetries(2))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	resp, err := c.Recommend(context.Background(), webRequest())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("desired:", resp.GetDesiredReplicas(), "scale:", resp.GetScale())
	fmt.Println("metric 0 usage ratio:", resp.GetExplanation().GetMetrics()[0].GetUsageRatio())
	fmt.Println("has recommendation id:", resp.GetRecommendationId() != "")
	// Output:
	// desired: 3 scale: true
	// metric 0 usage ratio: 1.5
	// has recommendation id: true
}

func ExampleClient_ReportScale() {
	addr, stop := startServer()
	defer stop()
	c, err := goclient.New(addr)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()

	req := webRequest()
	rec, err := c.Recommend(ctx, req)
	if err != nil {
		log.Fatal(err)
	}
	report := &pb.ReportScaleRequest{Target: req.GetTarget(), RecommendationId: rec.GetRecommendationId(), Succeeded: true}
	first, err := c.ReportScale(ctx, report)
	if err != nil {
		log.Fatal(err)
	}
	again, err := c.ReportScale(ctx, report)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("recorded:", first.GetRecorded(), "then:", again.GetRecorded())
	// Output:
	// recorded: true then: false
}

func ExampleClient_GetTarget() {
	addr, stop := startServer()
	defer stop()
	c, err := goclient.New(addr)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()

	if _, err := c.Recommend(ctx, webRequest()); err != nil {
		log.Fatal(err)
	}
	t, err := c.GetTarget(ctx, &pb.GetTargetRequest{Target: &pb.TargetRef{Cluster: "prod", Namespace: "shop", Name: "web"}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("last decision:", t.GetLastDecision().GetResponse().GetDesiredReplicas())
	fmt.Println("pending:", len(t.GetPendingDecisions()))
	// Output:
	// last decision: 3
	// pending: 1
}

func ExampleClient_ListAllTargets() {
	addr, stop := startServer()
	defer stop()
	c, err := goclient.New(addr)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()

	for _, name := range []string{"web", "api", "worker"} {
		req := webRequest()
		req.Target.Name = name
		if _, err := c.Recommend(ctx, req); err != nil {
			log.Fatal(err)
		}
	}
	// Two targets per page: ListAllTargets follows nextPageToken.
	all, err := c.ListAllTargets(ctx, &pb.ListTargetsRequest{Cluster: "prod", PageSize: 2}, 0)
	if err != nil {
		log.Fatal(err)
	}
	for _, t := range all {
		fmt.Println(t.GetTarget().GetNamespace() + "/" + t.GetTarget().GetName())
	}
	// Output:
	// shop/api
	// shop/web
	// shop/worker
}

func ExampleClient_Simulate() {
	addr, stop := startServer()
	defer stop()
	c, err := goclient.New(addr)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	base := webRequest()
	t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	req := &pb.SimulateRequest{Spec: base.GetSpec(), InitialReplicas: 2}
	for i := range 3 {
		req.Steps = append(req.Steps, &pb.SimulateStep{
			Time:            timestamppbNew(t0.Add(time.Duration(i) * 15 * time.Second)),
			CurrentReplicas: proto.Int32(2),
			Pods:            base.GetPods(),
			Metrics:         base.GetMetrics(),
		})
	}
	resp, err := c.Simulate(context.Background(), req)
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range resp.GetSteps() {
		fmt.Println(s.GetTime().AsTime().Format(time.TimeOnly), s.GetDesiredReplicas())
	}
	// Output:
	// 12:00:00 3
	// 12:00:15 3
	// 12:00:30 3
}
