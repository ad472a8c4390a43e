package apiconv

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
	"github.com/hpa-recommender/hpa-recommender/recommender"
)

// TestUpstreamScenarios replays the 300 upstream scenarios (answers computed by Kubernetes'
// own controller code) through the same path as the Simulate RPC, SimulationInput then
// RunSimulation, and compares every step's desired replicas and condition reasons, as
// shared/conformance/run.py --golden does through grpcurl.
func TestUpstreamScenarios(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "upstream-scenarios.jsonl.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	n := 0
	for ; sc.Scan(); n++ {
		var line struct {
			Request json.RawMessage `json:"request"`
			Expect  []struct {
				DesiredReplicas int32 `json:"desiredReplicas"`
				Conditions      []struct {
					Type, Status, Reason string
				} `json:"conditions"`
			} `json:"expect"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("scenario %d: %v", n, err)
		}
		var req pb.SimulateRequest
		if err := protojson.Unmarshal(line.Request, &req); err != nil {
			t.Fatalf("scenario %d: %v", n, err)
		}
		sim, bad := SimulationInput(&req, recommender.DefaultOptions(), Limits{MaxPods: 20000, MaxSteps: 10000})
		if len(bad) > 0 {
			t.Errorf("scenario %d: refused: %v", n, bad)
			continue
		}
		resp := RunSimulation(sim)
		if len(resp.Steps) != len(line.Expect) {
			t.Errorf("scenario %d: %d steps, want %d", n, len(resp.Steps), len(line.Expect))
			continue
		}
		for k, want := range line.Expect {
			got := resp.Steps[k]
			var gc, wc []string
			for _, c := range got.Conditions {
				gc = append(gc, fmt.Sprintf("%s/%s/%s", c.Type, c.Status, c.Reason))
			}
			for _, c := range want.Conditions {
				wc = append(wc, fmt.Sprintf("%s/%s/%s", c.Type, c.Status, c.Reason))
			}
			slices.Sort(gc)
			slices.Sort(wc)
			if got.DesiredReplicas != want.DesiredReplicas || !slices.Equal(gc, wc) {
				t.Errorf("scenario %d step %d: got %d %v, want %d %v (%s)", n, k, got.DesiredReplicas, gc,
					want.DesiredReplicas, wc, got.GetExplanation().GetMessage())
				break
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if n != 300 {
		t.Fatalf("read %d scenarios, want 300", n)
	}
}
