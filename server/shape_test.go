package server_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

// TestObservationShapeFitsMetricType: an observation carrying a field its metric's type does
// not read is InvalidArgument naming that field and saying where the samples go, not a metric
// that silently fails with "no metrics returned"; the field that fits is accepted, and so is any
// field beside an error (the error wins).
func TestObservationShapeFitsMetricType(t *testing.T) {
	metrics := map[string]string{
		"Resource":          `{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}`,
		"ContainerResource": `{"type": "ContainerResource", "containerResource": {"name": "cpu", "container": "app", "target": {"type": "Utilization", "averageUtilization": 50}}}`,
		"Pods":              `{"type": "Pods", "pods": {"metric": {"name": "rps"}, "target": {"type": "AverageValue", "averageValue": "10"}}}`,
		"Object":            `{"type": "Object", "object": {"describedObject": {"apiVersion": "v1", "kind": "Service", "name": "web"}, "metric": {"name": "rps"}, "target": {"type": "Value", "value": "10"}}}`,
		"External":          `{"type": "External", "external": {"metric": {"name": "queue"}, "target": {"type": "AverageValue", "averageValue": "10"}}}`,
		"":                  "", // no spec.metrics: the default cpu Resource metric
	}
	observations := map[string]string{
		"podValues": `{"podValues": [{"pod": "p1", "value": "5"}]}`,
		"value":     `{"value": "5"}`,
		"values":    `{"values": ["5"]}`,
	}
	tests := []struct {
		name, metric, observation string
		error                     bool
		want                      []*errdetails.BadRequest_FieldViolation // nil: accepted
	}{
		{"External takes values", "External", "values", false, nil},
		{"value for External", "External", "value", false, forbidden("value", "spec.metrics[0]", "External", "values (summed)")},
		{"podValues for External", "External", "podValues", false, forbidden("podValues", "spec.metrics[0]", "External", "values (summed)")},
		{"Object takes value", "Object", "value", false, nil},
		{"podValues for Object", "Object", "podValues", false, forbidden("podValues", "spec.metrics[0]", "Object", "value")},
		{"values for Object", "Object", "values", false, forbidden("values", "spec.metrics[0]", "Object", "value")},
		{"Resource takes podValues", "Resource", "podValues", false, nil},
		{"value for Resource", "Resource", "value", false, forbidden("value", "spec.metrics[0]", "Resource", "podValues (one sample per pod)")},
		{"values for Resource", "Resource", "values", false, forbidden("values", "spec.metrics[0]", "Resource", "podValues (one sample per pod)")},
		{"value for ContainerResource", "ContainerResource", "value", false, forbidden("value", "spec.metrics[0]", "ContainerResource", "podValues (one sample per pod)")},
		{"values for Pods", "Pods", "values", false, forbidden("values", "spec.metrics[0]", "Pods", "podValues (one sample per pod)")},
		{"value for Pods", "Pods", "value", false, forbidden("value", "spec.metrics[0]", "Pods", "podValues (one sample per pod)")},
		{"value for the default cpu metric", "", "value", false, forbidden("value", "the default cpu metric (spec.metrics is empty)", "Resource", "podValues (one sample per pod)")},
		{"an error wins over a misplaced value", "External", "value", true, nil},
	}
	h := startServer(t, filepath.Join(t.TempDir(), "db"), &clock{t: t0})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			specMetrics := "[]"
			if m := metrics[tc.metric]; m != "" {
				specMetrics = "[" + m + "]"
			}
			obs := observations[tc.observation]
			if tc.error {
				obs = obs[:len(obs)-1] + `, "error": "metrics API down"}`
			}
			req := mustJSON(t, &pb.RecommendRequest{}, `{
			  "target": {"namespace": "shop", "name": "web"}, "currentReplicas": 2, "dryRun": true,
			  "spec": {"maxReplicas": 10, "metrics": `+specMetrics+`},
			  "pods": [{"name": "p1", "phase": "Running", "ready": true, "startTime": "2026-01-01T00:00:00Z",
			            "containers": [{"name": "app", "requests": {"cpu": "100m"}}]}],
			  "metrics": [`+obs+`]
			}`)
			_, err := h.client.Recommend(t.Context(), req)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Recommend: %v, want it accepted", err)
				}
				return
			}
			st := status.Convert(err)
			if st.Code() != codes.InvalidArgument {
				t.Fatalf("Recommend: %v, want InvalidArgument", err)
			}
			var got []*errdetails.BadRequest_FieldViolation
			for _, d := range st.Details() {
				if br, ok := d.(*errdetails.BadRequest); ok {
					got = br.FieldViolations
				}
			}
			if diff := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b *errdetails.BadRequest_FieldViolation) bool {
				return a.Field == b.Field && a.Description == b.Description
			})); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
		})
	}
}

// forbidden is the one violation of metrics[0].field, an observation of metric, of type
// metricType, whose samples go in where.
func forbidden(field, metric, metricType, where string) []*errdetails.BadRequest_FieldViolation {
	return []*errdetails.BadRequest_FieldViolation{{
		Field:       "metrics[0]." + field,
		Description: fmt.Sprintf("Forbidden: %s is a %s metric, whose samples go in %s", metric, metricType, where),
	}}
}
