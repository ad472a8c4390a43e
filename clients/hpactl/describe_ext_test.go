package hpactl_test

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hpa-recommender/hpa-recommender/clients/goclient"
	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
	"github.com/hpa-recommender/hpa-recommender/server"
	"github.com/hpa-recommender/hpa-recommender/server/servertest"
)

// reportScale tells the server at addr how the scale write of a decision went, as the scaler
// does.
func reportScale(t *testing.T, addr string, target *pb.TargetRef, id string, succeeded bool) {
	t.Helper()
	c, err := goclient.New(addr, goclient.WithInsecure())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := &pb.ReportScaleRequest{Target: target, RecommendationId: id, Succeeded: succeeded}
	if !succeeded {
		req.Error = "the scale subresource refused the write"
	}
	resp, err := c.ReportScale(t.Context(), req)
	if err != nil {
		t.Fatalf("ReportScale: %v", err)
	}
	if !resp.GetRecorded() {
		t.Fatal("ReportScale did not record the outcome")
	}
}

// recommendID runs hpactl recommend and returns the decision's recommendation id.
func recommendID(t *testing.T, addr string, args ...string) string {
	t.Helper()
	r := run(t, addr, append([]string{"recommend", "-o", "json"}, args...)...)
	mustOK(t, r)
	resp := decodeRecommend(t, r.stdout)
	if resp.GetRecommendationId() == "" {
		t.Fatalf("the decision asks for no scale:\n%s", r.stdout)
	}
	return resp.GetRecommendationId()
}

// lineWith is the (squashed) line of out that starts with prefix.
func lineWith(t *testing.T, out, prefix string) string {
	t.Helper()
	for l := range strings.SplitSeq(out, "\n") {
		if l := squash(l); strings.HasPrefix(l, prefix) {
			return l
		}
	}
	t.Errorf("no line starts with %q in:\n%s", prefix, out)
	return ""
}

// threeMetricHPA has three metrics: the second and third have no values in threeMetricObs.
const threeMetricHPA = `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: queue, namespace: jobs}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: StatefulSet, name: worker}
  maxReplicas: 10
  metrics:
  - type: Resource
    resource:
      name: cpu
      target: {type: Utilization, averageUtilization: 60}
  - type: External
    external:
      metric: {name: queue_depth}
      target: {type: AverageValue, averageValue: 30}
  - type: Pods
    pods:
      metric: {name: jobs_in_flight}
      target: {type: AverageValue, averageValue: 5}
`

const threeMetricObs = `{
  "currentReplicas": 3,
  "pods": [
    {"name": "a", "phase": "Running", "ready": true, "startTime": "2026-06-01T10:00:00Z", "containers": [{"name": "app", "requests": {"cpu": "500m"}}]},
    {"name": "b", "phase": "Running", "ready": true, "startTime": "2026-06-01T10:00:00Z", "containers": [{"name": "app", "requests": {"cpu": "500m"}}]},
    {"name": "c", "phase": "Running", "ready": true, "startTime": "2026-06-01T10:00:00Z", "containers": [{"name": "app", "requests": {"cpu": "500m"}}]}
  ],
  "metrics": [{"error": "metrics API unavailable"}, {"values": ["300"]}, {"error": "no samples"}]
}`

func TestListColumnsFollowReportScale(t *testing.T) {
	addr := startServer(t)
	web := &pb.TargetRef{Cluster: "prod", Namespace: "shop", Name: "web"}
	api := &pb.TargetRef{Cluster: "prod", Namespace: "shop", Name: "api"}
	webID := recommendID(t, addr, "-f", hpaYAML, "--observations", obsJSON, "--cluster", "prod")
	apiID := recommendID(t, addr, "-f", multiHPA(t, "api"), "--observations", obsJSON, "--cluster", "prod")
	mustOK(t, run(t, addr, "recommend", "-f", writeFile(t, "hpa.yaml", threeMetricHPA), "--observations", writeFile(t, "obs.json", threeMetricObs), "--cluster", "prod"))

	list := func() string {
		t.Helper()
		r := run(t, addr, "list", "--cluster", "prod")
		mustOK(t, r)
		return r.stdout
	}
	before := list()
	if got, want := lineWith(t, before, "CLUSTER"), "CLUSTER NAMESPACE NAME REFERENCE TARGETS MINPODS MAXPODS REPLICAS AGE"; got != want {
		t.Errorf("header = %q, want %q", got, want)
	}
	if got, want := lineWith(t, before, "prod shop web"), "prod shop web Deployment/web cpu: 90%/60% 2 20 3 90s"; got != want {
		t.Errorf("before ReportScale: %q, want %q", got, want)
	}
	// The failed metric has no current value; a third metric is counted, not shown.
	if got, want := lineWith(t, before, "prod jobs queue"), "prod jobs queue StatefulSet/worker cpu: <unknown>/60%, 100/30 (avg) + 1 more... <unset> 10 3 90s"; got != want {
		t.Errorf("three metrics: %q, want %q", got, want)
	}

	reportScale(t, addr, web, webID, true)
	reportScale(t, addr, api, apiID, false)
	after := list()
	if got, want := lineWith(t, after, "prod shop web"), "prod shop web Deployment/web cpu: 90%/60% 2 20 5 90s"; got != want {
		t.Errorf("after a successful ReportScale: %q, want %q", got, want)
	}
	if got, want := lineWith(t, after, "prod shop api"), "prod shop api Deployment/web cpu: 90%/60% 2 20 3 90s"; got != want {
		t.Errorf("after a failed ReportScale: %q, want %q", got, want)
	}
}

func TestDescribe(t *testing.T) {
	addr := startServer(t)
	web := &pb.TargetRef{Cluster: "prod", Namespace: "shop", Name: "web"}
	id := recommendID(t, addr, "-f", hpaYAML, "--observations", obsJSON, "--cluster", "prod")

	r := run(t, addr, "describe", "-f", hpaYAML, "--cluster", "prod")
	mustOK(t, r)
	for prefix, want := range map[string]string{
		"Name:":            "Name: web",
		"Namespace:":       "Namespace: shop",
		"Reference:":       "Reference: Deployment/web",
		"Metrics:":         "Metrics: ( current / target )",
		"resource cpu":     "resource cpu on pods (as a percentage of request): 90% (450m) / 60%",
		"Min replicas:":    "Min replicas: 2",
		"Max replicas:":    "Max replicas: 20",
		"Deployment pods:": "Deployment pods: 3 current / 5 desired",
		"Events:":          "Events: <none>",
		"Last decision:":   "Last decision: 2026-06-01T12:00:30Z (90s ago): 3 -> 5",
		"Stabilization":    "Stabilization Window: 0 seconds",
		"- Type: Pods":     "- Type: Pods Value: 4 Period: 15 seconds",
		"Explanation:":     "Explanation: scale up 3 -> 5",
		"AbleToScale":      "AbleToScale True ReadyForNewScale",
		"Type Status":      "Type Status Reason Message",
		"ScalingActive":    "ScalingActive True ValidMetricFound",
		"Select Policy:":   "Select Policy: Max",
		"Scale Up:":        "Scale Up:",
		"Scale Down:":      "Scale Down:",
		"Behavior:":        "Behavior:",
		"Conditions:":      "Conditions:",
		"Cluster:":         "Cluster: prod",
		"Last seen:":       "Last seen: 2026-06-01T12:00:30Z (90s ago)",
		"Policies:":        "Policies:",
		"- Type: Percent":  "- Type: Percent Value: 100 Period: 15 seconds",
		"Stages:":          "Stages: proposal 5 -> stabilized 5 -> limited 5 -> final 5",
	} {
		if got := lineWith(t, r.stdout, prefix); !strings.HasPrefix(got, want) {
			t.Errorf("line %q, want it to start with %q", got, want)
		}
	}
	// kubectl's order: the metrics, the replicas, the conditions, then the events.
	order := []string{"Name:", "Namespace:", "Reference:", "Metrics:", "Min replicas:", "Max replicas:", "Deployment pods:", "Conditions:", "Events:", "Last decision:"}
	last := -1
	for _, s := range order {
		i := strings.Index(r.stdout, s)
		if i <= last {
			t.Errorf("%q is out of kubectl's order:\n%s", s, r.stdout)
		}
		last = i
	}

	reportScale(t, addr, web, id, true)
	r = run(t, addr, "describe", "--cluster", "prod", "--namespace", "shop", "--name", "web")
	mustOK(t, r)
	for prefix, want := range map[string]string{
		"Deployment pods:": "Deployment pods: 5 current / 5 desired",
		"AbleToScale":      "AbleToScale True SucceededRescale the HPA controller was able to update the target scale to 5",
		"Type Reason Age":  "Type Reason Age From Message",
		"Normal":           "Normal SuccessfulRescale 90s hpa-recommender New size: 5; scaled up by 2 (from 3)",
	} {
		if got := lineWith(t, r.stdout, prefix); got != want {
			t.Errorf("after ReportScale: line %q, want %q", got, want)
		}
	}

	t.Run("unknown target", func(t *testing.T) {
		r := run(t, addr, "describe", "--cluster", "prod", "--namespace", "shop", "--name", "nope")
		if r.code != 1 || !strings.Contains(r.stderr, "NotFound") {
			t.Errorf("exit %d, stderr %q; want 1 and NotFound", r.code, r.stderr)
		}
	})
	t.Run("no target", func(t *testing.T) {
		r := run(t, addr, "describe", "--cluster", "prod")
		if r.code != 1 || !strings.Contains(r.stderr, "--namespace and --name") {
			t.Errorf("exit %d, stderr %q; want 1 naming the missing flags", r.code, r.stderr)
		}
	})
}

// TestAgeIsFirstSeen: AGE in list, and describe's First seen, count from the Recommend that
// first stored the target, not from the latest one.
func TestAgeIsFirstSeen(t *testing.T) {
	var serverNow atomic.Pointer[time.Time]
	first := fixedNow.Add(-2 * time.Hour)
	serverNow.Store(&first)
	addr, _ := servertest.Start(t, server.DefaultConfig(), server.Deps{Now: func() time.Time { return *serverNow.Load() }})
	mustOK(t, run(t, addr, "recommend", "-f", hpaYAML, "--observations", obsJSON, "--cluster", "prod"))
	later := fixedNow
	serverNow.Store(&later)
	mustOK(t, run(t, addr, "recommend", "-f", hpaYAML, "--observations", obsJSON, "--cluster", "prod"))

	r := run(t, addr, "list", "--cluster", "prod")
	mustOK(t, r)
	if got, want := lineWith(t, r.stdout, "prod shop web"), "prod shop web Deployment/web cpu: 90%/60% 2 20 3 121m"; got != want {
		t.Errorf("list: %q, want %q (AGE 2h1m30s from the first Recommend)", got, want)
	}
	r = run(t, addr, "describe", "-f", hpaYAML, "--cluster", "prod")
	mustOK(t, r)
	if got, want := lineWith(t, r.stdout, "First seen:"), "First seen: 2026-06-01T10:00:30Z (121m ago)"; got != want {
		t.Errorf("describe: %q, want %q", got, want)
	}
}
