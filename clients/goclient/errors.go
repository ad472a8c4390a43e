package goclient

import (
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/status"
)

// FieldViolation is one problem the server found in a request: the field's path in the
// request's protojson names (e.g. "spec.metrics[0].resource.target.averageUtilization") and
// what is wrong with it.
type FieldViolation struct {
	Field       string
	Description string
}

// FieldViolations returns the field violations an error from the server carries (the
// google.rpc.BadRequest detail of an InvalidArgument status), in the server's order; nil when
// err carries none.
func FieldViolations(err error) []FieldViolation {
	st, ok := status.FromError(err)
	if !ok {
		return nil
	}
	var out []FieldViolation
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.GetFieldViolations() {
				out = append(out, FieldViolation{Field: v.GetField(), Description: v.GetDescription()})
			}
		}
	}
	return out
}
