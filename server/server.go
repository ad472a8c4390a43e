package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"runtime/trace"
	"sync"
	"time"

	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/auth"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/logging"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/recovery"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/selector"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/hpa-recommender/hpa-recommender/internal/tlsfiles"
	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
	"github.com/hpa-recommender/hpa-recommender/store"
)

// Deps are the collaborators a Server does not own.
type Deps struct {
	// Store keeps the targets; the Server never closes it.
	Store store.Store
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Now is the decision clock; it defaults to time.Now.
	Now func() time.Time
	// Registry receives the gRPC metrics; a new one when nil.
	Registry *prometheus.Registry
}

// Server is the hpa-recommender gRPC service.
type Server struct {
	pb.UnimplementedRecommenderServiceServer

	cfg      Config
	store    store.Store
	log      *slog.Logger
	now      func() time.Time
	registry *prometheus.Registry
	grpc     *grpc.Server
	health   *health.Server
	metrics  *grpcprom.ServerMetrics
	storeH   *storeHealth

	// Tenants (auth.go, ratelimit.go): nil when not configured.
	tokens  *tokenFile
	limiter *rateLimiter

	// decisionLog: Recommend and ReportScale keep each target's decision log (Config.DecisionLog).
	decisionLog bool

	mu   sync.Mutex
	addr net.Addr
}

// New builds a Server; Run or Serve starts it.
func New(cfg Config, deps Deps) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.Store == nil {
		return nil, errors.New("server: a store is required")
	}
	s := &Server{
		cfg:      cfg,
		store:    deps.Store,
		log:      deps.Logger,
		now:      deps.Now,
		registry: deps.Registry,
		health:   health.NewServer(),
	}
	s.decisionLog, _ = cfg.DecisionLog()
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.now == nil {
		s.now = time.Now
	}
	for _, f := range cfg.Retired {
		s.log.Warn("a retired flag is set: it is ignored, and the next release refuses it; remove it", "flag", "--"+f.Name, "why", f.Why)
	}
	if s.registry == nil {
		s.registry = prometheus.NewRegistry()
		s.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	if r, ok := deps.Store.(store.CommitReporter); ok {
		if err := s.registry.Register(storeCollector{r}); err != nil {
			return nil, fmt.Errorf("register store metrics: %w", err)
		}
	}
	if r, ok := deps.Store.(store.CompactionReporter); ok {
		if err := s.registry.Register(compactionCollector{r}); err != nil {
			return nil, fmt.Errorf("register store compaction metrics: %w", err)
		}
	}
	sh, err := newStoreHealth(s.registry)
	if err != nil {
		return nil, fmt.Errorf("register store health metrics: %w", err)
	}
	s.storeH = sh
	if cfg.TokensFile != "" {
		tf, err := loadTokenFile(cfg.TokensFile)
		if err != nil {
			return nil, err
		}
		s.tokens = tf
	}
	s.limiter = newRateLimiter(cfg.RateLimit, cfg.RateBurst)
	opts, err := s.serverOptions()
	if err != nil {
		return nil, err
	}
	s.grpc = grpc.NewServer(opts...)
	pb.RegisterRecommenderServiceServer(s.grpc, s)
	pb.RegisterAdminServiceServer(s.grpc, adminServer{s: s})
	healthpb.RegisterHealthServer(s.grpc, s.health)
	if err := registerReflection(s.grpc); err != nil {
		return nil, err
	}
	s.setServing(false)
	return s, nil
}

const serviceName = "recommender.v1.RecommenderService"

func (s *Server) setServing(ok bool) {
	st, up := healthpb.HealthCheckResponse_NOT_SERVING, 0.0
	if ok {
		st, up = healthpb.HealthCheckResponse_SERVING, 1
	}
	s.storeH.up.Set(up)
	s.health.SetServingStatus("", st)
	s.health.SetServingStatus(serviceName, st)
}

// callLogLevel logs a successful call at debug (a busy service decides thousands of times a
// second) and a failed one as go-grpc-middleware's server default does: client errors at info
// or warn, server errors at error.
func callLogLevel(c codes.Code) logging.Level {
	if c == codes.OK {
		return logging.LevelDebug
	}
	return logging.DefaultServerCodeToLevel(c)
}

// slogLogger adapts l to go-grpc-middleware's logging interceptor.
func slogLogger(l *slog.Logger) logging.Logger {
	return logging.LoggerFunc(func(ctx context.Context, lvl logging.Level, msg string, fields ...any) {
		l.Log(ctx, slog.Level(lvl), msg, fields...)
	})
}

// streamWorkers is the gRPC server's pool of call goroutines: enough for the calls in flight
// at a few thousand per second while each waits for a commit.
const streamWorkers = 128

// traceRegion marks each unary call, after its request is decoded, as a runtime/trace region
// named by its full method: in an execution trace (/debug/pprof/trace with --pprof), `go tool
// trace`'s "User-defined regions" page then gives each method's latency distribution and, call
// by call, how long it ran, waited for a CPU, in system calls and blocked. Without a trace
// running it costs one atomic load.
func traceRegion(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	defer trace.StartRegion(ctx, info.FullMethod).End()
	return handler(ctx, req)
}

// rejectUndecodable answers InvalidArgument to a request the codec could not decode
// (decodeError): grpc-go would have answered Internal, blaming the server for the caller's
// bytes.
func rejectUndecodable(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	m, ok := req.(proto.Message)
	if !ok {
		return handler(ctx, req)
	}
	if err := decodeError(m); err != nil {
		name := string(m.ProtoReflect().Descriptor().FullName())
		desc := fmt.Sprintf("the body is not a valid %s in the protobuf wire format: %v", name, err)
		st := status.New(codes.InvalidArgument, "invalid request: "+desc)
		// The empty path is the whole request: no field of it could be read.
		br := &errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{{Description: desc}}}
		if d, derr := st.WithDetails(br); derr == nil {
			st = d
		}
		return nil, st.Err()
	}
	return handler(ctx, req)
}

// handlingBuckets are grpc_server_handling_seconds' bucket bounds: finer than the library's
// default below 25 ms, where a decision's time falls, with 5 ms (issue 6's p99 goal) among
// them, and up to 10 s for an overloaded replica.
var handlingBuckets = []float64{0.0005, 0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.015, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// serverOptions builds the transport and the interceptor chain: metrics, logging (health and
// reflection skipped), auth when configured (health and reflection skipped), then recovery
// innermost.
func (s *Server) serverOptions() ([]grpc.ServerOption, error) {
	metrics := grpcprom.NewServerMetrics(grpcprom.WithServerHandlingTimeHistogram(grpcprom.WithHistogramBuckets(handlingBuckets)))
	if err := s.registry.Register(metrics); err != nil {
		return nil, fmt.Errorf("register grpc metrics: %w", err)
	}
	s.metrics = metrics
	notProbe := selector.MatchFunc(func(_ context.Context, c interceptors.CallMeta) bool {
		return c.Service != healthpb.Health_ServiceDesc.ServiceName &&
			c.Service != "grpc.reflection.v1.ServerReflection" && c.Service != "grpc.reflection.v1alpha.ServerReflection"
	})
	recover := recovery.WithRecoveryHandlerContext(func(ctx context.Context, p any) error {
		s.log.ErrorContext(ctx, "panic in handler", "panic", p)
		return status.Error(codes.Internal, "internal error")
	})
	unary := []grpc.UnaryServerInterceptor{traceRegion, metrics.UnaryServerInterceptor()}
	if s.cfg.MaxInflight > 0 {
		// Before logging: refusals are counted by the metrics, and logged once a second.
		unary = append(unary, newInflightBound(s.cfg.MaxInflight, s.log).unary)
	}
	logCalls := logging.UnaryServerInterceptor(slogLogger(s.log),
		logging.WithLogOnEvents(logging.FinishCall), logging.WithLevels(callLogLevel))
	unary = append(unary,
		selector.UnaryServerInterceptor(logCalls, notProbe),
		// Before anything that may return early (auth): every undecodable request is counted
		// and logged as InvalidArgument.
		rejectUndecodable)
	stream := []grpc.StreamServerInterceptor{metrics.StreamServerInterceptor()}
	if s.authEnabled() {
		unary = append(unary, selector.UnaryServerInterceptor(auth.UnaryServerInterceptor(s.authenticate), notProbe))
		stream = append(stream, selector.StreamServerInterceptor(auth.StreamServerInterceptor(s.authenticate), notProbe))
	}
	opts := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(s.cfg.MaxRequestBytes),
		// Reused goroutines keep the stacks a Recommend grew; a new goroutine per call grows
		// (copies) its stack several times (5 % of the CPU under load). Calls beyond the
		// workers still get goroutines of their own.
		grpc.NumStreamWorkers(streamWorkers),
		// Undecodable requests are InvalidArgument; see codec.
		grpc.ForceServerCodecV2(newCodec()),
		grpc.ChainUnaryInterceptor(append(unary, recovery.UnaryServerInterceptor(recover))...),
		grpc.ChainStreamInterceptor(append(stream, recovery.StreamServerInterceptor(recover))...),
	}
	if s.cfg.TLSCert != "" {
		creds, err := s.transportCredentials()
		if err != nil {
			return nil, err
		}
		opts = append(opts, grpc.Creds(creds))
	}
	return opts, nil
}

// transportCredentials serve cfg.TLSCert and, with cfg.ClientCA, verify client certificates;
// each handshake reads the files as they now stand (tlsfiles.Server), so a rotated certificate
// or CA takes effect without a restart.
func (s *Server) transportCredentials() (credentials.TransportCredentials, error) {
	clientAuth := tls.RequireAndVerifyClientCert
	if s.tokens != nil {
		// A bearer token alone suffices too; a certificate that is sent must verify.
		clientAuth = tls.VerifyClientCertIfGiven
	}
	tc, err := tlsfiles.Server(s.cfg.TLSCert, s.cfg.TLSKey, s.cfg.ClientCA, clientAuth)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert, --tls-key, --client-ca: %w", err)
	}
	return credentials.NewTLS(tc), nil
}

// Addr is the gRPC listener's address once serving (nil before).
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// Run listens on cfg.Listen (and cfg.MetricsListen) and serves until ctx ends, then shuts down
// gracefully within cfg.ShutdownTimeout.
func (s *Server) Run(ctx context.Context) error {
	lis, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", s.cfg.Listen, err)
	}
	return s.Serve(ctx, lis)
}

// Serve serves on lis until ctx ends.
func (s *Server) Serve(ctx context.Context, lis net.Listener) error {
	s.mu.Lock()
	s.addr = lis.Addr()
	s.mu.Unlock()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	var metricsSrv *http.Server
	metricsAddr := "" // the metrics listener's bound address, for the log (a port 0 resolved)
	if s.cfg.MetricsListen != "" {
		mlis, err := net.Listen("tcp", s.cfg.MetricsListen)
		if err != nil {
			lis.Close()
			return fmt.Errorf("listen on %s: %w", s.cfg.MetricsListen, err)
		}
		metricsAddr = mlis.Addr().String()
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{}))
		if s.cfg.Pprof {
			mux.HandleFunc("/debug/pprof/", pprof.Index)
			mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
			mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
			mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
			mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		}
		metricsSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go func() {
			if err := metricsSrv.Serve(mlis); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.log.Error("metrics server stopped", "error", err)
			}
		}()
	}

	s.metrics.InitializeMetrics(s.grpc)
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); s.watchStore(ctx) }()
	go func() { defer wg.Done(); s.collectGarbage(ctx) }()
	go func() { defer wg.Done(); s.watchTokens(ctx) }()

	serveErr := make(chan error, 1)
	go func() { serveErr <- s.grpc.Serve(lis) }()
	// The warnings come first: whoever waits for "serving" has them.
	switch {
	case !s.authEnabled():
		s.log.Warn("running without authentication: any caller may read and write every target; use --tls-cert/--client-ca or --tokens-file outside loopback")
	case s.cfg.TLSCert == "":
		s.log.Warn("bearer tokens travel in plaintext: use --tls-cert and --tls-key outside loopback")
	}
	s.log.Info("serving", "listen", lis.Addr().String(), "metrics", metricsAddr, "store", s.cfg.Store,
		"tls", s.cfg.TLSCert != "", "mtls", s.cfg.ClientCA != "", "tokens", s.cfg.TokensFile != "", "rate_limit", s.cfg.RateLimit, "max_inflight", s.cfg.MaxInflight)

	var err error
	select {
	case <-ctx.Done():
	case err = <-serveErr:
	}
	cancel()
	s.setServing(false)
	stopped := make(chan struct{})
	go func() { s.grpc.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(s.cfg.ShutdownTimeout):
		s.log.Warn("graceful shutdown timed out; closing open calls", "timeout", s.cfg.ShutdownTimeout)
		s.grpc.Stop()
		<-stopped
	}
	if metricsSrv != nil {
		sctx, scancel := context.WithTimeout(context.Background(), time.Second)
		_ = metricsSrv.Shutdown(sctx)
		scancel()
	}
	wg.Wait()
	if errors.Is(err, grpc.ErrServerStopped) {
		err = nil
	}
	return err
}

// watchStore keeps the health status in step with the store: NOT_SERVING until it answers.
func (s *Server) watchStore(ctx context.Context) {
	serving := false
	for {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := s.store.Ping(pctx)
		cancel()
		if ok := err == nil; ok != serving && ctx.Err() == nil {
			serving = ok
			s.setServing(ok)
			if !ok {
				s.log.Error("store not answering; health is NOT_SERVING", "error", err)
			}
		}
		interval := 5 * time.Second
		if !serving {
			interval = 500 * time.Millisecond
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}

// gcInterval is how often the server looks for targets unseen for ttl: a tenth of it, at most
// every 10 minutes, so a target is forgotten at most a tenth of the TTL late. A pass reads
// every stored target: at 100k targets on etcd it cost 6 s of etcd's CPU and 2 s of the
// service's, per replica (2026-11-27), which every minute, as before, kept a tenth of a core
// busy for a once-a-day forgetting.
func gcInterval(ttl time.Duration) time.Duration { return min(ttl/10, 10*time.Minute) }

// collectGarbage forgets targets unseen for cfg.TargetTTL.
func (s *Server) collectGarbage(ctx context.Context) {
	if s.cfg.TargetTTL <= 0 {
		return
	}
	interval := gcInterval(s.cfg.TargetTTL)
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
		n, err := s.store.DeleteUnseenSince(ctx, s.now().Add(-s.cfg.TargetTTL))
		switch {
		case err != nil && ctx.Err() == nil:
			s.log.Error("target garbage collection failed", "error", err)
		case n > 0:
			s.log.Info("forgot targets unseen for the TTL", "count", n, "ttl", s.cfg.TargetTTL)
		}
	}
}
