package server_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
	"github.com/hpa-recommender/hpa-recommender/server"
)

// listDecisions reads a target's whole log, page by page.
func listDecisions(t *testing.T, h *harness, req *pb.ListDecisionsRequest) []*pb.DecisionLogEntry {
	t.Helper()
	var out []*pb.DecisionLogEntry
	for range 100 {
		resp, err := h.client.ListDecisions(t.Context(), req)
		if err != nil {
			t.Fatalf("ListDecisions(%v): %v", req, err)
		}
		out = append(out, resp.Decisions...)
		if resp.NextPageToken == "" {
			return out
		}
		req.PageToken = resp.NextPageToken
	}
	t.Fatal("ListDecisions: no last page")
	return nil
}

// TestDecisionLog: every decision is logged with its stages, metrics, conditions and sentence;
// ReportScale's outcome lands on its entry; identical decisions that change nothing are one
// entry; dry runs are not logged; the log survives a restart.
func TestDecisionLog(t *testing.T) {
	ctx := t.Context()
	clk := &clock{t: t0}
	path := filepath.Join(t.TempDir(), "db")
	h := startServer(t, path, clk)
	target := externalRequest(t, 0, "0").Target

	// 2 -> 4 (policy +2/60s), reported done.
	up, err := h.client.Recommend(ctx, externalRequest(t, 2, "80"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.client.ReportScale(ctx, &pb.ReportScaleRequest{Target: target, RecommendationId: up.RecommendationId, Succeeded: true}); err != nil {
		t.Fatal(err)
	}
	// Held at 4 by the policy, three times: one entry.
	for _, at := range []time.Duration{20, 30, 40} {
		clk.Set(t0.Add(at * time.Second))
		if _, err := h.client.Recommend(ctx, externalRequest(t, 4, "80")); err != nil {
			t.Fatal(err)
		}
	}
	// A dry run is not logged.
	dry := externalRequest(t, 4, "200")
	dry.DryRun = true
	if _, err := h.client.Recommend(ctx, dry); err != nil {
		t.Fatal(err)
	}
	// 4 -> 6 a period later; its write fails.
	clk.Set(t0.Add(61 * time.Second))
	up2, err := h.client.Recommend(ctx, externalRequest(t, 4, "80"))
	if err != nil || up2.DesiredReplicas != 6 {
		t.Fatalf("second scale-up: %v, desired %d; want 6", err, up2.GetDesiredReplicas())
	}
	if _, err := h.client.ReportScale(ctx, &pb.ReportScaleRequest{Target: target, RecommendationId: up2.RecommendationId, Error: "conflict"}); err != nil {
		t.Fatal(err)
	}

	check := func(h *harness) {
		t.Helper()
		got := listDecisions(t, h, &pb.ListDecisionsRequest{Target: target, PageSize: 1})
		if len(got) != 3 {
			t.Fatalf("%d entries; want 3 (scale-up, a run of 3 held, failed scale-up): %v", len(got), got)
		}
		failed, held, first := got[0], got[1], got[2]
		if first.DesiredReplicas != 4 || first.CurrentReplicas != 2 || first.Outcome != "succeeded" || first.RecommendationId != up.RecommendationId ||
			first.Count != 1 || !first.Time.AsTime().Equal(t0) || !first.Until.AsTime().Equal(t0) {
			t.Errorf("first entry %v; want 2 -> 4 succeeded at t0, count 1", first)
		}
		if first.Message != up.Explanation.Message || first.Proposal != up.Explanation.Proposal || first.Limited != 4 || first.Final != 4 {
			t.Errorf("first entry's stages and sentence %v; want the response's explanation %v", first, up.Explanation)
		}
		if len(first.Metrics) != 1 || first.Metrics[0].Name != "external metric queue" || first.Metrics[0].Value != "40" || first.Metrics[0].Proposal != 8 {
			t.Errorf("first entry's metrics %v; want queue at 40 per pod proposing 8", first.Metrics)
		}
		if !hasCondition(first.Conditions, "ScalingLimited", "True", "ScaleUpLimit") {
			t.Errorf("first entry's conditions %v; want ScalingLimited True ScaleUpLimit", first.Conditions)
		}
		if held.Count != 3 || held.DesiredReplicas != 4 || held.CurrentReplicas != 4 || held.RecommendationId != "" || held.Outcome != "unreported" ||
			!held.Time.AsTime().Equal(t0.Add(20*time.Second)) || !held.Until.AsTime().Equal(t0.Add(40*time.Second)) {
			t.Errorf("held entry %v; want a run of 3 at 4 from t0+20s until t0+40s, unreported", held)
		}
		if failed.Outcome != "failed" || failed.Error != "conflict" || failed.DesiredReplicas != 6 {
			t.Errorf("last entry %v; want 4 -> 6 failed with conflict", failed)
		}
		// Time range: since keeps entries whose run ends at or after it.
		since := listDecisions(t, h, &pb.ListDecisionsRequest{Target: target, Since: timestamppb.New(t0.Add(35 * time.Second))})
		if len(since) != 2 || since[1].Count != 3 {
			t.Errorf("since t0+35s: %v; want the failed scale-up and the run", since)
		}
		until := listDecisions(t, h, &pb.ListDecisionsRequest{Target: target, Until: timestamppb.New(t0.Add(10 * time.Second))})
		if len(until) != 1 || until[0].RecommendationId != up.RecommendationId {
			t.Errorf("until t0+10s: %v; want the first scale-up", until)
		}
	}
	check(h)
	h.stop()
	check(startServer(t, path, clk)) // the log is in the file
}

func hasCondition(cs []*pb.DecisionLogCondition, typ, st, reason string) bool {
	for _, c := range cs {
		if c.Type == typ && c.Status == st && c.Reason == reason {
			return true
		}
	}
	return false
}

func TestListDecisionsErrors(t *testing.T) {
	ctx := t.Context()
	h := startServer(t, filepath.Join(t.TempDir(), "db"), &clock{t: t0})
	target := externalRequest(t, 0, "0").Target
	if _, err := h.client.ListDecisions(ctx, &pb.ListDecisionsRequest{Target: target}); status.Code(err) != codes.NotFound ||
		!strings.Contains(err.Error(), "c1/shop/web") {
		t.Errorf("unknown target: %v; want NotFound naming it", err)
	}
	if _, err := h.client.Recommend(ctx, externalRequest(t, 2, "20")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		req   *pb.ListDecisionsRequest
		field string
	}{
		{&pb.ListDecisionsRequest{Target: target, PageToken: "garbage"}, "pageToken"},
		{&pb.ListDecisionsRequest{Target: target, PageSize: -1}, "pageSize"},
		{&pb.ListDecisionsRequest{Target: target, Since: timestamppb.New(t0), Until: timestamppb.New(t0.Add(-time.Second))}, "until"},
		{&pb.ListDecisionsRequest{Target: target, Since: &timestamppb.Timestamp{Nanos: -1}}, "since"},
		{&pb.ListDecisionsRequest{Target: &pb.TargetRef{Cluster: "c1", Name: "web"}}, "target.namespace"},
	} {
		_, err := h.client.ListDecisions(ctx, tc.req)
		if status.Code(err) != codes.InvalidArgument || !violates(err, tc.field) {
			t.Errorf("ListDecisions(%v): %v; want InvalidArgument naming %s", tc.req, err, tc.field)
		}
	}
}

// violates reports whether err's BadRequest names field.
func violates(err error, field string) bool {
	for _, d := range status.Convert(err).Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.FieldViolations {
				if v.Field == field {
					return true
				}
			}
		}
	}
	return false
}

// TestDecisionLogBounds: the log keeps within --decision-log-bytes, newest entries first, and
// --decision-log-bytes 0 keeps none.
func TestDecisionLogBounds(t *testing.T) {
	ctx := t.Context()
	for _, tc := range []struct {
		bytes    int64
		min, max int
	}{{bytes: 2048, min: 3, max: 20}, {bytes: 0, min: 0, max: 0}} {
		clk := &clock{t: t0}
		h := startServer(t, filepath.Join(t.TempDir(), "db"), clk, func(c *server.Config) { c.DecisionLogBytes = tc.bytes })
		target := externalRequest(t, 0, "0").Target
		for i := range 60 {
			clk.Set(t0.Add(time.Duration(i) * time.Minute))
			// Values that alternate, so that no two decisions say the same.
			if _, err := h.client.Recommend(ctx, externalRequest(t, 3, []string{"25", "26"}[i%2])); err != nil {
				t.Fatal(err)
			}
		}
		got := listDecisions(t, h, &pb.ListDecisionsRequest{Target: target})
		if len(got) < tc.min || len(got) > tc.max {
			t.Errorf("--decision-log-bytes %d: %d entries of 60; want %d to %d", tc.bytes, len(got), tc.min, tc.max)
		}
		if len(got) > 0 && !got[0].Time.AsTime().Equal(t0.Add(59*time.Minute)) {
			t.Errorf("--decision-log-bytes %d: newest entry at %v; want the last decision's", tc.bytes, got[0].Time.AsTime())
		}
	}
}
