package scaler

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"k8s.io/client-go/kubernetes/fake"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
	"github.com/hpa-recommender/hpa-recommender/server"
	"github.com/hpa-recommender/hpa-recommender/store/memstore"
)

// TestLeaderElectionOneActs runs two scalers against one Lease: only the leader syncs; when
// it stops, the other takes over.
func TestLeaderElectionOneActs(t *testing.T) {
	w := newWorld(t, nil)
	dir := t.TempDir()
	writeFile(t, dir, "hpa.yaml", webHPA)
	leases := fake.NewClientset()
	type replica struct {
		s      *Scaler
		rec    *recording
		cancel context.CancelFunc
		done   chan struct{}
	}
	start := func(id string) *replica {
		rec := &recording{Recommender: w.svc.client}
		s := newScaler(t, w.c.kube, rec, w.clk, func(c *Config) {
			c.ManifestsDir = dir
			c.HTTPListen = ""
			c.SyncPeriod = 50 * time.Millisecond
			c.Identity = id
			c.LeaderElectionNamespace = "kube-system"
			c.LeaseDuration, c.RenewDeadline, c.RetryPeriod = time.Second, 500*time.Millisecond, 100*time.Millisecond
		})
		ctx, cancel := context.WithCancel(context.Background())
		r := &replica{s: s, rec: rec, cancel: cancel, done: make(chan struct{})}
		go func() {
			defer close(r.done)
			if err := s.Run(ctx, RunDeps{LeaseClient: leases}); err != nil {
				t.Errorf("%s: Run: %v", id, err)
			}
		}()
		t.Cleanup(func() { cancel(); <-r.done })
		return r
	}
	calls := func(r *replica) int {
		r.rec.mu.Lock()
		defer r.rec.mu.Unlock()
		return len(r.rec.requests)
	}
	a, b := start("a"), start("b")
	deadline := time.Now().Add(20 * time.Second)
	for calls(a)+calls(b) < 5 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	leader, other := a, b
	if calls(b) > 0 {
		leader, other = b, a
	}
	if calls(leader) < 5 || calls(other) != 0 {
		t.Fatalf("Recommend calls: a=%d b=%d; want one replica acting", calls(a), calls(b))
	}
	if len(w.c.writes) != 1 {
		t.Errorf("writes = %v, want the one scale-up", w.c.writes)
	}
	// The leader stops (releasing the Lease); the other takes over.
	leader.cancel()
	<-leader.done
	n := calls(leader)
	deadline = time.Now().Add(20 * time.Second)
	for calls(other) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if calls(other) == 0 {
		t.Fatal("the other replica never took over")
	}
	if calls(leader) != n {
		t.Errorf("the stopped leader kept syncing")
	}
}

func TestHandler(t *testing.T) {
	w := newWorld(t, nil)
	ready := false
	srv := httptest.NewServer(w.s.Handler(func() bool { return ready }))
	defer srv.Close()
	get := func(path string) (int, string) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		buf := make([]byte, 1<<16)
		for {
			n, err := resp.Body.Read(buf)
			b.Write(buf[:n])
			if err != nil {
				break
			}
		}
		return resp.StatusCode, b.String()
	}
	if code, _ := get("/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz before the caches sync = %d, want 503", code)
	}
	ready = true
	if code, _ := get("/readyz"); code != http.StatusOK {
		t.Errorf("/readyz = %d, want 200", code)
	}
	if code, _ := get("/healthz"); code != http.StatusOK {
		t.Errorf("/healthz = %d, want 200", code)
	}
	if err := w.sync(t); err != nil {
		t.Fatal(err)
	}
	_, body := get("/metrics")
	for _, want := range []string{
		`hpa_scaler_scale_writes_total{mode="service",result="success"} 1`,
		`hpa_scaler_desired_replicas{autoscaler="web-hpa",mode="service",namespace="shop"} 4`,
		`hpa_scaler_syncs_total{result="ok"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

func TestConfigFlagsAndEnv(t *testing.T) {
	cfg := DefaultConfig()
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	cfg.RegisterFlags(fs)
	if err := fs.Parse([]string{"--cluster", "flag", "--manifests-dir", "/m", "--tolerance", "0"}); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"HPA_SCALER_CLUSTER":        "env",
		"HPA_SCALER_SYNC_PERIOD":    "30s",
		"HPA_SCALER_DRY_RUN":        "true",
		"HPA_SCALER_FALLBACK_AFTER": "2m",
	}
	if err := ApplyEnv(fs, func(k string) (string, bool) { v, ok := env[k]; return v, ok }); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	got := []any{cfg.Cluster, cfg.SyncPeriod, cfg.DryRun, cfg.FallbackAfter, *cfg.Options.Tolerance, cfg.Options.CPUInitializationPeriod == nil}
	want := []any{"flag", 30 * time.Second, true, 2 * time.Minute, 0.0, true}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("config (-got +want):\n%s", diff)
	}
}

func TestConfigValidate(t *testing.T) {
	base := func() Config {
		c := DefaultConfig()
		c.Cluster, c.ManifestsDir = "c1", "/m"
		return c
	}
	for _, tc := range []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"ok", func(*Config) {}, ""},
		{"no cluster", func(c *Config) { c.Cluster = "" }, "--cluster is required"},
		{"plaintext remote", func(c *Config) { c.ServiceAddr = "recommender.example:443" }, "not a loopback address"},
		{"insecure remote", func(c *Config) { c.ServiceAddr = "recommender.example:443"; c.Insecure = true }, ""},
		{"token over plaintext", func(c *Config) { c.ServiceAddr = "recommender.example:443"; c.Insecure = true; c.TokenFile = "/t" }, "needs TLS"},
		{"tls remote", func(c *Config) { c.ServiceAddr = "recommender.example:443"; c.TLSCA = "/ca"; c.TokenFile = "/t" }, ""},
		{"cert without key", func(c *Config) { c.TLSCert = "/c" }, "go together"},
		{"lease timings", func(c *Config) { c.RenewDeadline = c.LeaseDuration }, "--lease-duration > --renew-deadline"},
		{"workers", func(c *Config) { c.Workers = 0 }, "--workers"},
		{"jitter", func(c *Config) { c.SyncJitter = 1 }, "--sync-jitter"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base()
			tc.mutate(&c)
			err := c.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Validate = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("Validate = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestRunReloadsManifests(t *testing.T) {
	w := newWorld(t, nil)
	dir := t.TempDir()
	writeFile(t, dir, "hpa.yaml", webHPA)
	s := newScaler(t, w.c.kube, w.rec, w.clk, func(c *Config) {
		c.ManifestsDir = dir
		c.ManifestsReload = 20 * time.Millisecond
		c.LeaderElect = false
		c.HTTPListen = ""
		c.SyncPeriod = time.Hour
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, RunDeps{}) }()
	defer func() { cancel(); <-done }()
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	has := func(key string) bool { _, ok := s.Autoscaler(key); return ok }
	waitFor("the initial manifests", func() bool { return has("shop/web-hpa") })
	writeFile(t, dir, "more.yaml", strings.Replace(webHPA, "name: web-hpa", "name: api-hpa", 1))
	waitFor("a new manifest", func() bool { return has("shop/api-hpa") })
	if err := os.Remove(filepath.Join(dir, "hpa.yaml")); err != nil {
		t.Fatal(err)
	}
	waitFor("a removed manifest", func() bool { return !has("shop/web-hpa") })
	if n := testutil.ToFloat64(s.tel.autoscalers); n != 1 {
		t.Errorf("autoscalers gauge = %v, want 1", n)
	}
}

// concurrency wraps a Recommender and records the most calls in flight at once.
type concurrency struct {
	Recommender
	mu           sync.Mutex
	now, maximum int
	perTarget    map[string]int
}

func (c *concurrency) Recommend(ctx context.Context, req *pb.RecommendRequest, opts ...grpc.CallOption) (*pb.RecommendResponse, error) {
	c.mu.Lock()
	c.now++
	c.maximum = max(c.maximum, c.now)
	c.perTarget[req.GetTarget().GetName()]++
	c.mu.Unlock()
	defer func() { c.mu.Lock(); c.now--; c.mu.Unlock() }()
	return c.Recommender.Recommend(ctx, req, opts...)
}

// TestSyncLoopManyTargets syncs 300 targets with 4 workers: every target is synced again and
// again, never more often than its period allows, and never more than Workers at once.
func TestSyncLoopManyTargets(t *testing.T) {
	const n, workers = 300, 4
	clk := newClock()
	c := newCluster()
	svc := startService(t, memstore.New(), clk, "127.0.0.1:0")
	rec := &concurrency{Recommender: svc.client, perTarget: map[string]int{}}
	var manifests []string
	for i := range n {
		name := fmt.Sprintf("web%d", i)
		c.addDeployment("shop", name, 2, "app="+name)
		c.addPods("shop", name, 2, "250m")
		m := strings.ReplaceAll(webHPA, "name: web-hpa", "name: "+name)
		manifests = append(manifests, strings.ReplaceAll(m, "name: web}", "name: "+name+"}"))
	}
	s := newScaler(t, c.kube, rec, clk, func(cfg *Config) {
		cfg.Workers = workers
		cfg.SyncPeriod = 500 * time.Millisecond
	}, manifests...)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	start := time.Now()
	go func() { defer close(done); s.syncLoop(ctx) }()
	allTwice := func() bool {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		if len(rec.perTarget) < n {
			return false
		}
		for _, k := range rec.perTarget {
			if k < 2 {
				return false
			}
		}
		return true
	}
	for deadline := time.Now().Add(60 * time.Second); !allTwice() && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	<-done // the loop returns after its workers
	elapsed := time.Since(start)
	if !allTwice() {
		t.Fatal("not every target was synced twice within a minute")
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	// No pile-up: a target is never queued again while queued or in flight, and comes due at
	// most once per period less its jitter.
	most := int(elapsed/(time.Duration(float64(500*time.Millisecond)*0.9))) + 2
	for name, k := range rec.perTarget {
		if k > most {
			t.Errorf("%s synced %d times in %v, want at most %d", name, k, elapsed, most)
			break
		}
	}
	if rec.maximum > workers {
		t.Errorf("%d Recommend calls at once, want at most %d workers", rec.maximum, workers)
	}
	if len(c.writes) != 0 {
		t.Errorf("writes = %v at target load", c.writes)
	}
}

// answers counts, per target, the Recommends the service answered and those it refused.
type answers struct {
	Recommender
	mu                sync.Mutex
	answered, refused map[string]int
}

func (a *answers) Recommend(ctx context.Context, req *pb.RecommendRequest, opts ...grpc.CallOption) (*pb.RecommendResponse, error) {
	resp, err := a.Recommender.Recommend(ctx, req, opts...)
	a.mu.Lock()
	defer a.mu.Unlock()
	if err != nil {
		a.refused[req.GetTarget().GetName()]++
	} else {
		a.answered[req.GetTarget().GetName()]++
	}
	return resp, err
}

// TestRefusalRetriedWhenAsked: two autoscalers come due within a fraction of a second of each
// other, on a service that admits one decision per 2 s for their cluster. The second is refused
// with a RetryInfo of about 2 s and synced again then, not a whole 20 s period later.
func TestRefusalRetriedWhenAsked(t *testing.T) {
	// Two names whose first syncs fall in the first 2 s of a 20 s period, within 0.4 s of each
	// other.
	var names []string
	for i := 0; len(names) < 2 && i < 100000; i++ {
		n := fmt.Sprintf("web%d", i)
		sp := spread("shop/" + n)
		if (len(names) == 0 && sp < 0.1) || (len(names) == 1 && math.Abs(sp-spread("shop/"+names[0])) < 0.02) {
			names = append(names, n)
		}
	}
	if len(names) < 2 {
		t.Fatalf("no two names found: %v", names)
	}
	clk := newClock()
	c := newCluster()
	svc := startServiceWith(t, memstore.New(), clk, "127.0.0.1:0", func(cfg *server.Config) { cfg.RateLimit, cfg.RateBurst = 0.5, 1 })
	rec := &answers{Recommender: svc.client, answered: map[string]int{}, refused: map[string]int{}}
	var manifests []string
	for _, name := range names {
		c.addDeployment("shop", name, 2, "app="+name)
		c.addPods("shop", name, 2, "250m")
		m := strings.ReplaceAll(webHPA, "name: web-hpa", "name: "+name)
		manifests = append(manifests, strings.ReplaceAll(m, "name: web}", "name: "+name+"}"))
	}
	s := newScaler(t, c.kube, rec, clk, func(cfg *Config) {
		cfg.Workers = 2
		cfg.SyncPeriod = 20 * time.Second
	}, manifests...)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); s.syncLoop(ctx) }()
	defer func() { cancel(); <-done }()
	both := func() (bool, map[string]int, map[string]int) {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		return rec.answered[names[0]] > 0 && rec.answered[names[1]] > 0, maps.Clone(rec.answered), maps.Clone(rec.refused)
	}
	// Both first syncs come due within 2 s; the refused one is answered ~2 s later, where
	// without the retry it would wait for its next sync, 20 s on.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		ok, answered, refused := both()
		if ok {
			if len(refused) == 0 {
				t.Fatalf("answered %v and nothing refused: the test did not provoke a refusal", answered)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 10 s answered %v, refused %v: the refused autoscaler was not synced again when the refusal asked", answered, refused)
		}
	}
}

// TestRetryAfter: the delay of a ResourceExhausted's RetryInfo, wrapped or not, at least
// minRetryAfter; nothing for another code or without a RetryInfo.
func TestRetryAfter(t *testing.T) {
	withDelay := func(c codes.Code, d time.Duration) error {
		st, err := status.New(c, "refused").WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(d)})
		if err != nil {
			t.Fatal(err)
		}
		return st.Err()
	}
	for _, tc := range []struct {
		err  error
		want time.Duration
		ok   bool
	}{
		{withDelay(codes.ResourceExhausted, 3*time.Second), 3 * time.Second, true},
		{fmt.Errorf("recommend: %w", withDelay(codes.ResourceExhausted, time.Second)), time.Second, true},
		{withDelay(codes.ResourceExhausted, 0), minRetryAfter, true},
		{withDelay(codes.Unavailable, time.Second), 0, false},
		{status.Error(codes.ResourceExhausted, "no RetryInfo"), 0, false},
	} {
		if got, ok := retryAfter(tc.err); got != tc.want || ok != tc.ok {
			t.Errorf("retryAfter(%v) = %v, %v; want %v, %v", tc.err, got, ok, tc.want, tc.ok)
		}
	}
}
