package hpactl_test

import (
	"bytes"
	"image"
	"image/png"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/hpa-recommender/hpa-recommender/clients/hpactl"
	"github.com/hpa-recommender/hpa-recommender/clients/internal/local"
	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
	"github.com/hpa-recommender/hpa-recommender/server"
	"github.com/hpa-recommender/hpa-recommender/server/servertest"
)

// fixedNow is the decision clock of the server and of --local in these tests, so both answer
// the same.
var fixedNow = time.Date(2026, 6, 1, 12, 0, 30, 0, time.UTC)

// cliAge is how long after fixedNow hpactl's own clock reads, for the ages it prints.
const cliAge = 90 * time.Second

// startServer runs a real hpa-recommender (in-memory store, fixed clock) on a loopback port.
func startServer(t *testing.T) string {
	t.Helper()
	addr, _ := servertest.Start(t, server.DefaultConfig(), server.Deps{Now: func() time.Time { return fixedNow }})
	return addr
}

type result struct {
	code           int
	stdout, stderr string
}

// run runs hpactl against addr (HPACTL_ADDR) with --local's clock fixed.
func run(t *testing.T, addr string, args ...string) result {
	t.Helper()
	return runClock(t, addr, fixedNow, fixedNow.Add(cliAge), args...)
}

// runClock runs hpactl against addr with --local deciding at localNow and hpactl's own clock
// (ages, --since) at now.
func runClock(t *testing.T, addr string, localNow, now time.Time, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	eng := local.New()
	eng.Now = func() time.Time { return localNow }
	app := &hpactl.App{
		Stdout: &stdout, Stderr: &stderr, Local: eng,
		Now: func() time.Time { return now },
		Getenv: func(k string) string {
			if k == hpactl.EnvAddr {
				return addr
			}
			return ""
		},
	}
	code := app.Run(t.Context(), args)
	return result{code, stdout.String(), stderr.String()}
}

func mustOK(t *testing.T, r result) {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
}

// squash collapses runs of spaces, so checks do not depend on table alignment.
func squash(s string) string { return strings.Join(strings.Fields(s), " ") }

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const (
	hpaYAML = "testdata/hpa.yaml"
	obsJSON = "testdata/obs.json"
	loadCSV = "testdata/load.csv"
)

func TestRecommendText(t *testing.T) {
	addr := startServer(t)
	r := run(t, addr, "recommend", "-f", hpaYAML, "--observations", obsJSON, "--cluster", "prod")
	mustOK(t, r)
	for _, want := range []string{
		"Target:", "prod/shop/web",
		"Desired replicas:  5 (current 3)",
		"Scale:             yes",
		"Recommendation id:",
		"scale up 3 -> 5",
		"AbleToScale", "ScalingActive", "ValidMetricFound", "ScalingLimited",
		"90% 450m/pod", "60%", "1.500",
	} {
		if !strings.Contains(squash(r.stdout), squash(want)) {
			t.Errorf("output lacks %q:\n%s", want, r.stdout)
		}
	}
}

func decodeRecommend(t *testing.T, s string) *pb.RecommendResponse {
	t.Helper()
	resp := &pb.RecommendResponse{}
	if err := protojson.Unmarshal([]byte(s), resp); err != nil {
		t.Fatalf("output is not a RecommendResponse: %v\n%s", err, s)
	}
	return resp
}

// TestRecommendLocalEqualsServer: --local answers what a server answers for a target it has
// never seen, at the same clock.
func TestRecommendLocalEqualsServer(t *testing.T) {
	addr := startServer(t)
	tests := []struct {
		name string
		hpa  string
		obs  string
	}{
		{name: "example files", hpa: hpaYAML, obs: obsJSON},
		{name: "bare-number quantities, pods metric, no behavior", hpa: writeFile(t, "hpa.yaml", podsHPA), obs: writeFile(t, "obs.json", podsObs)},
		{name: "missing metric, unready pod", hpa: hpaYAML, obs: writeFile(t, "obs.json", unreadyObs)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			remote := run(t, addr, "recommend", "-f", tt.hpa, "--observations", tt.obs, "--dry-run", "-o", "json")
			mustOK(t, remote)
			loc := run(t, addr, "recommend", "-f", tt.hpa, "--observations", tt.obs, "--local", "-o", "json")
			mustOK(t, loc)
			got, want := decodeRecommend(t, loc.stdout), decodeRecommend(t, remote.stdout)
			if diff := cmp.Diff(got, want, protocmp.Transform()); diff != "" {
				t.Errorf("--local differs from the server (-local +server):\n%s", diff)
			}
		})
	}
}

const podsHPA = `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: queue-worker
spec:
  maxReplicas: 10
  metrics:
  - type: Pods
    pods:
      metric:
        name: jobs_in_flight
      target:
        type: AverageValue
        averageValue: 30
`

const podsObs = `{
  "currentReplicas": 2,
  "pods": [
    {"name": "a", "phase": "Running", "ready": true, "startTime": "2026-06-01T10:00:00Z"},
    {"name": "b", "phase": "Running", "ready": true, "startTime": "2026-06-01T10:00:00Z"}
  ],
  "metrics": [{"podValues": [{"pod": "a", "value": "75"}, {"pod": "b", "value": "45"}]}]
}`

const unreadyObs = `{
  "currentReplicas": 2,
  "pods": [
    {"name": "a", "phase": "Running", "ready": true, "startTime": "2026-06-01T10:00:00Z",
     "readyTransitionTime": "2026-06-01T10:00:30Z", "containers": [{"name": "app", "requests": {"cpu": "1"}}]},
    {"name": "b", "phase": "Running", "ready": false, "startTime": "2026-06-01T11:59:00Z",
     "readyTransitionTime": "2026-06-01T11:59:00Z", "containers": [{"name": "app", "requests": {"cpu": "1"}}]}
  ],
  "metrics": [{"podValues": [{"pod": "a", "value": "1200m", "timestamp": "2026-06-01T12:00:00Z"}]}]
}`

func TestPodsManifestBareNumbers(t *testing.T) {
	r := run(t, "", "recommend", "-f", writeFile(t, "hpa.yaml", podsHPA), "--observations", writeFile(t, "obs.json", podsObs), "--local", "-o", "json")
	mustOK(t, r)
	// (75+45)/2 = 60 against 30 per pod: ratio 2, 4 replicas.
	if got := decodeRecommend(t, r.stdout).GetDesiredReplicas(); got != 4 {
		t.Errorf("desiredReplicas = %d, want 4", got)
	}
}

func TestRecommendErrors(t *testing.T) {
	addr := startServer(t)
	badSpec := writeFile(t, "hpa.yaml", `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: shop}
spec:
  minReplicas: 5
  maxReplicas: 3
  metrics:
  - type: Resource
    resource:
      name: cpu
      target: {type: Utilization, averageUtilization: 0}
`)
	tests := []struct {
		name       string
		args       []string
		wantStderr []string
	}{
		{name: "missing manifest", args: []string{"recommend", "-f", "testdata/nope.yaml", "--observations", obsJSON},
			wantStderr: []string{"read manifest", "nope.yaml"}},
		{name: "missing observations", args: []string{"recommend", "-f", hpaYAML, "--observations", "testdata/nope.json"},
			wantStderr: []string{"read observations"}},
		{name: "no flags", args: []string{"recommend"}, wantStderr: []string{"needs -f hpa.yaml and --observations"}},
		{name: "unparsable manifest", args: []string{"recommend", "-f", writeFile(t, "bad.yaml", "spec: [unclosed"), "--observations", obsJSON},
			wantStderr: []string{"parse manifest"}},
		{name: "unknown manifest field", args: []string{"recommend", "-f", writeFile(t, "typo.yaml", "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nspec:\n  maxReplica: 3\n"), "--observations", obsJSON},
			wantStderr: []string{"parse manifest", "maxReplica"}},
		{name: "not an HPA", args: []string{"recommend", "-f", writeFile(t, "dep.yaml", "apiVersion: apps/v1\nkind: Deployment\n"), "--observations", obsJSON},
			wantStderr: []string{"holds no HorizontalPodAutoscaler (autoscaling/v2, v2beta2, v2beta1 or v1)"}},
		{name: "unparsable observations", args: []string{"recommend", "-f", hpaYAML, "--observations", writeFile(t, "o.json", `{"currentReplicas": "x"`)},
			wantStderr: []string{"parse observations"}},
		{name: "invalid spec from server", args: []string{"recommend", "-f", badSpec, "--observations", obsJSON},
			wantStderr: []string{"InvalidArgument", "  spec.metrics[0].resource.target.averageUtilization: ", "  spec.maxReplicas: "}},
		{name: "invalid spec locally", args: []string{"recommend", "-f", badSpec, "--observations", obsJSON, "--local"},
			wantStderr: []string{"InvalidArgument", "  spec.metrics[0].resource.target.averageUtilization: ", "  spec.maxReplicas: "}},
		{name: "bad pod quantity", args: []string{"recommend", "-f", hpaYAML, "--observations", writeFile(t, "o.json", `{"currentReplicas": 1, "pods": [{"name": "a", "phase": "Running", "requests": {"cpu": "lots"}}], "metrics": [{}]}`)},
			wantStderr: []string{"InvalidArgument", "  pods[0].requests[cpu]: "}},
		{name: "unknown command", args: []string{"frobnicate"}, wantStderr: []string{`unknown command "frobnicate"`}},
		{name: "bad flag", args: []string{"recommend", "--bogus"}, wantStderr: []string{"flag provided but not defined: -bogus"}},
		{name: "bad output", args: []string{"list", "--output", "yaml"}, wantStderr: []string{"must be text or json"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, addr, tt.args...)
			if r.code != 1 {
				t.Errorf("exit %d, want 1", r.code)
			}
			for _, want := range tt.wantStderr {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
				}
			}
		})
	}
}

// TestInvalidSpecSameLocally: the local engine reports the same field violations as the server.
func TestInvalidSpecSameLocally(t *testing.T) {
	addr := startServer(t)
	bad := writeFile(t, "hpa.yaml", `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: shop}
spec:
  maxReplicas: 0
  metrics:
  - type: Pods
    pods:
      metric: {name: ""}
      target: {type: Utilization}
  behavior:
    scaleUp:
      stabilizationWindowSeconds: 4000
      policies: [{type: Pods, value: 0, periodSeconds: 15}]
`)
	remote := run(t, addr, "recommend", "-f", bad, "--observations", obsJSON)
	loc := run(t, addr, "recommend", "-f", bad, "--observations", obsJSON, "--local")
	if remote.code != 1 || loc.code != 1 {
		t.Fatalf("exit codes %d and %d, want 1", remote.code, loc.code)
	}
	if diff := cmp.Diff(loc.stderr, remote.stderr); diff != "" {
		t.Errorf("stderr (-local +server):\n%s", diff)
	}
	if !strings.Contains(remote.stderr, "spec.behavior.scaleUp.stabilizationWindowSeconds") {
		t.Errorf("stderr lacks the behavior violation:\n%s", remote.stderr)
	}
}

// multiHPA is testdata/hpa.yaml's autoscaler under each name, one document each, after a
// document of another kind.
func multiHPA(t *testing.T, names ...string) string {
	t.Helper()
	b, err := os.ReadFile(hpaYAML)
	if err != nil {
		t.Fatal(err)
	}
	docs := []string{"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other}\n"}
	for _, n := range names {
		docs = append(docs, strings.Replace(string(b), "name: web\n  namespace", "name: "+n+"\n  namespace", 1))
	}
	return writeFile(t, "hpas.yaml", strings.Join(docs, "---\n"))
}

func targetKey(r *pb.TargetRef) string {
	return r.GetCluster() + "/" + r.GetNamespace() + "/" + r.GetName()
}

func TestGetListDelete(t *testing.T) {
	addr := startServer(t)
	multi := multiHPA(t, "web", "api", "cart")
	for _, args := range [][]string{
		{"-f", hpaYAML, "--cluster", "prod"},
		{"-f", multi, "--cluster", "prod", "--name", "api"},
		{"-f", multi, "--cluster", "prod", "--name", "cart", "--namespace", "checkout"},
		{"-f", hpaYAML, "--cluster", "staging"},
	} {
		mustOK(t, run(t, addr, append([]string{"recommend", "--observations", obsJSON}, args...)...))
	}

	t.Run("get by manifest", func(t *testing.T) {
		r := run(t, addr, "get", "-f", hpaYAML, "--cluster", "prod")
		mustOK(t, r)
		for _, want := range []string{"prod/shop/web", "Pending decisions:  1", "Last decision:", "Desired replicas:  5 (current 3)", "min 2, max 20, 1 metric(s)"} {
			if !strings.Contains(squash(r.stdout), squash(want)) {
				t.Errorf("output lacks %q:\n%s", want, r.stdout)
			}
		}
	})
	t.Run("get json by flags", func(t *testing.T) {
		r := run(t, addr, "get", "--cluster", "prod", "--namespace", "checkout", "--name", "cart", "-o", "json")
		mustOK(t, r)
		resp := &pb.GetTargetResponse{}
		if err := protojson.Unmarshal([]byte(r.stdout), resp); err != nil {
			t.Fatal(err)
		}
		if got := resp.GetLastDecision().GetResponse().GetDesiredReplicas(); got != 5 {
			t.Errorf("last decision desired = %d, want 5", got)
		}
	})
	t.Run("get unknown", func(t *testing.T) {
		r := run(t, addr, "get", "--cluster", "prod", "--namespace", "shop", "--name", "nope")
		if r.code != 1 || !strings.Contains(r.stderr, "NotFound") {
			t.Errorf("exit %d, stderr %q; want 1 and NotFound", r.code, r.stderr)
		}
	})
	t.Run("get without a target", func(t *testing.T) {
		r := run(t, addr, "get", "--namespace", "shop")
		if r.code != 1 || !strings.Contains(r.stderr, "--name") {
			t.Errorf("exit %d, stderr %q; want 1 naming --name", r.code, r.stderr)
		}
	})
	t.Run("list all", func(t *testing.T) {
		r := run(t, addr, "list")
		mustOK(t, r)
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		if len(lines) != 5 {
			t.Errorf("got %d lines, want a header and 4 targets:\n%s", len(lines), r.stdout)
		}
	})
	t.Run("list cluster json", func(t *testing.T) {
		r := run(t, addr, "list", "--cluster", "prod", "-o", "json")
		mustOK(t, r)
		resp := &pb.ListTargetsResponse{}
		if err := protojson.Unmarshal([]byte(r.stdout), resp); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, s := range resp.GetTargets() {
			got = append(got, s.GetTarget().GetNamespace()+"/"+s.GetTarget().GetName())
		}
		if diff := cmp.Diff(got, []string{"checkout/cart", "shop/api", "shop/web"}); diff != "" {
			t.Errorf("targets (-got +want):\n%s", diff)
		}
	})
	t.Run("list limit pages", func(t *testing.T) {
		// --limit 3 stops after 3 of the 4 targets.
		r := run(t, addr, "list", "--limit", "3", "-o", "json")
		mustOK(t, r)
		resp := &pb.ListTargetsResponse{}
		if err := protojson.Unmarshal([]byte(r.stdout), resp); err != nil {
			t.Fatal(err)
		}
		if got := len(resp.GetTargets()); got != 3 {
			t.Errorf("got %d targets, want 3", got)
		}
	})
	t.Run("list namespace without cluster", func(t *testing.T) {
		// The default cluster, as an empty --cluster means in every other command.
		mustOK(t, run(t, addr, "recommend", "-f", hpaYAML, "--observations", obsJSON))
		r := run(t, addr, "list", "--namespace", "shop", "-o", "json")
		mustOK(t, r)
		resp := &pb.ListTargetsResponse{}
		if err := protojson.Unmarshal([]byte(r.stdout), resp); err != nil {
			t.Fatal(err)
		}
		if got := resp.GetTargets(); len(got) != 1 || targetKey(got[0].GetTarget()) != "default/shop/web" {
			t.Errorf("targets %v, want default/shop/web only", got)
		}
		if err := run(t, addr, "delete", "-f", hpaYAML); err.code != 0 {
			t.Fatal(err.stderr)
		}
	})
	t.Run("get unknown names the target", func(t *testing.T) {
		r := run(t, addr, "get", "--namespace", "shop", "--name", "nope")
		if want := "hpactl: NotFound: target default/shop/nope not found\n"; r.code != 1 || r.stderr != want {
			t.Errorf("exit %d, stderr %q; want 1 and %q", r.code, r.stderr, want)
		}
	})
	t.Run("delete", func(t *testing.T) {
		r := run(t, addr, "delete", "-f", hpaYAML, "--cluster", "staging")
		mustOK(t, r)
		if want := "deleted staging/shop/web\n"; r.stdout != want {
			t.Errorf("stdout = %q, want %q", r.stdout, want)
		}
		if r := run(t, addr, "get", "-f", hpaYAML, "--cluster", "staging"); r.code != 1 || !strings.Contains(r.stderr, "NotFound") {
			t.Errorf("get after delete: exit %d, stderr %q", r.code, r.stderr)
		}
	})
}

// TestRateLimitedDetails: a refusal over the cluster's rate prints its reason and when to try
// again, as the server's ErrorInfo and RetryInfo give them.
func TestRateLimitedDetails(t *testing.T) {
	cfg := server.DefaultConfig()
	cfg.RateLimit, cfg.RateBurst = 0.5, 1
	addr, _ := servertest.Start(t, cfg, server.Deps{Now: func() time.Time { return fixedNow }})
	mustOK(t, run(t, addr, "recommend", "-f", hpaYAML, "--observations", obsJSON))
	r := run(t, addr, "recommend", "-f", hpaYAML, "--observations", obsJSON)
	if r.code != 1 {
		t.Fatalf("exit %d over the rate, want 1\n%s", r.code, r.stderr)
	}
	for _, want := range []string{"ResourceExhausted", "  reason: RATE_LIMITED (hpa-recommender)", "  retry after: "} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
}

func TestServerDown(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	r := run(t, addr, "list", "--retries", "0", "--timeout", "2s")
	if r.code != 1 || !strings.Contains(r.stderr, "Unavailable") {
		t.Errorf("exit %d, stderr %q; want 1 and Unavailable", r.code, r.stderr)
	}
}

func TestTokenNeedsTLSOffLoopback(t *testing.T) {
	r := run(t, "", "list", "--addr", "recommender.example:50051", "--plaintext", "--token", "t")
	if r.code != 1 || !strings.Contains(r.stderr, "needs TLS") {
		t.Errorf("exit %d, stderr %q; want 1 and a TLS error", r.code, r.stderr)
	}
}

func simulateJSON(t *testing.T, r result) *pb.SimulateResponse {
	t.Helper()
	mustOK(t, r)
	resp := &pb.SimulateResponse{}
	if err := protojson.Unmarshal([]byte(r.stdout), resp); err != nil {
		t.Fatalf("output is not a SimulateResponse: %v", err)
	}
	return resp
}

func TestSimulateLocalEqualsServer(t *testing.T) {
	addr := startServer(t)
	args := []string{"simulate", "-f", hpaYAML, "--trace", loadCSV, "--request", "cpu=500m", "-o", "json"}
	remote := simulateJSON(t, run(t, addr, args...))
	loc := simulateJSON(t, run(t, addr, append(args, "--local")...))
	if diff := cmp.Diff(loc, remote, protocmp.Transform()); diff != "" {
		t.Errorf("--local differs from the server (-local +server):\n%s", diff)
	}
	if got := len(remote.GetSteps()); got != 81 {
		t.Fatalf("got %d steps, want 81 (one per row)", got)
	}
	// The trace rises and falls: the replicas go up, then come down.
	peak, last := int32(0), remote.GetSteps()[80].GetDesiredReplicas()
	for _, s := range remote.GetSteps() {
		peak = max(peak, s.GetDesiredReplicas())
	}
	if first := remote.GetSteps()[0].GetDesiredReplicas(); !(peak > first && peak > last) {
		t.Errorf("desired replicas first %d, peak %d, last %d: want a rise and a fall", first, peak, last)
	}
}

func TestSimulateTable(t *testing.T) {
	trace := writeFile(t, "load.csv", "time,demand\n0,1\n15,1\n30,4\n45,4\n60,4\n")
	r := run(t, "", "simulate", "-f", hpaYAML, "--trace", trace, "--local", "--startup", "20s")
	mustOK(t, r)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 6 {
		t.Fatalf("got %d lines, want a header and 5 rows:\n%s", len(lines), r.stdout)
	}
	// 2 pods of 1 cpu at 4 cores: 200% against 60%, a scale-up at 30s (policy: at most 4 more).
	for i, want := range [][]string{
		{"TIME", "DEMAND", "CURRENT", "DESIRED", "READY", "PER POD", "UTIL", "EXPLANATION"},
		{"0s", "1", "2", "2", "2", "500m", "50%"},
		{"15s", "1", "2", "2", "2", "500m", "50%"},
		{"30s", "4", "2", "6", "2", "2", "200%", "scale up 2 -> 6"},
		{"45s", "4", "6", "6", "2"}, // the new pods are not ready yet
		{"1m0s", "4", "6", "", "6"}, // ready after 20s
	} {
		for _, w := range want {
			if w != "" && !strings.Contains(lines[i], w) {
				t.Errorf("line %d %q lacks %q", i, lines[i], w)
			}
		}
	}
}

// TestSimulateExplainsHeldStep: at 2m45s of testdata/load.csv a new pod has no sample yet;
// counted at 0 for a scale-up the usage is 66 % of 60 %, inside the tolerance band, so the count
// stays. The sentence names the missing pod and the tolerance, not just "100% of 60%".
func TestSimulateExplainsHeldStep(t *testing.T) {
	r := run(t, "", "simulate", "-f", hpaYAML, "--trace", loadCSV, "--local")
	mustOK(t, r)
	want := "no change at 3: cpu utilization 100% of 60% target (ratio 1.667); for a scale-up, " +
		"re-counting 1 pod without a sample at 0% of request gives ratio 1.100, within the tolerance 0.90–1.10, " +
		"so it proposes no change"
	for line := range strings.SplitSeq(r.stdout, "\n") {
		if strings.HasPrefix(line, "2m45s ") {
			if !strings.HasSuffix(line, want) {
				t.Errorf("2m45s row:\n %s\nwant it to end with:\n %s", line, want)
			}
			return
		}
	}
	t.Fatalf("no 2m45s row in:\n%s", r.stdout)
}

// decodePNG reads the PNG file at path.
func decodePNG(t *testing.T, path string) image.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s is not a PNG: %v", path, err)
	}
	return img
}

func TestSimulatePlot(t *testing.T) {
	dir := t.TempDir()
	pngPath, svgPath := filepath.Join(dir, "out.png"), filepath.Join(dir, "out.svg")
	small := writeFile(t, "load.csv", "time,demand\n0,1\n15,2\n30,3\n45,2500m\n60,1\n")
	mustOK(t, run(t, "", "simulate", "-f", hpaYAML, "--trace", small, "--local", "--plot", pngPath))
	img := decodePNG(t, pngPath)
	if b := img.Bounds(); b.Dx() < 400 || b.Dy() < 300 || b.Dx() > 4000 || b.Dy() > 4000 {
		t.Errorf("PNG is %dx%d, want a sensible size", b.Dx(), b.Dy())
	}

	mustOK(t, run(t, "", "simulate", "-f", hpaYAML, "--trace", small, "--local", "--plot", svgPath))
	b, err := os.ReadFile(svgPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("<?xml")) && !bytes.HasPrefix(b, []byte("<svg")) {
		t.Errorf("SVG starts with %q", b[:min(len(b), 20)])
	}
	if !bytes.Contains(b, []byte("</svg>")) {
		t.Error("SVG is not closed")
	}
}

func TestSimulateMetricKinds(t *testing.T) {
	external := writeFile(t, "hpa.yaml", `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: consumer, namespace: jobs}
spec:
  minReplicas: 1
  maxReplicas: 30
  metrics:
  - type: External
    external:
      metric: {name: queue_depth}
      target: {type: AverageValue, averageValue: 100}
  - type: Resource
    resource:
      name: memory
      target: {type: AverageValue, averageValue: 1Gi}
`)
	trace := writeFile(t, "load.csv", "time,demand\n2026-06-01T12:00:00Z,100\n2026-06-01T12:00:15Z,1000\n")
	resp := simulateJSON(t, run(t, "", "simulate", "-f", external, "--trace", trace, "--local", "-o", "json"))
	steps := resp.GetSteps()
	if got := steps[1].GetDesiredReplicas(); got != 4 {
		// 1000 / 100 per pod = 10 replicas, limited by the default scale-up rate to 4 from 1.
		t.Errorf("step 1 desired = %d, want 4", got)
	}
	if got := steps[1].GetExplanation().GetMetrics()[1].GetError(); !strings.Contains(got, "not in trace") {
		t.Errorf("second metric's error = %q, want it to say not in trace", got)
	}
}

func TestSimulateErrors(t *testing.T) {
	tests := []struct {
		name  string
		trace string
		args  []string
		want  string
	}{
		{name: "bad header", trace: "t,d\n0,1\n", want: `want time,demand`},
		{name: "bad demand", trace: "time,demand\n0,lots\n", want: `line 2: demand "lots"`},
		{name: "time goes back", trace: "time,demand\n15,1\n0,1\n", want: "line 3: time"},
		{name: "no rows", trace: "time,demand\n", want: "no rows"},
		{name: "bad plot extension", trace: "time,demand\n0,1\n", args: []string{"--plot", "out.jpg"}, want: ".png or .svg"},
		{name: "bad request flag", trace: "time,demand\n0,1\n", args: []string{"--request", "cpu"}, want: "resource=quantity"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"simulate", "-f", hpaYAML, "--trace", writeFile(t, "load.csv", tt.trace), "--local"}, tt.args...)
			r := run(t, "", args...)
			if r.code != 1 || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want 1 and %q", r.code, r.stderr, tt.want)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	r := run(t, "", "help")
	mustOK(t, r)
	if !strings.Contains(r.stdout, "hpactl simulate") {
		t.Errorf("help lacks the commands:\n%s", r.stdout)
	}
	if r := run(t, ""); r.code != 1 || !strings.Contains(r.stderr, "Usage:") {
		t.Errorf("no args: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := run(t, "", "simulate", "-h"); r.code != 0 || !strings.Contains(r.stderr, "-startup") {
		t.Errorf("simulate -h: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestManifestsLikeKubectl: a file of several documents acts on each autoscaler (other kinds
// skipped) or the one --name picks; autoscaling/v1 reads as the API server converts it; every
// mistake of a file is reported at once with its document and field path.
func TestManifestsLikeKubectl(t *testing.T) {
	addr := startServer(t)
	multi := multiHPA(t, "web", "api")

	t.Run("recommend acts on each", func(t *testing.T) {
		r := run(t, addr, "recommend", "-f", multi, "--observations", obsJSON, "--cluster", "each")
		mustOK(t, r)
		for _, want := range []string{"each/shop/web", "each/shop/api"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("output lacks %q:\n%s", want, r.stdout)
			}
		}
		if n := strings.Count(r.stdout, "Desired replicas:"); n != 2 {
			t.Errorf("%d decisions, want 2:\n%s", n, r.stdout)
		}
		r = run(t, addr, "list", "--cluster", "each", "-o", "json")
		mustOK(t, r)
		if n := strings.Count(r.stdout, `"name":`); n != 2 {
			t.Errorf("list shows %d targets, want 2:\n%s", n, r.stdout)
		}
	})
	t.Run("get and delete pick by name", func(t *testing.T) {
		r := run(t, addr, "get", "-f", multi, "--name", "api", "--cluster", "each", "-o", "json")
		mustOK(t, r)
		resp := &pb.GetTargetResponse{}
		if err := protojson.Unmarshal([]byte(r.stdout), resp); err != nil {
			t.Fatalf("one GetTargetResponse expected: %v\n%s", err, r.stdout)
		}
		if got := resp.GetTarget().GetName(); got != "api" {
			t.Errorf("got target %q, want api", got)
		}
		r = run(t, addr, "delete", "-f", multi, "--cluster", "each")
		mustOK(t, r)
		if want := "deleted each/shop/web\ndeleted each/shop/api\n"; r.stdout != want {
			t.Errorf("stdout %q, want %q", r.stdout, want)
		}
		// Both are gone: each get fails, each named.
		r = run(t, addr, "get", "-f", multi, "--cluster", "each")
		if r.code != 1 || strings.Count(r.stderr, "NotFound") != 2 || !strings.Contains(r.stderr, "hpactl: each/shop/api: NotFound") {
			t.Errorf("get after delete: exit %d, stderr %q; want 1 and a NotFound for each", r.code, r.stderr)
		}
	})
	t.Run("unknown name", func(t *testing.T) {
		r := run(t, addr, "get", "-f", multi, "--name", "nope")
		if r.code != 1 || !strings.Contains(r.stderr, `holds no HorizontalPodAutoscaler named "nope" (it holds shop/web, shop/api)`) {
			t.Errorf("exit %d, stderr %q", r.code, r.stderr)
		}
	})
	t.Run("plot needs one", func(t *testing.T) {
		r := run(t, "", "simulate", "-f", multi, "--trace", loadCSV, "--local", "--plot", filepath.Join(t.TempDir(), "x.png"))
		if r.code != 1 || !strings.Contains(r.stderr, "pick one with --name") {
			t.Errorf("exit %d, stderr %q", r.code, r.stderr)
		}
	})
	t.Run("v1 decides as its v2 conversion", func(t *testing.T) {
		v1 := writeFile(t, "v1.yaml", `apiVersion: autoscaling/v1
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: shop}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 2
  maxReplicas: 20
  targetCPUUtilizationPercentage: 60
`)
		v2 := writeFile(t, "v2.yaml", `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: shop}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 2
  maxReplicas: 20
  metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 60}}}]
`)
		got := decodeRecommend(t, run(t, "", "recommend", "-f", v1, "--observations", obsJSON, "--local", "-o", "json").stdout)
		want := decodeRecommend(t, run(t, "", "recommend", "-f", v2, "--observations", obsJSON, "--local", "-o", "json").stdout)
		if diff := cmp.Diff(got, want, protocmp.Transform()); diff != "" {
			t.Errorf("v1 (-got) and v2 (+want) decide differently:\n%s", diff)
		}
		if got.GetDesiredReplicas() != 5 {
			t.Errorf("desired %d, want 5", got.GetDesiredReplicas())
		}
	})
	t.Run("every problem at once", func(t *testing.T) {
		bad := writeFile(t, "bad.yaml", `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: shop}
spec:
  maxReplica: 3
  metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilisation: 60}}}]
---
apiVersion: autoscaling/v1
kind: HorizontalPodAutoscaler
metadata: {name: api, namespace: shop}
spec: {maxReplicas: 3, targetCPUUtilization: 50}
`)
		r := run(t, "", "recommend", "-f", bad, "--observations", obsJSON, "--local")
		want := "hpactl: parse manifest " + bad + ": 3 problems:\n" +
			"  document 0 (HorizontalPodAutoscaler shop/web): spec.maxReplica: unknown field\n" +
			"  document 0 (HorizontalPodAutoscaler shop/web): spec.metrics[0].resource.target.averageUtilisation: unknown field\n" +
			"  document 1 (HorizontalPodAutoscaler shop/api): spec.targetCPUUtilization: unknown field\n"
		if r.code != 1 || r.stderr != want {
			t.Errorf("exit %d, stderr:\n%s\nwant 1 and:\n%s", r.code, r.stderr, want)
		}
	})
}

// TestFlagHelp: every command's flag help names each flag's type (a switch has none) and
// states one default at most; --version prints the App's version.
func TestFlagHelp(t *testing.T) {
	for _, cmd := range []string{"recommend", "simulate", "get", "list", "delete"} {
		t.Run(cmd, func(t *testing.T) {
			r := run(t, "", cmd, "-h")
			mustOK(t, r)
			// Flags are "  -name type" lines, each followed by its indented usage.
			for _, block := range strings.Split(r.stderr, "\n  -")[1:] {
				f := strings.Fields(block)
				if len(f) > 1 && f[1] == "value" {
					t.Errorf("-%s names no type: %q", f[0], block)
				}
				if n := strings.Count(block, "(default"); n > 1 {
					t.Errorf("-%s states %d defaults: %q", f[0], n, block)
				}
			}
		})
	}
	var stdout bytes.Buffer
	app := &hpactl.App{Stdout: &stdout, Stderr: &stdout, Version: "hpactl v1.2.3 (revision abc; go1.26.8)"}
	if code := app.Run(t.Context(), []string{"--version"}); code != 0 || stdout.String() != app.Version+"\n" {
		t.Errorf("--version: exit %d, output %q", code, stdout.String())
	}
}
