package local

import (
	"time"

	"github.com/hpa-recommender/hpa-recommender/internal/apiconv"
	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
	"github.com/hpa-recommender/hpa-recommender/recommender"
)

// This file is the stateful entry point the in-cluster scaler's local fallback uses
// (clients/scaler): the same reading and validation as Recommend, but deciding from a history
// the caller keeps, as the server does from its store.

// Result is a stateful decision: the domain decision, the state to keep after it, and the
// domain spec it was made with (for RecordRescale).
type Result struct {
	Decision recommender.Decision
	State    recommender.State
	Spec     *recommender.Spec
}

// DecideWithState answers req as the server's Recommend would at now with prev as the stored
// state (the zero State is first sight), and returns the answer and what the server would
// store. An invalid request is reported as Recommend reports it (InvalidArgument with a
// BadRequest). req.DryRun is ignored: the caller decides whether to keep Result.State.
func (e *Engine) DecideWithState(now time.Time, req *pb.RecommendRequest, prev recommender.State) (*pb.RecommendResponse, *Result, error) {
	in, opts, bad := apiconv.DecisionInput(req, e.Options, e.limits())
	if len(bad) > 0 {
		return nil, nil, apiconv.InvalidArgument(bad).Err()
	}
	d, st := recommender.Decide(now, opts, in, prev)
	st.History = recommender.Prune(st.History, now, opts)
	return apiconv.DecisionToProto(&d), &Result{Decision: d, State: st, Spec: in.Spec}, nil
}
