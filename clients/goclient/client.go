package goclient

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/retry"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

// DefaultTimeout is the deadline given to a call whose context has none.
const DefaultTimeout = 10 * time.Second

// retryBackoff is the base of the exponential backoff between retries (100ms, 200ms, 400ms...,
// with 10% jitter, bounded by 5s).
const (
	retryBackoff    = 100 * time.Millisecond
	retryBackoffMax = 5 * time.Second
)

// Option configures a Client.
type Option func(*config)

type config struct {
	tlsConfig  *tls.Config
	caFile     string
	useTLS     bool
	certFile   string
	keyFile    string
	token      string
	insecure   bool
	timeout    time.Duration
	retries    uint
	dialOpts   []grpc.DialOption
	serverName string
}

// WithTLS enables TLS, verifying the server against the PEM certificates in caFile; an empty
// caFile uses the system roots. Default: plaintext (see the package doc).
func WithTLS(caFile string) Option {
	return func(c *config) { c.useTLS, c.caFile = true, caFile }
}

// WithTLSConfig enables TLS with cfg, used as given (cloned). It takes precedence over WithTLS's
// CA file; WithClientCertificate still adds its certificate.
func WithTLSConfig(cfg *tls.Config) Option {
	return func(c *config) { c.useTLS, c.tlsConfig = true, cfg }
}

// WithServerName overrides the name the server certificate is verified against (default: the
// host of the target).
func WithServerName(name string) Option {
	return func(c *config) { c.serverName = name }
}

// WithClientCertificate presents the PEM certificate and key in certFile and keyFile (mTLS).
// It implies TLS. Default: no client certificate.
func WithClientCertificate(certFile, keyFile string) Option {
	return func(c *config) { c.useTLS, c.certFile, c.keyFile = true, certFile, keyFile }
}

// WithBearerToken sends "authorization: Bearer <token>" with every call. Over plaintext it is
// allowed only to a loopback target. Default: no token.
func WithBearerToken(token string) Option {
	return func(c *config) { c.token = token }
}

// WithInsecure allows plaintext to a target that is not a loopback address. It never allows a
// bearer token over plaintext to such a target. Default: off.
func WithInsecure() Option {
	return func(c *config) { c.insecure = true }
}

// WithTimeout sets the deadline given to a call whose context has none; it covers the call's
// retries. Default DefaultTimeout (10s); zero or negative disables it.
func WithTimeout(d time.Duration) Option {
	return func(c *config) { c.timeout = d }
}

// WithRetries retries a safe call up to n more times when the server answers
// codes.Unavailable, with exponential backoff. Default 0 (no retries). Which calls are safe is
// listed in the package doc.
func WithRetries(n uint) Option {
	return func(c *config) { c.retries = n }
}

// WithDialOptions appends raw gRPC dial options, e.g. a custom dialer in tests.
func WithDialOptions(opts ...grpc.DialOption) Option {
	return func(c *config) { c.dialOpts = append(c.dialOpts, opts...) }
}

// Client calls a hpa-recommender service. It is safe for concurrent use.
type Client struct {
	conn    *grpc.ClientConn
	api     pb.RecommenderServiceClient
	retries uint
}

// New connects (lazily, as grpc.NewClient does) to target, a gRPC target such as
// "127.0.0.1:50051", "dns:///recommender.example:443" or "unix:///run/hpa.sock".
func New(target string, opts ...Option) (*Client, error) {
	cfg := config{timeout: DefaultTimeout}
	for _, o := range opts {
		o(&cfg)
	}
	loopback := IsLoopbackTarget(target)
	var creds credentials.TransportCredentials
	if cfg.useTLS {
		tc, err := cfg.buildTLS()
		if err != nil {
			return nil, err
		}
		creds = credentials.NewTLS(tc)
	} else {
		if !loopback && !cfg.insecure {
			return nil, fmt.Errorf("goclient: plaintext to %q, which is not a loopback address: use WithTLS, or WithInsecure to allow it", target)
		}
		if !loopback && cfg.token != "" {
			return nil, fmt.Errorf("goclient: a bearer token to %q needs TLS: it is sent in the clear only to a loopback address", target)
		}
		creds = insecure.NewCredentials()
	}
	dial := []grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithChainUnaryInterceptor(
			timeoutInterceptor(cfg.timeout),
			// Retries are off unless a method turns them on per call (see retryOpts).
			retry.UnaryClientInterceptor(
				retry.WithCodes(codes.Unavailable),
				retry.WithBackoff(retry.BackoffExponentialWithJitterBounded(retryBackoff, 0.1, retryBackoffMax)),
			),
		),
	}
	if cfg.token != "" {
		dial = append(dial, grpc.WithPerRPCCredentials(bearer{token: cfg.token, requireTLS: cfg.useTLS}))
	}
	dial = append(dial, cfg.dialOpts...)
	conn, err := grpc.NewClient(target, dial...)
	if err != nil {
		return nil, fmt.Errorf("goclient: %w", err)
	}
	return &Client{conn: conn, api: pb.NewRecommenderServiceClient(conn), retries: cfg.retries}, nil
}

func (c *config) buildTLS() (*tls.Config, error) {
	var tc *tls.Config
	if c.tlsConfig != nil {
		tc = c.tlsConfig.Clone()
	} else {
		tc = &tls.Config{MinVersion: tls.VersionTLS12}
		if c.caFile != "" {
			pem, err := os.ReadFile(c.caFile)
			if err != nil {
				return nil, fmt.Errorf("goclient: read CA file: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("goclient: no PEM certificate in CA file %s", c.caFile)
			}
			tc.RootCAs = pool
		}
	}
	if c.certFile != "" || c.keyFile != "" {
		cert, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
		if err != nil {
			return nil, fmt.Errorf("goclient: load client certificate: %w", err)
		}
		tc.Certificates = append(tc.Certificates, cert)
	}
	if c.serverName != "" {
		tc.ServerName = c.serverName
	}
	return tc, nil
}

// IsLoopbackTarget reports whether a gRPC target names a loopback address (127.0.0.0/8, ::1,
// localhost) or a unix socket, where plaintext never leaves the host.
func IsLoopbackTarget(target string) bool {
	t := target
	if strings.HasPrefix(t, "unix:") || strings.HasPrefix(t, "unix-abstract:") {
		return true
	}
	for _, scheme := range []string{"dns:", "passthrough:"} {
		if rest, ok := strings.CutPrefix(t, scheme); ok {
			t = rest
			// dns://authority/host:port and dns:///host:port: keep what follows the authority.
			if rest, ok := strings.CutPrefix(t, "//"); ok {
				if i := strings.IndexByte(rest, '/'); i >= 0 {
					t = rest[i+1:]
				} else {
					t = rest
				}
			}
			break
		}
	}
	host := t
	if h, _, err := net.SplitHostPort(t); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// bearer is the per-RPC credential of WithBearerToken.
type bearer struct {
	token      string
	requireTLS bool
}

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + b.token}, nil
}

func (b bearer) RequireTransportSecurity() bool { return b.requireTLS }

// timeoutInterceptor gives a call without a deadline the default timeout; it runs outside the
// retry interceptor, so the deadline bounds all attempts together.
func timeoutInterceptor(d time.Duration) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if _, ok := ctx.Deadline(); !ok && d > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, d)
			defer cancel()
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	}
}

// retryOpts turns retries on for one safe call.
func (c *Client) retryOpts(opts []grpc.CallOption) []grpc.CallOption {
	if c.retries == 0 {
		return opts
	}
	return append([]grpc.CallOption{retry.WithMax(c.retries + 1)}, opts...)
}

// Close closes the connection; calls in flight fail.
func (c *Client) Close() error { return c.conn.Close() }

// Conn returns the underlying connection, e.g. for the health service.
func (c *Client) Conn() *grpc.ClientConn { return c.conn }

// Recommend asks for a decision. It is retried only when req.DryRun is true.
func (c *Client) Recommend(ctx context.Context, req *pb.RecommendRequest, opts ...grpc.CallOption) (*pb.RecommendResponse, error) {
	if req.GetDryRun() {
		opts = c.retryOpts(opts)
	}
	return c.api.Recommend(ctx, req, opts...)
}

// ReportScale reports the outcome of a scale write. It is retried: the server answers a
// repeated recommendation id with recorded false.
func (c *Client) ReportScale(ctx context.Context, req *pb.ReportScaleRequest, opts ...grpc.CallOption) (*pb.ReportScaleResponse, error) {
	return c.api.ReportScale(ctx, req, c.retryOpts(opts)...)
}

// Simulate replays a timeline. It is retried.
func (c *Client) Simulate(ctx context.Context, req *pb.SimulateRequest, opts ...grpc.CallOption) (*pb.SimulateResponse, error) {
	return c.api.Simulate(ctx, req, c.retryOpts(opts)...)
}

// GetTarget returns one target's stored state. It is retried.
func (c *Client) GetTarget(ctx context.Context, req *pb.GetTargetRequest, opts ...grpc.CallOption) (*pb.GetTargetResponse, error) {
	return c.api.GetTarget(ctx, req, c.retryOpts(opts)...)
}

// ListTargets returns one page of targets. It is retried.
func (c *Client) ListTargets(ctx context.Context, req *pb.ListTargetsRequest, opts ...grpc.CallOption) (*pb.ListTargetsResponse, error) {
	return c.api.ListTargets(ctx, req, c.retryOpts(opts)...)
}

// ListAllTargets fetches every page of a listing, pageSize targets per call (0: the server's
// default), and stops after limit targets when limit > 0.
func (c *Client) ListAllTargets(ctx context.Context, req *pb.ListTargetsRequest, limit int) ([]*pb.TargetSummary, error) {
	r := &pb.ListTargetsRequest{Cluster: req.GetCluster(), Namespace: req.GetNamespace(), PageSize: req.GetPageSize(), PageToken: req.GetPageToken()}
	var out []*pb.TargetSummary
	for {
		resp, err := c.ListTargets(ctx, r)
		if err != nil {
			return out, err
		}
		out = append(out, resp.GetTargets()...)
		if limit > 0 && len(out) >= limit {
			return out[:limit], nil
		}
		next := resp.GetNextPageToken()
		if next == "" {
			return out, nil
		}
		if next == r.PageToken {
			return out, errors.New("goclient: the server returned the same page token twice")
		}
		r.PageToken = next
	}
}

// DeleteTarget forgets a target. It is never retried: a repeat after a lost reply answers
// NotFound.
func (c *Client) DeleteTarget(ctx context.Context, req *pb.DeleteTargetRequest, opts ...grpc.CallOption) (*pb.DeleteTargetResponse, error) {
	return c.api.DeleteTarget(ctx, req, opts...)
}

// ListDecisions returns one page of a target's decision log, newest first. It is retried.
func (c *Client) ListDecisions(ctx context.Context, req *pb.ListDecisionsRequest, opts ...grpc.CallOption) (*pb.ListDecisionsResponse, error) {
	return c.api.ListDecisions(ctx, req, c.retryOpts(opts)...)
}

// ListAllDecisions fetches every page of a target's decision log (newest first), and stops
// after limit entries when limit > 0.
func (c *Client) ListAllDecisions(ctx context.Context, req *pb.ListDecisionsRequest, limit int) ([]*pb.DecisionLogEntry, error) {
	r := &pb.ListDecisionsRequest{Target: req.GetTarget(), Since: req.GetSince(), Until: req.GetUntil(),
		PageSize: req.GetPageSize(), PageToken: req.GetPageToken()}
	var out []*pb.DecisionLogEntry
	for {
		resp, err := c.ListDecisions(ctx, r)
		if err != nil {
			return out, err
		}
		out = append(out, resp.GetDecisions()...)
		if limit > 0 && len(out) >= limit {
			return out[:limit], nil
		}
		next := resp.GetNextPageToken()
		if next == "" {
			return out, nil
		}
		if next == r.PageToken {
			return out, errors.New("goclient: the server returned the same page token twice")
		}
		r.PageToken = next
	}
}
