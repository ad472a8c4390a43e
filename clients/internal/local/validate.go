package local

import (
	"github.com/hpa-recommender/hpa-recommender/internal/apiconv"
	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
	"github.com/hpa-recommender/hpa-recommender/recommender"
)

// SpecViolation is one field an autoscaler spec is refused for, as the server's
// InvalidArgument lists it.
type SpecViolation struct {
	Field, Description string
}

// ValidateSpec lists every violation of spec, its fields below "spec", as the service would
// refuse it: the API message's conversion (quantities, enums), then the engine's validation
// (recommender.ValidateSpec).
func ValidateSpec(spec *pb.HorizontalPodAutoscalerSpec) []SpecViolation {
	s, vs := apiconv.SpecFromProto("spec", spec)
	var out []SpecViolation
	for _, v := range vs {
		out = append(out, SpecViolation{Field: v.Field, Description: v.Description})
	}
	if len(out) > 0 || s == nil {
		return out
	}
	for _, e := range recommender.ValidateSpec(s, "spec") {
		out = append(out, SpecViolation{Field: e.Field, Description: e.Description})
	}
	return out
}
