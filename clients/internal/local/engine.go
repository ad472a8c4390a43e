package local

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

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

func invalid(bad []violation) error {
	v := bad[0]
	msg := "invalid request: " + v.field + ": " + v.description
	if n := len(bad) - 1; n > 0 {
		msg += fmt.Sprintf(" (and %d more)", n)
	}
	st := status.New(codes.InvalidArgument, msg)
	br := &errdetails.BadRequest{}
	for _, v := range bad {
		br.FieldViolations = append(br.FieldViolations, &errdetails.BadRequest_FieldViolation{Field: v.field, Description: v.description})
	}
	if d, err := st.WithDetails(br); err == nil {
		st = d
	}
	return st.Err()
}

func fromFieldErrors(errs []recommender.FieldError) []violation {
	out := make([]violation, len(errs))
	for i, e := range errs {
		out[i] = violation{e.Field, e.Description}
	}
	return out
}

// Recommend decides at first sight, at e.Now(), and writes nothing.
func (e *Engine) Recommend(_ context.Context, req *pb.RecommendRequest) (*pb.RecommendResponse, error) {
	r := &reader{}
	if t := req.GetTarget(); t == nil {
		r.fail("target", "Required value: the target (namespace and name of the autoscaler)")
	} else {
		if t.GetNamespace() == "" {
			r.fail("target.namespace", "Required value")
		}
		if t.GetName() == "" {
			r.fail("target.name", "Required value: the autoscaler's name")
		}
	}
	targetBad := len(r.bad)
	in := recommender.Input{
		Spec:            r.spec("spec", req.GetSpec()),
		CurrentReplicas: req.GetCurrentReplicas(),
		StatusReplicas:  req.GetCurrentReplicas(),
		Pods:            r.pods("pods", req.GetPods()),
		Metrics:         r.observations("metrics", req.GetMetrics()),
	}
	if req.StatusReplicas != nil {
		in.StatusReplicas = *req.StatusReplicas
	}
	opts := r.options(req.GetOptions(), e.Options)
	if len(r.bad) == targetBad {
		r.bad = append(r.bad, fromFieldErrors(recommender.ValidateInput(&in, "", recommender.Limits{MaxPods: e.MaxPods}))...)
	}
	if len(r.bad) > 0 {
		return nil, invalid(r.bad)
	}
	d, _ := recommender.Decide(e.Now(), opts, in, recommender.State{})
	return decisionToProto(&d), nil
}

// Simulate replays req as the server's Simulate does.
func (e *Engine) Simulate(_ context.Context, req *pb.SimulateRequest) (*pb.SimulateResponse, error) {
	r := &reader{}
	spec := r.spec("spec", req.GetSpec())
	opts := r.options(req.GetOptions(), e.Options)
	initial := r.state(req.GetHistory())
	steps := make([]recommender.Step, len(req.GetSteps()))
	for i, s := range req.GetSteps() {
		path := fmt.Sprintf("steps[%d]", i)
		steps[i] = recommender.Step{
			Time:            r.time(path+".time", s.GetTime()),
			CurrentReplicas: ptrCopy(s.CurrentReplicas),
			StatusReplicas:  ptrCopy(s.StatusReplicas),
			Pods:            r.pods(path+".pods", s.GetPods()),
			Metrics:         r.observations(path+".metrics", s.GetMetrics()),
		}
	}
	if len(r.bad) == 0 {
		r.bad = append(r.bad, fromFieldErrors(recommender.ValidateSpec(spec, "spec"))...)
		if req.GetInitialReplicas() < 0 {
			r.fail("initialReplicas", "Invalid value: must be greater than or equal to 0")
		}
		switch n := len(steps); {
		case n == 0:
			r.fail("steps", "Required value: at least one step")
		case n > e.MaxSteps:
			r.fail("steps", fmt.Sprintf("Too many: %d: must have at most %d items", n, e.MaxSteps))
		}
		if spec != nil {
			for i := range steps {
				st := &steps[i]
				path := fmt.Sprintf("steps[%d]", i)
				if st.Time.IsZero() {
					r.fail(path+".time", "Required value")
				} else if i > 0 && st.Time.Before(steps[i-1].Time) {
					r.fail(path+".time", "Invalid value: steps must be in time order")
				}
				in := recommender.Input{Spec: spec, Pods: st.Pods, Metrics: st.Metrics}
				if st.CurrentReplicas != nil {
					in.CurrentReplicas = *st.CurrentReplicas
				}
				if st.StatusReplicas != nil {
					in.StatusReplicas = *st.StatusReplicas
				}
				r.bad = append(r.bad, fromFieldErrors(recommender.ValidateObservations(&in, path, recommender.Limits{MaxPods: e.MaxPods}))...)
			}
		}
	}
	if len(r.bad) > 0 {
		return nil, invalid(r.bad)
	}
	decisions, final := recommender.Simulate(opts, spec, req.GetInitialReplicas(), initial, steps)
	out := &pb.SimulateResponse{History: historyToProto(&final)}
	for i := range decisions {
		out.Steps = append(out.Steps, stepResult(&decisions[i]))
	}
	return out, nil
}
