package apiconv

import (
	"fmt"
	"strconv"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
	"github.com/hpa-recommender/hpa-recommender/recommender"
)

// Limits bounds one request, as the server's --max-pods and --max-steps do.
type Limits struct {
	// MaxPods bounds the pods of a request or step and the samples of an observation.
	MaxPods int
	// MaxSteps bounds the steps of a SimulateRequest.
	MaxSteps int
}

// FieldErrors turns validation errors into violations.
func FieldErrors(errs []recommender.FieldError) []FieldViolation {
	if len(errs) == 0 {
		return nil
	}
	out := make([]FieldViolation, len(errs))
	for i, e := range errs {
		out[i] = FieldViolation{Field: e.Field, Description: e.Description}
	}
	return out
}

// TargetRefViolations reports a missing target, namespace or name below field ("target").
// The cluster may be empty: who fills it is the server's business (the caller's identity).
func TargetRefViolations(ref *pb.TargetRef, field string) []FieldViolation {
	if ref == nil {
		return []FieldViolation{{Field: field, Description: "Required value: the target (namespace and name of the autoscaler)"}}
	}
	var v []FieldViolation
	if ref.GetNamespace() == "" {
		v = append(v, FieldViolation{Field: field + ".namespace", Description: "Required value"})
	}
	if ref.GetName() == "" {
		v = append(v, FieldViolation{Field: field + ".name", Description: "Required value: the autoscaler's name"})
	}
	return v
}

// DecisionInput converts a RecommendRequest's decision inputs and, when they convert, validates
// them (recommender.ValidateInput). Violations name protojson paths ("spec.maxReplicas",
// "pods[2].name", "metrics[0].values[1]"); the target is not checked here.
func DecisionInput(req *pb.RecommendRequest, defaults recommender.Options, limits Limits) (recommender.Input, recommender.Options, []FieldViolation) {
	in, opts, v := RecommendFromProto(req, defaults)
	if len(v) == 0 {
		v = FieldErrors(recommender.ValidateInput(&in, "", recommender.Limits{MaxPods: limits.MaxPods}))
	}
	return in, opts, v
}

// SimulationInput converts a SimulateRequest and, when it converts, validates it: the spec,
// the initial count, one to limits.MaxSteps steps in time order, and each step's observations.
func SimulationInput(req *pb.SimulateRequest, defaults recommender.Options, limits Limits) (*Simulation, []FieldViolation) {
	sim, v := SimulationFromProto(req, defaults)
	if len(v) > 0 {
		return sim, v
	}
	v = FieldErrors(recommender.ValidateSpec(sim.Spec, "spec"))
	if sim.InitialReplicas < 0 {
		v = append(v, FieldViolation{Field: "initialReplicas", Description: "Invalid value: must be greater than or equal to 0"})
	}
	switch n := len(sim.Steps); {
	case n == 0:
		v = append(v, FieldViolation{Field: "steps", Description: "Required value: at least one step"})
	case limits.MaxSteps > 0 && n > limits.MaxSteps:
		v = append(v, FieldViolation{Field: "steps", Description: fmt.Sprintf("Too many: %d: must have at most %d items", n, limits.MaxSteps)})
	}
	if sim.Spec == nil {
		return sim, v
	}
	vl := recommender.Limits{MaxPods: limits.MaxPods}
	for i := range sim.Steps {
		st := &sim.Steps[i]
		path := "steps[" + strconv.Itoa(i) + "]"
		if st.Time.IsZero() {
			v = append(v, FieldViolation{Field: path + ".time", Description: "Required value"})
		} else if i > 0 && st.Time.Before(sim.Steps[i-1].Time) {
			v = append(v, FieldViolation{Field: path + ".time", Description: "Invalid value: steps must be in time order"})
		}
		in := recommender.Input{Spec: sim.Spec, Pods: st.Pods, Metrics: st.Metrics}
		if st.CurrentReplicas != nil {
			in.CurrentReplicas = *st.CurrentReplicas
		}
		if st.StatusReplicas != nil {
			in.StatusReplicas = *st.StatusReplicas
		}
		v = append(v, FieldErrors(recommender.ValidateObservations(&in, path, vl))...)
	}
	return sim, v
}

// RunSimulation replays a valid simulation (SimulationInput) and writes the response.
func RunSimulation(sim *Simulation) *pb.SimulateResponse {
	decisions, final := recommender.Simulate(sim.Options, sim.Spec, sim.InitialReplicas, sim.State, sim.Steps)
	return SimulateResponseToProto(decisions, &final)
}

// InvalidArgument is the status of a refused request: InvalidArgument, a message naming the
// first violation, and a google.rpc.BadRequest listing them all.
func InvalidArgument(v []FieldViolation) *status.Status {
	msg := "invalid request"
	if len(v) > 0 {
		msg += ": " + v[0].Field + ": " + v[0].Description
		if n := len(v) - 1; n > 0 {
			msg += " (and " + strconv.Itoa(n) + " more)"
		}
	}
	st := status.New(codes.InvalidArgument, msg)
	br := &errdetails.BadRequest{FieldViolations: make([]*errdetails.BadRequest_FieldViolation, len(v))}
	for i, x := range v {
		br.FieldViolations[i] = &errdetails.BadRequest_FieldViolation{Field: x.Field, Description: x.Description}
	}
	if d, err := st.WithDetails(br); err == nil {
		st = d
	}
	return st
}
