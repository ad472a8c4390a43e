package local

import (
	"context"
	"time"

	"github.com/hpa-recommender/hpa-recommender/internal/apiconv"
	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
	"github.com/hpa-recommender/hpa-recommender/recommender"
)

// Engine decides in process. The zero value is not ready: use New.
type Engine struct {
	// Options are the controller settings a request leaves unset (default
	// recommender.DefaultOptions(), the server's defaults).
	Options recommender.Options
	// MaxPods and MaxSteps bound a request as the server's --max-pods (20000) and max steps
	// (10000) do.
	MaxPods  int
	MaxSteps int
	// Now is the decision clock of Recommend (default time.Now).
	Now func() time.Time
}

// New returns an Engine with the server's defaults.
func New() *Engine {
	return &Engine{Options: recommender.DefaultOptions(), MaxPods: 20000, MaxSteps: 10000, Now: time.Now}
}

func (e *Engine) limits() apiconv.Limits {
	return apiconv.Limits{MaxPods: e.MaxPods, MaxSteps: e.MaxSteps}
}

// Recommend decides at first sight, at e.Now(), and writes nothing.
func (e *Engine) Recommend(_ context.Context, req *pb.RecommendRequest) (*pb.RecommendResponse, error) {
	bad := apiconv.TargetRefViolations(req.GetTarget(), "target")
	in, opts, v := apiconv.DecisionInput(req, e.Options, e.limits())
	if bad = append(bad, v...); len(bad) > 0 {
		return nil, apiconv.InvalidArgument(bad).Err()
	}
	d, _ := recommender.Decide(e.Now(), opts, in, recommender.State{})
	return apiconv.DecisionToProto(&d), nil
}

// Simulate replays req as the server's Simulate does.
func (e *Engine) Simulate(_ context.Context, req *pb.SimulateRequest) (*pb.SimulateResponse, error) {
	sim, bad := apiconv.SimulationInput(req, e.Options, e.limits())
	if len(bad) > 0 {
		return nil, apiconv.InvalidArgument(bad).Err()
	}
	return apiconv.RunSimulation(sim), nil
}
