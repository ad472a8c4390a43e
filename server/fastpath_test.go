package server

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/hpa-recommender/hpa-recommender/internal/apiconv"
	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
	"github.com/hpa-recommender/hpa-recommender/recommender"
)

// FuzzDecisionInputMatchesUncached: the spec cache changes nothing. For any request,
// decisionInput (spec converted and validated once, then cached) returns the same input,
// options and violations, in the same order, as apiconv.RecommendFromProto followed by ValidateInput;
// asking twice (a cache hit) gives the same again. Seeded from the upstream scenarios' specs
// and first steps.
func FuzzDecisionInputMatchesUncached(f *testing.F) {
	for _, raw := range scenarioRequests(f, 30) {
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
		wantIn, wantOpts, want := apiconv.RecommendFromProto(&req, cfg.Defaults)
		if len(want) == 0 {
			want = apiconv.FieldErrors(recommender.ValidateInput(&wantIn, "", recommender.Limits{MaxPods: cfg.MaxPods}))
		}
		for range 2 {
			in, opts, got := s.decisionInput(&req)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("violations differ (-uncached +decisionInput):\n%s", diff)
			}
			if diff := cmp.Diff(wantIn, in, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); diff != "" {
				t.Fatalf("input differs (-uncached +decisionInput):\n%s", diff)
			}
			if diff := cmp.Diff(wantOpts, opts); diff != "" {
				t.Fatalf("options differ (-uncached +decisionInput):\n%s", diff)
			}
		}
	})
}

// scenarioRequests reads the first n SimulateRequests of the upstream scenarios (the test data
// of package apiconv).
func scenarioRequests(t testing.TB, n int) []json.RawMessage {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "internal", "apiconv", "testdata", "upstream-scenarios.jsonl.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 16<<20)
	var out []json.RawMessage
	for len(out) < n && sc.Scan() {
		var line struct {
			Request json.RawMessage `json:"request"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatal(err)
		}
		out = append(out, line.Request)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
