package server

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
	"github.com/hpa-recommender/hpa-recommender/recommender"
)

// FuzzDecisionInputMatchesUncached: the spec cache changes nothing. For any request,
// decisionInput (spec converted and validated once, then cached) returns the same input,
// options and violations, in the same order, as RecommendFromProto followed by ValidateInput;
// asking twice (a cache hit) gives the same again. Seeded from the upstream scenarios' specs
// and first steps.
func FuzzDecisionInputMatchesUncached(f *testing.F) {
	n := 0
	for _, raw := range scenarioRequests(f) {
		if n++; n > 30 {
			break
		}
		var sim pb.SimulateRequest
		if err := protojson.Unmarshal(raw, &sim); err != nil {
			f.Fatal(err)
		}
		req := &pb.RecommendRequest{Target: &pb.TargetRef{Namespace: "ns", Name: "web"}, Spec: sim.GetSpec(), Options: sim.GetOptions()}
		if steps := sim.GetSteps(); len(steps) > 0 {
			req.CurrentReplicas = steps[0].GetCurrentReplicas()
			req.StatusReplicas = steps[0].StatusReplicas
			req.Pods, req.Metrics = steps[0].GetPods(), steps[0].GetMetrics()
		}
		b, err := proto.Marshal(req)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	cfg := DefaultConfig()
	cfg.MaxPods = 50
	s := &Server{cfg: cfg}
	f.Fuzz(func(t *testing.T, b []byte) {
		var req pb.RecommendRequest
		if proto.Unmarshal(b, &req) != nil {
			return
		}
		wantIn, wantOpts, want := RecommendFromProto(&req, cfg.Defaults)
		if len(want) == 0 {
			want = fieldErrors(recommender.ValidateInput(&wantIn, "", recommender.Limits{MaxPods: cfg.MaxPods}))
		}
		for range 2 {
			in, opts, got := s.decisionInput(&req)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("violations differ (-uncached +decisionInput):\n%s", diff)
			}
			if diff := cmp.Diff(wantIn, in, domainCmp); diff != "" {
				t.Fatalf("input differs (-uncached +decisionInput):\n%s", diff)
			}
			if diff := cmp.Diff(wantOpts, opts); diff != "" {
				t.Fatalf("options differ (-uncached +decisionInput):\n%s", diff)
			}
		}
	})
}
