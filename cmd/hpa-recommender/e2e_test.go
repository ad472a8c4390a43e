package main_test

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"google.golang.org/grpc/mem"

	"github.com/hpa-recommender/hpa-recommender/internal/syncbuf"
	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

// binary is the hpa-recommender built once for these tests.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "hpa-recommender-e2e")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "hpa-recommender")
	out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build hpa-recommender: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	stopSharedEtcd()
	os.RemoveAll(dir)
	os.Exit(code)
}

type process struct {
	cmd     *exec.Cmd
	addr    string // the gRPC listener's address, as the binary logged it
	metrics string // the metrics listener's address, as logged ("" when off)
	stderr  *syncBuffer
	exited  chan struct{} // closed once the binary has exited and waitErr is set
	waitErr error
}

// syncBuffer collects a child's output while the test reads it.
type syncBuffer = syncbuf.Buffer

// startBinary runs the real binary on a port the kernel picks (--listen 127.0.0.1:0, and no
// metrics listener unless args has one; pass "--metrics-listen", "127.0.0.1:0" for one) and
// waits until its health check says SERVING. The addresses it bound are read back from its
// log, so no port is chosen before the binary binds it.
func startBinary(t *testing.T, args ...string) *process {
	t.Helper()
	return startBinaryAt(t, "127.0.0.1:0", args...)
}

// servingLine is the binary's log line once it listens, with the addresses it bound.
var servingLine = regexp.MustCompile(`msg=serving listen=(\S+) metrics=(\S+)`)

// startBinaryAt is startBinary on a given address.
func startBinaryAt(t *testing.T, addr string, args ...string) *process {
	t.Helper()
	args = append([]string{"--listen", addr, "--metrics-listen", ""}, args...)
	cmd := exec.Command(binary, args...)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: cmd, stderr: &stderr, exited: make(chan struct{})}
	go func() { p.waitErr = cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.exited
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		if m := servingLine.FindStringSubmatch(stderr.String()); m != nil {
			p.addr = m[1]
			if p.metrics = m[2]; p.metrics == `""` {
				p.metrics = ""
			}
			break
		}
		select {
		case <-p.exited:
			t.Fatalf("the binary exited before serving: %v\n%s", p.waitErr, stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %q line in the log within 20s:\n%s", "msg=serving", stderr.String())
		}
	}
	hc := healthpb.NewHealthClient(dial(t, p.addr))
	for {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		resp, err := hc.Check(ctx, &healthpb.HealthCheckRequest{})
		cancel()
		if err == nil && resp.Status == healthpb.HealthCheckResponse_SERVING {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("server never became healthy: %v\n%s", err, stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (p *process) kill9(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.exited
}

func (p *process) term(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-p.exited
	if p.waitErr != nil {
		t.Errorf("exit after SIGTERM: %v\n%s", p.waitErr, p.stderr.String())
	}
}

func dial(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

const specJSON = `{
  "minReplicas": 1, "maxReplicas": 30,
  "metrics": [{"type": "External", "external": {"metric": {"name": "queue"}, "target": {"type": "AverageValue", "averageValue": "10"}}}],
  "behavior": {"scaleDown": {"stabilizationWindowSeconds": 2}, "scaleUp": {"policies": [{"type": "Pods", "value": 3, "periodSeconds": 2}]}}
}`

var target = &pb.TargetRef{Cluster: "c1", Namespace: "shop", Name: "web"}

func request(t *testing.T, current int32, value string) *pb.RecommendRequest {
	t.Helper()
	spec := &pb.HorizontalPodAutoscalerSpec{}
	if err := protojson.Unmarshal([]byte(specJSON), spec); err != nil {
		t.Fatal(err)
	}
	return &pb.RecommendRequest{Target: target, Spec: spec, CurrentReplicas: current,
		Metrics: []*pb.MetricObservation{{Values: []string{value}}}}
}

// TestKill9RestartContinuesAsIfUninterrupted drives a timeline through the real binary with a
// kill -9 and a restart in the middle, then replays the same observations at the same decision
// times through Simulate: every decision must match, and GetTarget must show the history.
func TestKill9RestartContinuesAsIfUninterrupted(t *testing.T) {
	db := filepath.Join(t.TempDir(), "hpa.db")
	p := startBinary(t, "--store", "bolt", "--bolt-path", db)
	client := pb.NewRecommenderServiceClient(dial(t, p.addr))
	values := []string{"50", "200", "200", "260", "260", "40", "40", "40", "10", "10", "10", "10"}
	var got []int32
	var steps []*pb.SimulateStep
	current := int32(2)
	var beforeKill *pb.GetTargetResponse
	for i, v := range values {
		if i == len(values)/2 {
			var err error
			beforeKill, err = client.GetTarget(t.Context(), &pb.GetTargetRequest{Target: target})
			if err != nil {
				t.Fatal(err)
			}
			p.kill9(t)
			p = startBinary(t, "--store", "bolt", "--bolt-path", db)
			client = pb.NewRecommenderServiceClient(dial(t, p.addr))
			after, err := client.GetTarget(t.Context(), &pb.GetTargetRequest{Target: target})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(beforeKill, after, protocmp.Transform()); diff != "" {
				t.Fatalf("stored target changed across kill -9 (-before +after):\n%s", diff)
			}
		}
		resp, err := client.Recommend(t.Context(), request(t, current, v))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Scale {
			if _, err := client.ReportScale(t.Context(), &pb.ReportScaleRequest{Target: target, RecommendationId: resp.RecommendationId, Succeeded: true}); err != nil {
				t.Fatal(err)
			}
			current = resp.DesiredReplicas
		}
		got = append(got, resp.DesiredReplicas)
		steps = append(steps, &pb.SimulateStep{Time: resp.DecisionTime, Metrics: request(t, 0, v).Metrics})
		time.Sleep(700 * time.Millisecond)
	}
	if len(beforeKill.GetHistory().GetRecommendations()) == 0 || len(beforeKill.GetHistory().GetScaleUpEvents()) == 0 {
		t.Fatalf("history before the kill is too thin to prove anything: %v", beforeKill.GetHistory())
	}
	sim, err := client.Simulate(t.Context(), &pb.SimulateRequest{Spec: request(t, 0, "0").Spec, InitialReplicas: 2, Steps: steps})
	if err != nil {
		t.Fatal(err)
	}
	var want []int32
	for _, s := range sim.Steps {
		want = append(want, s.DesiredReplicas)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("decisions across kill -9 differ from an uninterrupted replay (-replay +live):\n%s", diff)
	}
	p.term(t)
}

// TestMalformedRequestsNeverCrashOrTouchData sends fuzzed requests: every one is answered
// (InvalidArgument when it is invalid), the process stays up, and the stored target is intact.
func TestMalformedRequestsNeverCrashOrTouchData(t *testing.T) {
	db := filepath.Join(t.TempDir(), "hpa.db")
	p := startBinary(t, "--store", "bolt", "--bolt-path", db, "--max-pods", "50")
	conn := dial(t, p.addr)
	client := pb.NewRecommenderServiceClient(conn)
	good := request(t, 2, "50")
	if _, err := client.Recommend(t.Context(), good); err != nil {
		t.Fatal(err)
	}
	before, err := client.GetTarget(t.Context(), &pb.GetTargetRequest{Target: target})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	invalid := 0
	for i := 0; i < 300; i++ {
		req := proto.Clone(good).(*pb.RecommendRequest)
		mutate(rng, req)
		_, err := client.Recommend(t.Context(), req)
		switch status.Code(err) {
		case codes.OK:
			// A valid request is a legitimate write: compare from here on.
			if before, err = client.GetTarget(t.Context(), &pb.GetTargetRequest{Target: target}); err != nil {
				t.Fatal(err)
			}
		case codes.InvalidArgument:
			invalid++
			now, err := client.GetTarget(t.Context(), &pb.GetTargetRequest{Target: target})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(before, now, protocmp.Transform()); diff != "" {
				t.Fatalf("invalid request %d changed the stored target (-before +after):\n%s", i, diff)
			}
		default:
			t.Fatalf("request %d: %v (want OK or InvalidArgument)\n%s", i, err, protojson.Format(req))
		}
	}
	if invalid < 100 {
		t.Fatalf("only %d of 300 mutations were invalid; the fuzzing proves little", invalid)
	}
	// Raw garbage on the wire: InvalidArgument naming the message, and the server lives on.
	var out pb.RecommendResponse
	err = conn.Invoke(t.Context(), "/recommender.v1.RecommenderService/Recommend", rawBytes([]byte{0xff, 0xff, 0xff, 0x01}), &out, grpc.ForceCodecV2(rawCodec{}))
	if st := status.Convert(err); st.Code() != codes.InvalidArgument || !strings.Contains(st.Message(), "recommender.v1.RecommendRequest") {
		t.Fatalf("garbage bytes: %v, want InvalidArgument naming recommender.v1.RecommendRequest", err)
	}
	after, err := client.GetTarget(t.Context(), &pb.GetTargetRequest{Target: target})
	if err != nil {
		t.Fatalf("server gone after fuzzing: %v\n%s", err, p.stderr.String())
	}
	if diff := cmp.Diff(before, after, protocmp.Transform()); diff != "" {
		t.Errorf("invalid requests changed the stored target (-before +after):\n%s", diff)
	}
	if strings.Contains(p.stderr.String(), "panic") {
		t.Errorf("server logged a panic:\n%s", p.stderr.String())
	}
	p.term(t)
}

// mutate damages one or two fields of a valid request, the way a buggy caller would.
func mutate(rng *rand.Rand, r *pb.RecommendRequest) {
	quantities := []string{"", "-1", "1e400", "abc", "1Zi", "0", "9223372036854775807", "0.0001m", "1.5Gi", "NaN"}
	for n := 1 + rng.IntN(2); n > 0; n-- {
		switch rng.IntN(12) {
		case 0:
			r.CurrentReplicas = rng.Int32N(100) - 50
		case 1:
			r.Spec.MaxReplicas = rng.Int32N(10) - 5
		case 2:
			r.Spec.MinReplicas = proto.Int32(rng.Int32N(10) - 5)
		case 3:
			r.Metrics[0].Values = []string{quantities[rng.IntN(len(quantities))]}
		case 4:
			r.Spec.Metrics[0].External.Target.AverageValue = proto.String(quantities[rng.IntN(len(quantities))])
		case 5:
			r.Spec.Metrics[0].Type = []string{"", "Bogus", "Pods", "Resource"}[rng.IntN(4)]
		case 6:
			r.Metrics = append(r.Metrics, &pb.MetricObservation{})
		case 7:
			r.Spec.Behavior.ScaleUp.Policies[0].PeriodSeconds = rng.Int32N(4000) - 100
		case 8:
			r.Spec.Behavior.ScaleDown.StabilizationWindowSeconds = proto.Int32(rng.Int32N(8000) - 100)
		case 9:
			r.Spec.Behavior.ScaleUp.SelectPolicy = proto.String([]string{"Max", "Min", "Disabled", "max", ""}[rng.IntN(5)])
		case 10:
			for i := 0; i < 60; i++ {
				r.Pods = append(r.Pods, &pb.PodState{Name: fmt.Sprintf("p-%d", i%55), Phase: "Running"})
			}
		case 11:
			r.Spec.Behavior.ScaleDown.Tolerance = proto.String(quantities[rng.IntN(len(quantities))])
		}
	}
}

type rawBytes []byte

type rawCodec struct{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(v.(rawBytes))}, nil
}
func (rawCodec) Unmarshal(mem.BufferSlice, any) error { return nil }
func (rawCodec) Name() string                         { return "proto" }

func TestOversizedRequestIsRefusedByTheBinary(t *testing.T) {
	p := startBinary(t, "--store", "memory", "--max-request-bytes", "2048")
	client := pb.NewRecommenderServiceClient(dial(t, p.addr))
	req := request(t, 2, "50")
	for i := 0; i < 200; i++ {
		req.Pods = append(req.Pods, &pb.PodState{Name: fmt.Sprintf("pod-%d", i), Phase: "Running"})
	}
	_, err := client.Recommend(t.Context(), req)
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("got %v, want ResourceExhausted", err)
	}
	if !strings.Contains(status.Convert(err).Message(), "2048") {
		t.Errorf("message %q does not state the limit", status.Convert(err).Message())
	}
	p.term(t)
}

func TestBadFlagsExitWithAClearError(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  []string
		want string
	}{
		{"unknown store", []string{"--store", "postgres"}, nil, "--store must be bolt, memory or etcd"},
		{"env value", nil, []string{"HPA_RECOMMENDER_MAX_PODS=-3"}, "--max-pods must be positive"},
		{"retired flag, not an integer", []string{"--bolt-log-targets", "many"}, nil, `invalid value "many" for flag -bolt-log-targets`},
		{"retired flag, bad value", nil, []string{"HPA_RECOMMENDER_CACHED_SPECS=lots"}, "HPA_RECOMMENDER_CACHED_SPECS"},
		{"bad env syntax", nil, []string{"HPA_RECOMMENDER_TARGET_TTL=soon"}, "HPA_RECOMMENDER_TARGET_TTL"},
		{"half TLS", []string{"--tls-cert", "x.pem"}, nil, "--tls-cert and --tls-key go together"},
		{"pprof without metrics", []string{"--pprof", "--metrics-listen", ""}, nil, "--pprof needs --metrics-listen"},
		{"half etcd TLS", []string{"--store", "etcd", "--etcd-endpoints", "https://127.0.0.1:2379", "--etcd-key", "k.pem"}, nil, "--etcd-cert and --etcd-key go together"},
		{"negative etcd compaction interval", []string{"--store", "etcd", "--etcd-endpoints", "http://127.0.0.1:2379", "--etcd-compaction-interval", "-1s"}, nil, "--etcd-compaction-interval -1s must not be negative (0: never)"},
		{"etcd TLS without etcd", []string{"--etcd-ca", "ca.pem"}, nil, "--etcd-ca, --etcd-cert and --etcd-key need --store=etcd"},
		{"etcd TLS to a plaintext endpoint", []string{"--store", "etcd", "--etcd-endpoints", "http://127.0.0.1:2379", "--etcd-ca", "ca.pem"}, nil, "http://127.0.0.1:2379 is plaintext"},
		{"missing etcd CA file", []string{"--store", "etcd", "--etcd-endpoints", "https://127.0.0.1:2379", "--etcd-ca", "/nonexistent/ca.pem"}, nil, "read CA file: open /nonexistent/ca.pem"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(binary, tc.args...)
			cmd.Env = append(os.Environ(), tc.env...)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("exit 0, want an error; output:\n%s", out)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Errorf("output %q does not contain %q", out, tc.want)
			}
		})
	}
}

func TestFlagWinsOverEnvironment(t *testing.T) {
	t.Setenv("HPA_RECOMMENDER_LISTEN", "127.0.0.1:1")
	t.Setenv("HPA_RECOMMENDER_STORE", "bolt")
	p := startBinary(t, "--store", "memory")
	if host, port, err := net.SplitHostPort(p.addr); err != nil || host != "127.0.0.1" || port == "1" {
		t.Errorf("listening on %s, want the flag's 127.0.0.1:0 (a port the kernel picked), not the environment's 127.0.0.1:1", p.addr)
	}
	if !strings.Contains(p.stderr.String(), "store=memory") {
		t.Errorf("log does not show the flag's store:\n%s", p.stderr.String())
	}
}

// TestPprofOnlyWhenAsked: /debug/pprof/ is served next to /metrics with --pprof, and not without.
func TestPprofOnlyWhenAsked(t *testing.T) {
	for _, pprof := range []bool{true, false} {
		t.Run(fmt.Sprintf("pprof=%v", pprof), func(t *testing.T) {
			args := []string{"--store", "memory", "--metrics-listen", "127.0.0.1:0"}
			if pprof {
				args = append(args, "--pprof")
			}
			maddr := startBinary(t, args...).metrics
			status := func(path string) int {
				resp, err := http.Get("http://" + maddr + path)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				_, _ = io.Copy(io.Discard, resp.Body)
				return resp.StatusCode
			}
			if got := status("/metrics"); got != http.StatusOK {
				t.Errorf("/metrics: %d", got)
			}
			want := http.StatusNotFound
			if pprof {
				want = http.StatusOK
			}
			for _, path := range []string{"/debug/pprof/", "/debug/pprof/goroutine?debug=1"} {
				if got := status(path); got != want {
					t.Errorf("%s: %d, want %d", path, got, want)
				}
			}
		})
	}
}

// runtimeMetric returns the value of an unlabelled metric on the binary's /metrics at maddr.
func runtimeMetric(t *testing.T, maddr, name string) string {
	t.Helper()
	resp, err := http.Get("http://" + maddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(body)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+" "); ok {
			return v
		}
	}
	t.Fatalf("/metrics lacks %s", name)
	return ""
}

// TestStoreMetrics: with the bbolt store the binary exports its commits on /metrics: the
// write transactions, the writes they carried and the time spent writing and syncing the file;
// the memory store exports none of it, only whether the store answers.
func TestStoreMetrics(t *testing.T) {
	db := filepath.Join(t.TempDir(), "hpa.db")
	metric := func(maddr, name string) float64 {
		t.Helper()
		n, err := strconv.ParseFloat(runtimeMetric(t, maddr, name), 64)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	const targets, rounds = 3, 4
	p := startBinary(t, "--store", "bolt", "--bolt-path", db, "--metrics-listen", "127.0.0.1:0")
	maddr := p.metrics
	cl := pb.NewRecommenderServiceClient(dial(t, p.addr))
	for r := range rounds {
		for i := range targets {
			req := request(t, 2, "20")
			req.Target = &pb.TargetRef{Cluster: "c1", Namespace: "shop", Name: fmt.Sprintf("web-%d", i)}
			if _, err := cl.Recommend(t.Context(), req); err != nil {
				t.Fatalf("round %d, target %d: %v", r, i, err)
			}
		}
	}
	if got := metric(maddr, "hpa_recommender_store_commit_writes_total"); got != targets*rounds {
		t.Errorf("hpa_recommender_store_commit_writes_total = %v, want %d", got, targets*rounds)
	}
	if got := metric(maddr, "hpa_recommender_store_commits_total"); got < 1 || got > targets*rounds {
		t.Errorf("hpa_recommender_store_commits_total = %v, want 1 to %d", got, targets*rounds)
	}
	if got := metric(maddr, "hpa_recommender_store_write_seconds_total"); got <= 0 {
		t.Errorf("hpa_recommender_store_write_seconds_total = %v, want a positive time", got)
	}
	p.term(t)

	maddr = startBinary(t, "--store", "memory", "--metrics-listen", "127.0.0.1:0").metrics
	resp, err := http.Get("http://" + maddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, name := range []string{"hpa_recommender_store_commit", "hpa_recommender_store_write_seconds", "hpa_recommender_store_compact"} {
		if strings.Contains(string(body), name) {
			t.Errorf("the memory store exports %s metrics", name)
		}
	}
	// Whether the store answers, and the calls its errors failed, every store has.
	if !strings.Contains(string(body), "hpa_recommender_store_up 1") {
		t.Error("the memory store's binary does not export hpa_recommender_store_up 1 once serving")
	}
}

// TestCollectorTarget: the binary runs its collector at GOGC=400 unless the GOGC environment
// variable says otherwise (main.go's defaultGCPercent), as its metrics show.
func TestCollectorTarget(t *testing.T) {
	for _, tc := range []struct{ env, want string }{{"", "400"}, {"150", "150"}} {
		t.Run("GOGC="+tc.env, func(t *testing.T) {
			t.Setenv("GOGC", tc.env)
			p := startBinary(t, "--store", "memory", "--metrics-listen", "127.0.0.1:0")
			if got := runtimeMetric(t, p.metrics, "go_gc_gogc_percent"); got != tc.want {
				t.Errorf("go_gc_gogc_percent = %s, want %s", got, tc.want)
			}
		})
	}
}
