package server_test

import (
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
	"github.com/hpa-recommender/hpa-recommender/server"
)

// succeededPodRequest is a CPU HPA at 4 replicas whose fourth pod has Succeeded: Kubernetes
// 1.37 counts it (missing, filled at its request on this scale-down) and holds at 4; 1.38
// ignores it and proposes 2 (kubernetes/kubernetes#141302).
func succeededPodRequest(t *testing.T, version string) *pb.RecommendRequest {
	t.Helper()
	req := mustJSON(t, &pb.RecommendRequest{}, `{
	  "target": {"cluster": "c1", "namespace": "shop", "name": "batch"},
	  "spec": {"maxReplicas": 10, "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}]},
	  "currentReplicas": 4,
	  "pods": [
	    {"name": "p0", "phase": "Running", "ready": true, "readyTransitionTime": "2026-06-01T10:00:00Z", "startTime": "2026-06-01T09:00:00Z", "containers": [{"name": "app", "requests": {"cpu": "1"}}]},
	    {"name": "p1", "phase": "Running", "ready": true, "readyTransitionTime": "2026-06-01T10:00:00Z", "startTime": "2026-06-01T09:00:00Z", "containers": [{"name": "app", "requests": {"cpu": "1"}}]},
	    {"name": "p2", "phase": "Running", "ready": true, "readyTransitionTime": "2026-06-01T10:00:00Z", "startTime": "2026-06-01T09:00:00Z", "containers": [{"name": "app", "requests": {"cpu": "1"}}]},
	    {"name": "p3", "phase": "Succeeded", "ready": false, "readyTransitionTime": "2026-06-01T10:00:00Z", "startTime": "2026-06-01T09:00:00Z", "containers": [{"name": "app", "requests": {"cpu": "1"}}]}
	  ],
	  "metrics": [{"podValues": [
	    {"pod": "p0", "value": "200m", "timestamp": "2026-06-01T11:59:00Z"},
	    {"pod": "p1", "value": "200m", "timestamp": "2026-06-01T11:59:00Z"},
	    {"pod": "p2", "value": "200m", "timestamp": "2026-06-01T11:59:00Z"}
	  ]}],
	  "dryRun": true
	}`)
	if version != "" {
		req.Options = &pb.Options{KubernetesVersion: proto.String(version)}
	}
	return req
}

// TestKubernetesVersionPerRequest: a request's options.kubernetesVersion picks the release; a
// request without one takes the server's --kubernetes-version.
func TestKubernetesVersionPerRequest(t *testing.T) {
	ctx := t.Context()
	for _, tc := range []struct {
		name          string
		serverVersion string // "" keeps the default, the newest
		reqVersion    string
		want          int32
	}{
		{"server default is the newest", "", "", 2},
		{"request asks for 1.37", "", "1.37", 4},
		{"request asks for 1.38", "1.37", "1.38", 2},
		{"server flag set to 1.37", "1.37", "", 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := startServer(t, filepath.Join(t.TempDir(), "db"), &clock{t: t0}, func(c *server.Config) {
				if tc.serverVersion != "" {
					c.Defaults.KubernetesVersion = tc.serverVersion
				}
			})
			resp, err := h.client.Recommend(ctx, succeededPodRequest(t, tc.reqVersion))
			if err != nil {
				t.Fatal(err)
			}
			// The proposal: at first sight the seeded history holds the count itself (R-HIST).
			if got := resp.GetExplanation().GetProposal(); got != tc.want {
				t.Errorf("proposal %d, want %d (%s)", got, tc.want, resp.GetExplanation().GetMessage())
			}
		})
	}
}

// TestKubernetesVersionInvalid: an unsupported release, or a locked gate turned off, is
// InvalidArgument naming the field and what is allowed, in Recommend and in Simulate.
func TestKubernetesVersionInvalid(t *testing.T) {
	ctx := t.Context()
	h := startServer(t, filepath.Join(t.TempDir(), "db"), &clock{t: t0})
	off := false
	for _, tc := range []struct {
		name    string
		opts    *pb.Options
		field   string
		message string
	}{
		{"too old", &pb.Options{KubernetesVersion: proto.String("1.33")}, "options.kubernetesVersion", "supported are 1.34 to 1.38"},
		{"too new", &pb.Options{KubernetesVersion: proto.String("1.39")}, "options.kubernetesVersion", "supported are 1.34 to 1.38"},
		{"not a version", &pb.Options{KubernetesVersion: proto.String("latest")}, "options.kubernetesVersion", "supported are 1.34 to 1.38"},
		{"empty", &pb.Options{KubernetesVersion: proto.String("")}, "options.kubernetesVersion", "supported are 1.34 to 1.38"},
		{"locked gate", &pb.Options{KubernetesVersion: proto.String("1.37"), HpaConfigurableTolerance: &off}, "options.hpaConfigurableTolerance", "locked on in Kubernetes 1.37"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := succeededPodRequest(t, "")
			req.Options = tc.opts
			_, err := h.client.Recommend(ctx, req)
			checkViolation(t, err, tc.field, tc.message)

			sim := &pb.SimulateRequest{Spec: req.Spec, Options: tc.opts, InitialReplicas: 4,
				Steps: []*pb.SimulateStep{{Time: req.Pods[0].StartTime, Pods: req.Pods, Metrics: req.Metrics}}}
			_, err = h.client.Simulate(ctx, sim)
			checkViolation(t, err, tc.field, tc.message)
		})
	}
}

func checkViolation(t *testing.T, err error, field, message string) {
	t.Helper()
	st := status.Convert(err)
	if st.Code() != codes.InvalidArgument {
		t.Fatalf("got %v, want InvalidArgument", err)
	}
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.FieldViolations {
				if v.Field == field && strings.Contains(v.Description, message) {
					return
				}
			}
		}
	}
	t.Errorf("%v: no violation of %s saying %q", err, field, message)
}

func TestConfigValidateKubernetesVersion(t *testing.T) {
	cfg := server.DefaultConfig()
	cfg.Store = server.StoreMemory
	if err := cfg.Validate(); err != nil {
		t.Fatalf("default config: %v", err)
	}
	cfg.Defaults.KubernetesVersion = "1.40"
	err := cfg.Validate()
	if err == nil || !strings.Contains(err.Error(), "--kubernetes-version") || !strings.Contains(err.Error(), "1.34 to 1.38") {
		t.Errorf("Validate() = %v, want an error naming --kubernetes-version and the range", err)
	}
}
