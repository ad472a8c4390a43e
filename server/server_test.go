package server_test

import (
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
	"github.com/hpa-recommender/hpa-recommender/server"
	"github.com/hpa-recommender/hpa-recommender/server/servertest"
	"github.com/hpa-recommender/hpa-recommender/store"
	"github.com/hpa-recommender/hpa-recommender/store/boltstore"
)

// clock is a settable decision clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

type harness struct {
	client pb.RecommenderServiceClient
	health healthpb.HealthClient
	store  store.Store
	clock  *clock
	stop   func()
}

// startServer runs a real server on a loopback port with a real bbolt file at path.
func startServer(t *testing.T, path string, clk *clock, mutate ...func(*server.Config)) *harness {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.Store = server.StoreBolt
	cfg.BoltPath = path
	cfg.MetricsListen = ""
	for _, m := range mutate {
		m(&cfg)
	}
	_, limits := cfg.DecisionLog()
	st, err := boltstore.Open(path, boltstore.Options{DecisionLog: limits})
	if err != nil {
		t.Fatal(err)
	}
	addr, stop := servertest.Start(t, cfg, server.Deps{Store: st, Now: clk.Now})
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{client: pb.NewRecommenderServiceClient(conn), health: healthpb.NewHealthClient(conn), store: st, clock: clk}
	var once sync.Once
	h.stop = func() {
		once.Do(func() {
			conn.Close()
			stop()
			if err := st.Check(); err != nil {
				t.Errorf("bbolt consistency: %v", err)
			}
			if err := st.Close(); err != nil {
				t.Errorf("close store: %v", err)
			}
		})
	}
	t.Cleanup(h.stop)
	return h
}

var t0 = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

func mustJSON[M proto.Message](t *testing.T, m M, js string) M {
	t.Helper()
	if err := protojson.Unmarshal([]byte(js), m); err != nil {
		t.Fatalf("unmarshal %s: %v", js, err)
	}
	return m
}

// externalRequest is a behavior HPA on one External AverageValue metric: the proposal is
// ceil(value / 10).
func externalRequest(t *testing.T, current int32, value string) *pb.RecommendRequest {
	t.Helper()
	req := mustJSON(t, &pb.RecommendRequest{}, `{
	  "target": {"cluster": "c1", "namespace": "shop", "name": "web"},
	  "spec": {
	    "minReplicas": 1, "maxReplicas": 20,
	    "metrics": [{"type": "External", "external": {"metric": {"name": "queue"}, "target": {"type": "AverageValue", "averageValue": "10"}}}],
	    "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}, "scaleUp": {"policies": [{"type": "Pods", "value": 2, "periodSeconds": 60}]}}
	  },
	  "metrics": [{"values": ["0"]}]
	}`)
	req.CurrentReplicas = current
	req.Metrics[0].Values = []string{value}
	return req
}

func TestRecommendReportGetListDelete(t *testing.T) {
	ctx := t.Context()
	clk := &clock{t: t0}
	h := startServer(t, filepath.Join(t.TempDir(), "db"), clk)

	// 2 replicas, demand for 8: the scaleUp policy allows +2 per 60s.
	resp, err := h.client.Recommend(ctx, externalRequest(t, 2, "80"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.DesiredReplicas != 4 || !resp.Scale || resp.RecommendationId == "" {
		t.Fatalf("got desired %d scale %v id %q, want 4 true non-empty", resp.DesiredReplicas, resp.Scale, resp.RecommendationId)
	}
	if got, want := resp.Explanation.GetLimitingPolicy(), "scaleUp Pods 2/60s"; got != want {
		t.Errorf("limitingPolicy %q, want %q", got, want)
	}

	// Report it twice: the second is an idempotent no-op.
	rep := &pb.ReportScaleRequest{Target: externalRequest(t, 0, "0").Target, RecommendationId: resp.RecommendationId, Succeeded: true}
	r1, err := h.client.ReportScale(ctx, rep)
	if err != nil || !r1.Recorded {
		t.Fatalf("first report: %v recorded=%v", err, r1.GetRecorded())
	}
	r2, err := h.client.ReportScale(ctx, rep)
	if err != nil || r2.Recorded {
		t.Fatalf("second report: %v recorded=%v, want OK and false", err, r2.GetRecorded())
	}

	got, err := h.client.GetTarget(ctx, &pb.GetTargetRequest{Target: rep.Target})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(got.History.ScaleUpEvents); n != 1 || got.History.ScaleUpEvents[0].Change != 2 {
		t.Errorf("scaleUpEvents %v, want one event of +2", got.History.ScaleUpEvents)
	}
	if got.LastDecision.GetResponse().GetRecommendationId() != resp.RecommendationId {
		t.Errorf("lastDecision id %q, want %q", got.LastDecision.GetResponse().GetRecommendationId(), resp.RecommendationId)
	}
	if len(got.PendingDecisions) != 0 {
		t.Errorf("pending %v, want none after the report", got.PendingDecisions)
	}
	if c := condition(got.Conditions, "AbleToScale"); c.GetReason() != "SucceededRescale" {
		t.Errorf("AbleToScale %v, want SucceededRescale", c)
	}

	// Within the period the policy holds the count at 4 (start of period = 2).
	clk.Set(t0.Add(30 * time.Second))
	resp, err = h.client.Recommend(ctx, externalRequest(t, 4, "80"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.DesiredReplicas != 4 || resp.Scale {
		t.Errorf("within the period: desired %d scale %v, want 4 false", resp.DesiredReplicas, resp.Scale)
	}

	list, err := h.client.ListTargets(ctx, &pb.ListTargetsRequest{Cluster: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Targets) != 1 || list.Targets[0].Target.Name != "web" || list.Targets[0].CurrentReplicas != 4 {
		t.Errorf("list %v", list.Targets)
	}

	if _, err := h.client.ReportScale(ctx, &pb.ReportScaleRequest{Target: rep.Target, RecommendationId: "nope", Succeeded: true}); status.Code(err) != codes.NotFound {
		t.Errorf("unknown id: %v, want NotFound", err)
	}
	if _, err := h.client.DeleteTarget(ctx, &pb.DeleteTargetRequest{Target: rep.Target}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.client.GetTarget(ctx, &pb.GetTargetRequest{Target: rep.Target}); status.Code(err) != codes.NotFound {
		t.Errorf("after delete: %v, want NotFound", err)
	}
	if _, err := h.client.DeleteTarget(ctx, &pb.DeleteTargetRequest{Target: rep.Target}); status.Code(err) != codes.NotFound {
		t.Errorf("second delete: %v, want NotFound", err)
	}
}

func condition(cs []*pb.Condition, typ string) *pb.Condition {
	for _, c := range cs {
		if c.Type == typ {
			return c
		}
	}
	return nil
}

func TestReportScaleFailureKeepsNoEvent(t *testing.T) {
	ctx := t.Context()
	h := startServer(t, filepath.Join(t.TempDir(), "db"), &clock{t: t0})
	resp, err := h.client.Recommend(ctx, externalRequest(t, 2, "80"))
	if err != nil {
		t.Fatal(err)
	}
	target := externalRequest(t, 0, "0").Target
	if _, err := h.client.ReportScale(ctx, &pb.ReportScaleRequest{Target: target, RecommendationId: resp.RecommendationId}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("failure without error text: %v, want InvalidArgument", err)
	}
	if _, err := h.client.ReportScale(ctx, &pb.ReportScaleRequest{Target: target, RecommendationId: resp.RecommendationId, Error: "conflict"}); err != nil {
		t.Fatal(err)
	}
	got, err := h.client.GetTarget(ctx, &pb.GetTargetRequest{Target: target})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.History.ScaleUpEvents) != 0 {
		t.Errorf("events %v, want none after a failed write", got.History.ScaleUpEvents)
	}
	c := condition(got.Conditions, "AbleToScale")
	if c.GetStatus() != "False" || c.GetReason() != "FailedUpdateScale" || !strings.Contains(c.GetMessage(), "conflict") {
		t.Errorf("AbleToScale %v, want False FailedUpdateScale naming the error", c)
	}
}

func TestUnreportedDecisionIsInferredFromCurrentReplicas(t *testing.T) {
	ctx := t.Context()
	clk := &clock{t: t0}
	h := startServer(t, filepath.Join(t.TempDir(), "db"), clk)
	if _, err := h.client.Recommend(ctx, externalRequest(t, 2, "80")); err != nil {
		t.Fatal(err)
	}
	// No ReportScale; the next call shows the target at 4, so the write happened.
	clk.Set(t0.Add(15 * time.Second))
	if _, err := h.client.Recommend(ctx, externalRequest(t, 4, "80")); err != nil {
		t.Fatal(err)
	}
	got, err := h.client.GetTarget(ctx, &pb.GetTargetRequest{Target: externalRequest(t, 0, "0").Target})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.History.ScaleUpEvents) != 1 || !got.History.ScaleUpEvents[0].Time.AsTime().Equal(t0) {
		t.Errorf("scaleUpEvents %v, want one event at the decision time", got.History.ScaleUpEvents)
	}
	if len(got.PendingDecisions) != 0 {
		t.Errorf("pending %v, want none", got.PendingDecisions)
	}
}

// TestRetriedRecommendCountsOneScale: a Recommend whose answer was lost, retried, and the
// retry reported, is one scale write: the lost twin left pending must not be taken as applied
// when the next call shows the new count (it once stored the event twice).
func TestRetriedRecommendCountsOneScale(t *testing.T) {
	ctx := t.Context()
	clk := &clock{t: t0}
	h := startServer(t, filepath.Join(t.TempDir(), "db"), clk)
	if _, err := h.client.Recommend(ctx, externalRequest(t, 2, "80")); err != nil { // answer "lost"
		t.Fatal(err)
	}
	clk.Set(t0.Add(time.Second))
	retry, err := h.client.Recommend(ctx, externalRequest(t, 2, "80"))
	if err != nil {
		t.Fatal(err)
	}
	target := externalRequest(t, 0, "0").Target
	if _, err := h.client.ReportScale(ctx, &pb.ReportScaleRequest{Target: target, RecommendationId: retry.RecommendationId, Succeeded: true}); err != nil {
		t.Fatal(err)
	}
	clk.Set(t0.Add(20 * time.Second))
	if _, err := h.client.Recommend(ctx, externalRequest(t, retry.DesiredReplicas, "80")); err != nil {
		t.Fatal(err)
	}
	got, err := h.client.GetTarget(ctx, &pb.GetTargetRequest{Target: target})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(got.History.ScaleUpEvents); n != 1 {
		t.Errorf("scaleUpEvents %v: %d events for one scale write, want 1", got.History.ScaleUpEvents, n)
	}
}

func TestDryRunWritesNothing(t *testing.T) {
	ctx := t.Context()
	h := startServer(t, filepath.Join(t.TempDir(), "db"), &clock{t: t0})
	req := externalRequest(t, 2, "80")
	req.DryRun = true
	resp, err := h.client.Recommend(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.DesiredReplicas != 4 || resp.RecommendationId != "" {
		t.Errorf("dry run: desired %d id %q, want 4 and no id", resp.DesiredReplicas, resp.RecommendationId)
	}
	if _, err := h.client.GetTarget(ctx, &pb.GetTargetRequest{Target: req.Target}); status.Code(err) != codes.NotFound {
		t.Errorf("after a dry run on a new target: %v, want NotFound", err)
	}

	req.DryRun = false
	if _, err := h.client.Recommend(ctx, req); err != nil {
		t.Fatal(err)
	}
	before, err := h.client.GetTarget(ctx, &pb.GetTargetRequest{Target: req.Target})
	if err != nil {
		t.Fatal(err)
	}
	h.clock.Set(t0.Add(time.Minute))
	req.DryRun = true
	if _, err := h.client.Recommend(ctx, req); err != nil {
		t.Fatal(err)
	}
	after, err := h.client.GetTarget(ctx, &pb.GetTargetRequest{Target: req.Target})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, after, protocmp.Transform()); diff != "" {
		t.Errorf("dry run changed the stored target (-before +after):\n%s", diff)
	}
}

func TestInvalidRequestsNameEveryFieldAndKeepData(t *testing.T) {
	ctx := t.Context()
	h := startServer(t, filepath.Join(t.TempDir(), "db"), &clock{t: t0})
	good := externalRequest(t, 2, "80")
	if _, err := h.client.Recommend(ctx, good); err != nil {
		t.Fatal(err)
	}
	before, err := h.client.GetTarget(ctx, &pb.GetTargetRequest{Target: good.Target})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		mutate func(*pb.RecommendRequest)
		fields []string
	}{
		{"bad quantity", func(r *pb.RecommendRequest) { r.Metrics[0].Values = []string{"ten"} }, []string{"metrics[0].values[0]"}},
		{"max below min and negative current", func(r *pb.RecommendRequest) {
			r.Spec.MaxReplicas = 0
			r.CurrentReplicas = -1
		}, []string{"spec.maxReplicas", "currentReplicas"}},
		{"missing target name", func(r *pb.RecommendRequest) { r.Target.Name = "" }, []string{"target.name"}},
		{"observation count", func(r *pb.RecommendRequest) { r.Metrics = nil }, []string{"metrics"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := proto.Clone(good).(*pb.RecommendRequest)
			tc.mutate(req)
			_, err := h.client.Recommend(ctx, req)
			st := status.Convert(err)
			if st.Code() != codes.InvalidArgument {
				t.Fatalf("got %v, want InvalidArgument", err)
			}
			var fields []string
			for _, d := range st.Details() {
				if br, ok := d.(*errdetails.BadRequest); ok {
					for _, v := range br.FieldViolations {
						fields = append(fields, v.Field)
					}
				}
			}
			for _, f := range tc.fields {
				found := false
				for _, g := range fields {
					found = found || strings.HasPrefix(g, f)
				}
				if !found {
					t.Errorf("violations %v do not name %s", fields, f)
				}
			}
		})
	}
	after, err := h.client.GetTarget(ctx, &pb.GetTargetRequest{Target: good.Target})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, after, protocmp.Transform()); diff != "" {
		t.Errorf("invalid requests changed stored data (-before +after):\n%s", diff)
	}
}

func TestOversizedRequestIsRefused(t *testing.T) {
	h := startServer(t, filepath.Join(t.TempDir(), "db"), &clock{t: t0}, func(c *server.Config) { c.MaxRequestBytes = 1024 })
	req := externalRequest(t, 2, "80")
	req.Metrics[0].Values = make([]string, 500)
	for i := range req.Metrics[0].Values {
		req.Metrics[0].Values[i] = "1"
	}
	_, err := h.client.Recommend(t.Context(), req)
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "larger than max") {
		t.Errorf("got %v, want ResourceExhausted naming the size limit", err)
	}
}

func TestHealthServesOnceStoreAnswers(t *testing.T) {
	h := startServer(t, filepath.Join(t.TempDir(), "db"), &clock{t: t0})
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := h.health.Check(t.Context(), &healthpb.HealthCheckRequest{Service: "recommender.v1.RecommenderService"})
		if err == nil && resp.Status == healthpb.HealthCheckResponse_SERVING {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("health never SERVING: %v %v", resp, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	h.stop()
}

// TestRestartKeepsDecisions runs one timeline straight through and the same timeline with the
// server stopped and reopened on its bbolt file halfway: every decision must be identical.
func TestRestartKeepsDecisions(t *testing.T) {
	values := []string{"80", "80", "120", "200", "200", "30", "30", "30", "10", "10", "10", "10"}
	run := func(t *testing.T, restartAt int) []*pb.RecommendResponse {
		path := filepath.Join(t.TempDir(), "db")
		clk := &clock{t: t0}
		h := startServer(t, path, clk)
		var out []*pb.RecommendResponse
		current := int32(2)
		for i, v := range values {
			if i == restartAt {
				h.stop()
				h = startServer(t, path, clk)
			}
			clk.Set(t0.Add(time.Duration(i) * 20 * time.Second))
			resp, err := h.client.Recommend(t.Context(), externalRequest(t, current, v))
			if err != nil {
				t.Fatal(err)
			}
			if resp.Scale {
				if _, err := h.client.ReportScale(t.Context(), &pb.ReportScaleRequest{Target: externalRequest(t, 0, "0").Target, RecommendationId: resp.RecommendationId, Succeeded: true}); err != nil {
					t.Fatal(err)
				}
				current = resp.DesiredReplicas
			}
			resp.RecommendationId = ""
			out = append(out, resp)
		}
		return out
	}
	straight := run(t, -1)
	restarted := run(t, len(values)/2)
	if diff := cmp.Diff(straight, restarted, protocmp.Transform()); diff != "" {
		t.Errorf("decisions differ after a restart (-straight +restarted):\n%s", diff)
	}
	var moves []int32
	for _, r := range straight {
		moves = append(moves, r.DesiredReplicas)
	}
	// The timeline must exercise both directions, or the comparison proves little.
	up, down := false, false
	for i := 1; i < len(moves); i++ {
		up = up || moves[i] > moves[i-1]
		down = down || moves[i] < moves[i-1]
	}
	if !up || !down {
		t.Errorf("timeline %v does not scale both ways", moves)
	}
}

func TestSimulateMatchesRecommendTimeline(t *testing.T) {
	ctx := t.Context()
	clk := &clock{t: t0}
	h := startServer(t, filepath.Join(t.TempDir(), "db"), clk)
	values := []string{"80", "120", "200", "30", "30", "10", "10", "10"}
	sim := &pb.SimulateRequest{Spec: externalRequest(t, 0, "0").Spec, InitialReplicas: 2}
	var got []int32
	current := int32(2)
	for i, v := range values {
		now := t0.Add(time.Duration(i) * 25 * time.Second)
		clk.Set(now)
		resp, err := h.client.Recommend(ctx, externalRequest(t, current, v))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Scale {
			if _, err := h.client.ReportScale(ctx, &pb.ReportScaleRequest{Target: externalRequest(t, 0, "0").Target, RecommendationId: resp.RecommendationId, Succeeded: true}); err != nil {
				t.Fatal(err)
			}
			current = resp.DesiredReplicas
		}
		got = append(got, resp.DesiredReplicas)
		sim.Steps = append(sim.Steps, &pb.SimulateStep{Time: resp.DecisionTime, Metrics: externalRequest(t, 0, v).Metrics})
	}
	simResp, err := h.client.Simulate(ctx, sim)
	if err != nil {
		t.Fatal(err)
	}
	var want []int32
	for _, s := range simResp.Steps {
		want = append(want, s.DesiredReplicas)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Recommend timeline differs from Simulate (-simulate +recommend):\n%s", diff)
	}
}

func TestSimulateRejectsBadTimeline(t *testing.T) {
	h := startServer(t, filepath.Join(t.TempDir(), "db"), &clock{t: t0})
	req := mustJSON(t, &pb.SimulateRequest{}, `{"spec": {"maxReplicas": 3}, "steps": [
	  {"time": "2026-06-01T00:01:00Z", "metrics": [{}]}, {"time": "2026-06-01T00:00:00Z", "metrics": [{}, {}]}]}`)
	_, err := h.client.Simulate(t.Context(), req)
	st := status.Convert(err)
	if st.Code() != codes.InvalidArgument {
		t.Fatalf("got %v, want InvalidArgument", err)
	}
	var fields []string
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.FieldViolations {
				fields = append(fields, v.Field)
			}
		}
	}
	for _, want := range []string{"steps[1].time", "steps[1].metrics"} {
		if !contains(fields, want) {
			t.Errorf("violations %v lack %s", fields, want)
		}
	}
}

func contains(xs []string, x string) bool {
	for _, s := range xs {
		if s == x {
			return true
		}
	}
	return false
}

// TestUnseenTargetsForgotten: with --target-ttl 1s (a pass every 100 ms), a target unseen for
// longer than the TTL on the decision clock is forgotten, and one seen since stays.
func TestUnseenTargetsForgotten(t *testing.T) {
	clk := &clock{t: t0}
	h := startServer(t, filepath.Join(t.TempDir(), "db"), clk, func(c *server.Config) { c.TargetTTL = time.Second })
	old := externalRequest(t, 1, "10")
	fresh := externalRequest(t, 1, "10")
	fresh.Target.Name = "fresh"
	if _, err := h.client.Recommend(t.Context(), old); err != nil {
		t.Fatal(err)
	}
	clk.Set(t0.Add(1500 * time.Millisecond))
	if _, err := h.client.Recommend(t.Context(), fresh); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		_, err := h.client.GetTarget(t.Context(), &pb.GetTargetRequest{Target: old.Target})
		if status.Code(err) == codes.NotFound {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a target unseen for 1.5 s with a TTL of 1 s still there after 10 s: %v", err)
		}
	}
	if _, err := h.client.GetTarget(t.Context(), &pb.GetTargetRequest{Target: fresh.Target}); err != nil {
		t.Errorf("the target seen within the TTL: %v", err)
	}
}

// TestNotFoundNamesTheTarget: every method's NotFound names the whole target
// (cluster/namespace/name), the default cluster filled in when the request leaves it empty.
func TestNotFoundNamesTheTarget(t *testing.T) {
	ctx := t.Context()
	h := startServer(t, filepath.Join(t.TempDir(), "db"), &clock{t: t0})
	if _, err := h.client.Recommend(ctx, externalRequest(t, 2, "80")); err != nil {
		t.Fatal(err)
	}
	unknown := &pb.TargetRef{Namespace: "shop", Name: "nope"}
	known := externalRequest(t, 0, "0").Target
	tests := []struct {
		name string
		call func() error
		want string
	}{
		{"GetTarget", func() error {
			_, err := h.client.GetTarget(ctx, &pb.GetTargetRequest{Target: unknown})
			return err
		}, "target default/shop/nope not found"},
		{"DeleteTarget", func() error {
			_, err := h.client.DeleteTarget(ctx, &pb.DeleteTargetRequest{Target: &pb.TargetRef{Cluster: "c9", Namespace: "shop", Name: "nope"}})
			return err
		}, "target c9/shop/nope not found"},
		{"ReportScale unknown target", func() error {
			_, err := h.client.ReportScale(ctx, &pb.ReportScaleRequest{Target: unknown, RecommendationId: "x", Succeeded: true})
			return err
		}, "target default/shop/nope not found"},
		{"ReportScale unknown recommendation", func() error {
			_, err := h.client.ReportScale(ctx, &pb.ReportScaleRequest{Target: known, RecommendationId: "x", Succeeded: true})
			return err
		}, `recommendation "x" of target c1/shop/web not found`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			if st := status.Convert(err); st.Code() != codes.NotFound || !strings.Contains(st.Message(), tt.want) {
				t.Errorf("got %v, want NotFound with %q", err, tt.want)
			}
		})
	}
}

// TestListNamespaceUsesDefaultCluster: on an open server a namespace filter without a cluster
// lists the default cluster's namespace, as an empty target.cluster means in every method.
func TestListNamespaceUsesDefaultCluster(t *testing.T) {
	ctx := t.Context()
	h := startServer(t, filepath.Join(t.TempDir(), "db"), &clock{t: t0})
	for _, cluster := range []string{"", "c1"} {
		req := externalRequest(t, 2, "80")
		req.Target.Cluster = cluster
		if _, err := h.client.Recommend(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	list, err := h.client.ListTargets(ctx, &pb.ListTargetsRequest{Namespace: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range list.GetTargets() {
		got = append(got, s.GetTarget().GetCluster()+"/"+s.GetTarget().GetNamespace()+"/"+s.GetTarget().GetName())
	}
	if diff := cmp.Diff(got, []string{"default/shop/web"}); diff != "" {
		t.Errorf("targets (-got +want):\n%s", diff)
	}
}

// TestFirstSeenIsTheAge: the first Recommend that stores a target sets its firstSeen, which
// later Recommends, a ReportScale and a restart keep; GetTarget and ListTargets show it, and
// lastSeen moves on.
func TestFirstSeenIsTheAge(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	clk := &clock{t: t0}
	h := startServer(t, path, clk)
	req := externalRequest(t, 2, "80")
	first, err := h.client.Recommend(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	clk.Set(t0.Add(time.Minute))
	if first.Scale {
		if _, err := h.client.ReportScale(t.Context(), &pb.ReportScaleRequest{Target: req.Target, RecommendationId: first.RecommendationId, Succeeded: true}); err != nil {
			t.Fatal(err)
		}
	}
	h.stop()
	h = startServer(t, path, clk)
	clk.Set(t0.Add(2 * time.Minute))
	if _, err := h.client.Recommend(t.Context(), externalRequest(t, first.DesiredReplicas, "80")); err != nil {
		t.Fatal(err)
	}
	got, err := h.client.GetTarget(t.Context(), &pb.GetTargetRequest{Target: req.Target})
	if err != nil {
		t.Fatal(err)
	}
	if !got.GetFirstSeen().AsTime().Equal(t0) || !got.GetLastSeen().AsTime().Equal(t0.Add(2*time.Minute)) {
		t.Errorf("GetTarget firstSeen %v lastSeen %v, want %v and %v", got.GetFirstSeen(), got.GetLastSeen(), t0, t0.Add(2*time.Minute))
	}
	list, err := h.client.ListTargets(t.Context(), &pb.ListTargetsRequest{Cluster: req.Target.Cluster})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Targets) != 1 || !list.Targets[0].GetFirstSeen().AsTime().Equal(t0) {
		t.Errorf("ListTargets %v, want one target first seen at %v", list.Targets, t0)
	}
}
