package goclient_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/hpa-recommender/hpa-recommender/clients/goclient"
	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

// recorder is a real gRPC server whose unary interceptor records every call (method, the
// authorization header, the deadline) and fails the first failures calls of each method with
// the code fail.
type recorder struct {
	pb.UnimplementedRecommenderServiceServer

	mu       sync.Mutex
	calls    map[string]int
	auth     []string
	deadline []time.Duration // remaining time at arrival; -1 when none
	failures int
	fail     codes.Code
	delay    time.Duration
}

func (r *recorder) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	r.mu.Lock()
	r.calls[info.FullMethod]++
	n := r.calls[info.FullMethod]
	r.auth = append(r.auth, md.Get("authorization")...)
	remaining := time.Duration(-1)
	if dl, ok := ctx.Deadline(); ok {
		remaining = time.Until(dl)
	}
	r.deadline = append(r.deadline, remaining)
	failures, code, delay := r.failures, r.fail, r.delay
	r.mu.Unlock()
	if n <= failures {
		return nil, status.Error(code, "injected failure")
	}
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return nil, status.FromContextError(ctx.Err()).Err()
		}
	}
	return handler(ctx, req)
}

func (r *recorder) count(method string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls["/recommender.v1.RecommenderService/"+method]
}

func (r *recorder) Recommend(_ context.Context, req *pb.RecommendRequest) (*pb.RecommendResponse, error) {
	return &pb.RecommendResponse{CurrentReplicas: req.GetCurrentReplicas(), DesiredReplicas: req.GetCurrentReplicas()}, nil
}
func (r *recorder) GetTarget(_ context.Context, req *pb.GetTargetRequest) (*pb.GetTargetResponse, error) {
	return &pb.GetTargetResponse{Target: req.GetTarget()}, nil
}
func (r *recorder) ListTargets(context.Context, *pb.ListTargetsRequest) (*pb.ListTargetsResponse, error) {
	return &pb.ListTargetsResponse{}, nil
}
func (r *recorder) Simulate(context.Context, *pb.SimulateRequest) (*pb.SimulateResponse, error) {
	return &pb.SimulateResponse{}, nil
}
func (r *recorder) ReportScale(context.Context, *pb.ReportScaleRequest) (*pb.ReportScaleResponse, error) {
	return &pb.ReportScaleResponse{Recorded: true}, nil
}
func (r *recorder) DeleteTarget(context.Context, *pb.DeleteTargetRequest) (*pb.DeleteTargetResponse, error) {
	return &pb.DeleteTargetResponse{}, nil
}

func startRecorder(t *testing.T, r *recorder) string {
	t.Helper()
	r.calls = map[string]int{}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(grpc.UnaryInterceptor(r.intercept))
	pb.RegisterRecommenderServiceServer(s, r)
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	return lis.Addr().String()
}

func newClient(t *testing.T, addr string, opts ...goclient.Option) *goclient.Client {
	t.Helper()
	c, err := goclient.New(addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestRetriesOnUnavailable(t *testing.T) {
	target := &pb.TargetRef{Cluster: "c", Namespace: "ns", Name: "web"}
	tests := []struct {
		name      string
		method    string
		call      func(context.Context, *goclient.Client) error
		wantCalls int
		wantCode  codes.Code
	}{
		{name: "GetTarget retried", method: "GetTarget", wantCalls: 3, wantCode: codes.OK,
			call: func(ctx context.Context, c *goclient.Client) error {
				_, err := c.GetTarget(ctx, &pb.GetTargetRequest{Target: target})
				return err
			}},
		{name: "ListTargets retried", method: "ListTargets", wantCalls: 3, wantCode: codes.OK,
			call: func(ctx context.Context, c *goclient.Client) error {
				_, err := c.ListTargets(ctx, &pb.ListTargetsRequest{})
				return err
			}},
		{name: "Simulate retried", method: "Simulate", wantCalls: 3, wantCode: codes.OK,
			call: func(ctx context.Context, c *goclient.Client) error {
				_, err := c.Simulate(ctx, &pb.SimulateRequest{})
				return err
			}},
		{name: "ReportScale retried", method: "ReportScale", wantCalls: 3, wantCode: codes.OK,
			call: func(ctx context.Context, c *goclient.Client) error {
				_, err := c.ReportScale(ctx, &pb.ReportScaleRequest{Target: target, RecommendationId: "x", Succeeded: true})
				return err
			}},
		{name: "dry-run Recommend retried", method: "Recommend", wantCalls: 3, wantCode: codes.OK,
			call: func(ctx context.Context, c *goclient.Client) error {
				_, err := c.Recommend(ctx, &pb.RecommendRequest{Target: target, DryRun: true})
				return err
			}},
		{name: "Recommend that writes not retried", method: "Recommend", wantCalls: 1, wantCode: codes.Unavailable,
			call: func(ctx context.Context, c *goclient.Client) error {
				_, err := c.Recommend(ctx, &pb.RecommendRequest{Target: target})
				return err
			}},
		{name: "DeleteTarget not retried", method: "DeleteTarget", wantCalls: 1, wantCode: codes.Unavailable,
			call: func(ctx context.Context, c *goclient.Client) error {
				_, err := c.DeleteTarget(ctx, &pb.DeleteTargetRequest{Target: target})
				return err
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &recorder{failures: 2, fail: codes.Unavailable}
			c := newClient(t, startRecorder(t, r), goclient.WithRetries(3))
			err := tt.call(t.Context(), c)
			if got := status.Code(err); got != tt.wantCode {
				t.Errorf("code = %v, want %v (err %v)", got, tt.wantCode, err)
			}
			if got := r.count(tt.method); got != tt.wantCalls {
				t.Errorf("server saw %d calls, want %d", got, tt.wantCalls)
			}
		})
	}
}

func TestRetriesGiveUp(t *testing.T) {
	r := &recorder{failures: 10, fail: codes.Unavailable}
	c := newClient(t, startRecorder(t, r), goclient.WithRetries(2))
	_, err := c.GetTarget(t.Context(), &pb.GetTargetRequest{})
	if got := status.Code(err); got != codes.Unavailable {
		t.Errorf("code = %v, want Unavailable", got)
	}
	if got := r.count("GetTarget"); got != 3 {
		t.Errorf("server saw %d calls, want 3 (1 + 2 retries)", got)
	}
}

func TestNoRetryOnOtherCodes(t *testing.T) {
	r := &recorder{failures: 1, fail: codes.InvalidArgument}
	c := newClient(t, startRecorder(t, r), goclient.WithRetries(3))
	_, err := c.GetTarget(t.Context(), &pb.GetTargetRequest{})
	if got := status.Code(err); got != codes.InvalidArgument {
		t.Errorf("code = %v, want InvalidArgument", got)
	}
	if got := r.count("GetTarget"); got != 1 {
		t.Errorf("server saw %d calls, want 1", got)
	}
}

func TestNoRetriesByDefault(t *testing.T) {
	r := &recorder{failures: 1, fail: codes.Unavailable}
	c := newClient(t, startRecorder(t, r))
	_, err := c.GetTarget(t.Context(), &pb.GetTargetRequest{})
	if got := status.Code(err); got != codes.Unavailable {
		t.Errorf("code = %v, want Unavailable", got)
	}
	if got := r.count("GetTarget"); got != 1 {
		t.Errorf("server saw %d calls, want 1", got)
	}
}

// TestRetryUntilServerStarts: the first attempt finds nothing listening (Unavailable); the
// server comes up on the same port while the client backs off.
func TestRetryUntilServerStarts(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()

	c := newClient(t, addr, goclient.WithRetries(20), goclient.WithTimeout(30*time.Second))
	r := &recorder{calls: map[string]int{}}
	started := make(chan struct{})
	go func() {
		time.Sleep(300 * time.Millisecond)
		lis, err := net.Listen("tcp", addr)
		if err != nil {
			t.Errorf("relisten on %s: %v", addr, err)
			close(started)
			return
		}
		s := grpc.NewServer(grpc.UnaryInterceptor(r.intercept))
		pb.RegisterRecommenderServiceServer(s, r)
		t.Cleanup(s.Stop)
		close(started)
		_ = s.Serve(lis)
	}()
	_, err = c.GetTarget(t.Context(), &pb.GetTargetRequest{})
	<-started
	if err != nil {
		t.Fatalf("GetTarget: %v", err)
	}
	if got := r.count("GetTarget"); got != 1 {
		t.Errorf("server saw %d calls, want 1", got)
	}
}

func TestDefaultDeadline(t *testing.T) {
	tests := []struct {
		name    string
		opts    []goclient.Option
		ctxTime time.Duration // 0: a context without deadline
		wantMin time.Duration
		wantMax time.Duration
	}{
		{name: "default 10s", wantMin: 9 * time.Second, wantMax: 10 * time.Second},
		{name: "WithTimeout", opts: []goclient.Option{goclient.WithTimeout(3 * time.Second)}, wantMin: 2 * time.Second, wantMax: 3 * time.Second},
		{name: "caller's deadline wins", opts: []goclient.Option{goclient.WithTimeout(3 * time.Second)}, ctxTime: 30 * time.Second, wantMin: 29 * time.Second, wantMax: 30 * time.Second},
		{name: "disabled", opts: []goclient.Option{goclient.WithTimeout(0)}, wantMin: -1, wantMax: -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &recorder{}
			c := newClient(t, startRecorder(t, r), tt.opts...)
			ctx := t.Context()
			if tt.ctxTime > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.ctxTime)
				defer cancel()
			}
			if _, err := c.ListTargets(ctx, &pb.ListTargetsRequest{}); err != nil {
				t.Fatal(err)
			}
			got := r.deadline[0]
			if got < tt.wantMin || got > tt.wantMax {
				t.Errorf("deadline at the server = %v, want within [%v, %v]", got, tt.wantMin, tt.wantMax)
			}
		})
	}
}

func TestDeadlineExceeded(t *testing.T) {
	r := &recorder{delay: 5 * time.Second}
	c := newClient(t, startRecorder(t, r), goclient.WithTimeout(50*time.Millisecond), goclient.WithRetries(3))
	start := time.Now()
	_, err := c.GetTarget(t.Context(), &pb.GetTargetRequest{})
	if got := status.Code(err); got != codes.DeadlineExceeded {
		t.Errorf("code = %v, want DeadlineExceeded", got)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("call took %v; the default deadline should bound it", d)
	}
}

func TestBearerToken(t *testing.T) {
	r := &recorder{}
	c := newClient(t, startRecorder(t, r), goclient.WithBearerToken("s3cret"))
	if _, err := c.GetTarget(t.Context(), &pb.GetTargetRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Recommend(t.Context(), &pb.RecommendRequest{}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(r.auth, []string{"Bearer s3cret", "Bearer s3cret"}); diff != "" {
		t.Errorf("authorization headers (-got +want):\n%s", diff)
	}
}

func TestNoTokenNoHeader(t *testing.T) {
	r := &recorder{}
	c := newClient(t, startRecorder(t, r))
	if _, err := c.GetTarget(t.Context(), &pb.GetTargetRequest{}); err != nil {
		t.Fatal(err)
	}
	if len(r.auth) != 0 {
		t.Errorf("authorization headers = %q, want none", r.auth)
	}
}

func TestNewRefusesPlaintext(t *testing.T) {
	tests := []struct {
		name    string
		target  string
		opts    []goclient.Option
		wantErr bool
	}{
		{name: "loopback plaintext", target: "127.0.0.1:50051"},
		{name: "localhost with token", target: "localhost:50051", opts: []goclient.Option{goclient.WithBearerToken("t")}},
		{name: "ipv6 loopback with token", target: "[::1]:50051", opts: []goclient.Option{goclient.WithBearerToken("t")}},
		{name: "dns scheme loopback with token", target: "dns:///127.0.0.1:50051", opts: []goclient.Option{goclient.WithBearerToken("t")}},
		{name: "remote plaintext", target: "recommender.example:443", wantErr: true},
		{name: "remote plaintext allowed", target: "recommender.example:443", opts: []goclient.Option{goclient.WithInsecure()}},
		{name: "remote token over plaintext", target: "recommender.example:443", opts: []goclient.Option{goclient.WithInsecure(), goclient.WithBearerToken("t")}, wantErr: true},
		{name: "remote token over TLS", target: "recommender.example:443", opts: []goclient.Option{goclient.WithTLS(""), goclient.WithBearerToken("t")}},
		{name: "missing CA file", target: "recommender.example:443", opts: []goclient.Option{goclient.WithTLS("/nonexistent/ca.pem")}, wantErr: true},
		{name: "missing client cert", target: "recommender.example:443", opts: []goclient.Option{goclient.WithClientCertificate("/nonexistent/c.pem", "/nonexistent/k.pem")}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := goclient.New(tt.target, tt.opts...)
			if (err != nil) != tt.wantErr {
				t.Fatalf("New(%q) error = %v, wantErr %v", tt.target, err, tt.wantErr)
			}
			if c != nil {
				c.Close()
			}
		})
	}
}

func TestIsLoopbackTarget(t *testing.T) {
	tests := []struct {
		target string
		want   bool
	}{
		{"127.0.0.1:50051", true},
		{"127.9.9.9:1", true},
		{"localhost:50051", true},
		{"[::1]:50051", true},
		{"dns:///localhost:50051", true},
		{"dns://8.8.8.8/localhost:50051", true},
		{"passthrough:///127.0.0.1:1", true},
		{"unix:///run/hpa.sock", true},
		{"10.0.0.1:50051", false},
		{"recommender.example:443", false},
		{"dns:///recommender.example:443", false},
		{"0.0.0.0:50051", false},
	}
	for _, tt := range tests {
		if got := goclient.IsLoopbackTarget(tt.target); got != tt.want {
			t.Errorf("IsLoopbackTarget(%q) = %v, want %v", tt.target, got, tt.want)
		}
	}
}

// TestFieldViolations: the violations of a BadRequest detail, in order; none from an error
// without one, a non-status error, or nil.
func TestFieldViolations(t *testing.T) {
	st, err := status.New(codes.InvalidArgument, "bad").WithDetails(&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{
		{Field: "spec.maxReplicas", Description: "must be greater than 0"},
		{Field: "pods[1].name", Description: "duplicate"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := []goclient.FieldViolation{{Field: "spec.maxReplicas", Description: "must be greater than 0"}, {Field: "pods[1].name", Description: "duplicate"}}
	if diff := cmp.Diff(want, goclient.FieldViolations(st.Err())); diff != "" {
		t.Errorf("violations (-want +got):\n%s", diff)
	}
	wrapped := fmt.Errorf("recommend: %w", st.Err())
	if diff := cmp.Diff(want, goclient.FieldViolations(wrapped)); diff != "" {
		t.Errorf("violations of a wrapped error (-want +got):\n%s", diff)
	}
	for _, e := range []error{nil, errors.New("plain"), status.Error(codes.NotFound, "no such target")} {
		if got := goclient.FieldViolations(e); got != nil {
			t.Errorf("FieldViolations(%v) = %v, want nil", e, got)
		}
	}
}
