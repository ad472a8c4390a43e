package goclient_test

import (
	"cmp"
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/hpa-recommender/hpa-recommender/clients/goclient"
	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

// The examples use only the package's API and the generated messages: each compiles and runs
// as a program of its own against a running service, at $HPACTL_ADDR or `make run`'s address.
// (Their test binary starts one: main_ext_test.go.) Each example uses targets of its own.

// serviceAddr is where the examples find the service.
func serviceAddr() string { return cmp.Or(os.Getenv("HPACTL_ADDR"), "127.0.0.1:50051") }

// webRequest is a Deployment of the given name (cluster prod, namespace shop) at 2 replicas
// whose pods use 90% of their CPU request against a 60% target.
func webRequest(name string) *pb.RecommendRequest {
	started := time.Now().Add(-time.Hour)
	pod := func(name string) *pb.PodState {
		return &pb.PodState{
			Name: name, Phase: "Running", Ready: proto.Bool(true),
			StartTime:           timestamppb.New(started),
			ReadyTransitionTime: timestamppb.New(started.Add(30 * time.Second)),
			Containers:          []*pb.ContainerState{{Name: "app", Requests: map[string]string{"cpu": "500m"}}},
		}
	}
	return &pb.RecommendRequest{
		Target: &pb.TargetRef{Cluster: "prod", Namespace: "shop", Name: name},
		Spec: &pb.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: &pb.CrossVersionObjectReference{ApiVersion: "apps/v1", Kind: "Deployment", Name: name},
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
			{Pod: "web-a", Value: "450m", Timestamp: timestamppb.New(time.Now())},
			{Pod: "web-b", Value: "450m", Timestamp: timestamppb.New(time.Now())},
		}}},
	}
}

func ExampleClient_Recommend() {
	c, err := goclient.New(serviceAddr(), goclient.WithTimeout(5*time.Second), goclient.WithRetries(2))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	resp, err := c.Recommend(context.Background(), webRequest("web"))
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
	c, err := goclient.New(serviceAddr())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()

	req := webRequest("checkout")
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
	c, err := goclient.New(serviceAddr())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()

	if _, err := c.Recommend(ctx, webRequest("cart")); err != nil {
		log.Fatal(err)
	}
	t, err := c.GetTarget(ctx, &pb.GetTargetRequest{Target: &pb.TargetRef{Cluster: "prod", Namespace: "shop", Name: "cart"}})
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
	c, err := goclient.New(serviceAddr())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()

	for _, name := range []string{"web", "api", "worker"} {
		req := webRequest(name)
		req.Target.Namespace = "catalog"
		if _, err := c.Recommend(ctx, req); err != nil {
			log.Fatal(err)
		}
	}
	// Two targets per page: ListAllTargets follows nextPageToken.
	all, err := c.ListAllTargets(ctx, &pb.ListTargetsRequest{Cluster: "prod", Namespace: "catalog", PageSize: 2}, 0)
	if err != nil {
		log.Fatal(err)
	}
	for _, t := range all {
		fmt.Println(t.GetTarget().GetNamespace() + "/" + t.GetTarget().GetName())
	}
	// Output:
	// catalog/api
	// catalog/web
	// catalog/worker
}

func ExampleClient_Simulate() {
	c, err := goclient.New(serviceAddr())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	base := webRequest("web")
	t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	req := &pb.SimulateRequest{Spec: base.GetSpec(), InitialReplicas: 2}
	for i := range 3 {
		req.Steps = append(req.Steps, &pb.SimulateStep{
			Time:            timestamppb.New(t0.Add(time.Duration(i) * 15 * time.Second)),
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

func ExampleFieldViolations() {
	c, err := goclient.New(serviceAddr())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	req := webRequest("search")
	req.Spec.MaxReplicas = 0
	req.Spec.Metrics[0].Resource.Target.AverageUtilization = proto.Int32(-5)
	_, err = c.Recommend(context.Background(), req)
	fmt.Println(status.Code(err) == codes.InvalidArgument)
	for _, v := range goclient.FieldViolations(err) {
		fmt.Printf("%s: %s\n", v.Field, v.Description)
	}
	// Output:
	// true
	// spec.maxReplicas: Invalid value: 0: must be greater than 0
	// spec.maxReplicas: Invalid value: 0: must be greater than or equal to `minReplicas`
	// spec.metrics[0].resource.target.averageUtilization: Invalid value: -5: must be greater than 0
}
