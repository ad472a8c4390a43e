package server_test

import (
	"context"
	"crypto/tls"
	"log/slog"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/hpa-recommender/hpa-recommender/internal/certgen"
	"github.com/hpa-recommender/hpa-recommender/internal/syncbuf"
	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
	"github.com/hpa-recommender/hpa-recommender/server"
	"github.com/hpa-recommender/hpa-recommender/server/servertest"
	"github.com/hpa-recommender/hpa-recommender/store"
	"github.com/hpa-recommender/hpa-recommender/store/boltstore"
	"github.com/hpa-recommender/hpa-recommender/store/memstore"
)

// --- certificates -------------------------------------------------------------------------

// pkiFixture is a CA, the server's key pair for 127.0.0.1, and client certificates.
type pkiFixture struct {
	ca                *certgen.CA
	certFile, keyFile string
	c1, c2, untrusted tls.Certificate
}

func newPKI(t *testing.T) *pkiFixture {
	t.Helper()
	dir := t.TempDir()
	ca := certgen.New(t, "hpa-ca")
	p := &pkiFixture{ca: ca, certFile: filepath.Join(dir, "server.pem"), keyFile: filepath.Join(dir, "server-key.pem")}
	p.writeServerCert(t)
	p.c1 = clientCert(t, ca, "not-the-cluster", "spiffe://hpa/cluster/c1")
	p.c2 = clientCert(t, ca, "c2")
	p.untrusted = clientCert(t, certgen.New(t, "evil-ca"), "c1", "spiffe://hpa/cluster/c1")
	return p
}

// writeServerCert signs a new serving certificate for 127.0.0.1, writes it over certFile and
// keyFile, and returns it.
func (p *pkiFixture) writeServerCert(t *testing.T) tls.Certificate {
	t.Helper()
	certPEM, keyPEM := p.ca.ServerPEM(t, "hpa-recommender", "127.0.0.1")
	if err := os.WriteFile(p.certFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p.keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return keyPair(t, certPEM, keyPEM)
}

// clientCert signs a client certificate for cn from ca, with the URI SANs uris.
func clientCert(t *testing.T, ca *certgen.CA, cn string, uris ...string) tls.Certificate {
	t.Helper()
	certPEM, keyPEM := ca.ClientPEM(t, cn, uris...)
	return keyPair(t, certPEM, keyPEM)
}

// keyPair parses a PEM certificate and key, its Leaf set.
func keyPair(t *testing.T, certPEM, keyPEM []byte) tls.Certificate {
	t.Helper()
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// --- servers and clients ------------------------------------------------------------------

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer = syncbuf.Buffer

// startAuthServer runs a real server on a loopback port with a real bbolt file and returns its
// address and log.
func startAuthServer(t *testing.T, mutate ...func(*server.Config)) (string, *syncBuffer) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "db")
	st, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := server.DefaultConfig()
	cfg.BoltPath = path
	cfg.MetricsListen = ""
	for _, m := range mutate {
		m(&cfg)
	}
	logs := &syncBuffer{}
	addr, stop := servertest.Start(t, cfg, server.Deps{Store: st, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	t.Cleanup(func() {
		stop()
		if err := st.Check(); err != nil {
			t.Errorf("bbolt consistency: %v", err)
		}
		if err := st.Close(); err != nil {
			t.Errorf("close store: %v", err)
		}
	})
	return addr, logs
}

func dialWith(t *testing.T, addr string, creds credentials.TransportCredentials) pb.RecommenderServiceClient {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return pb.NewRecommenderServiceClient(conn)
}

func plaintext(t *testing.T, addr string) pb.RecommenderServiceClient {
	return dialWith(t, addr, insecure.NewCredentials())
}

// tlsClient trusts ca for the server and presents cert when it is not nil.
func tlsClient(t *testing.T, addr string, ca *certgen.CA, cert *tls.Certificate) pb.RecommenderServiceClient {
	tc := &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12}
	if cert != nil {
		// Always present it: Go clients otherwise send no certificate the server's CA list
		// does not cover, and the untrusted case would test nothing.
		tc.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }
	}
	return dialWith(t, addr, credentials.NewTLS(tc))
}

func bearer(ctx context.Context, token string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
}

const tokensFile = `# tenants
tok-c1,c1
  tok-c2 , c2

tok-admin,*
tok-old,c1,expires=2020-01-01T00:00:00Z
tok-later,c2,expires=2999-01-01T00:00:00Z
`

func writeTokens(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// request is externalRequest for target cluster/namespace/name (cluster may be empty).
func request(t *testing.T, cluster, namespace, name string) *pb.RecommendRequest {
	req := externalRequest(t, 2, "30")
	req.Target = &pb.TargetRef{Cluster: cluster, Namespace: namespace, Name: name}
	return req
}

func wantCode(t *testing.T, what string, err error, want codes.Code) {
	t.Helper()
	if got := status.Code(err); got != want {
		t.Errorf("%s: got %v, want %v", what, err, want)
	}
}

func listNames(t *testing.T, ctx context.Context, c pb.RecommenderServiceClient, req *pb.ListTargetsRequest) []string {
	t.Helper()
	resp, err := c.ListTargets(ctx, req)
	if err != nil {
		t.Fatalf("ListTargets(%v): %v", req, err)
	}
	var out []string
	for _, s := range resp.Targets {
		out = append(out, s.Target.Cluster+"/"+s.Target.Namespace+"/"+s.Target.Name)
	}
	slices.Sort(out)
	return out
}

// --- tests --------------------------------------------------------------------------------

func TestBearerTokens(t *testing.T) {
	addr, _ := startAuthServer(t, func(c *server.Config) { c.TokensFile = writeTokens(t, tokensFile) })
	c := plaintext(t, addr)
	tests := []struct {
		name   string
		header string // the authorization header; empty sends none
		want   codes.Code
	}{
		{name: "no credentials", want: codes.Unauthenticated},
		{name: "unknown token", header: "Bearer tok-nobody-knows", want: codes.Unauthenticated},
		{name: "expired token", header: "Bearer tok-old", want: codes.Unauthenticated},
		{name: "wrong scheme", header: "Basic tok-c1", want: codes.Unauthenticated},
		{name: "no scheme", header: "tok-c1", want: codes.Unauthenticated},
		{name: "empty token", header: "Bearer ", want: codes.Unauthenticated},
		{name: "prefix of a token", header: "Bearer tok-c", want: codes.Unauthenticated},
		{name: "valid token", header: "Bearer tok-c1", want: codes.OK},
		{name: "valid token, lower-case scheme", header: "bearer tok-c1", want: codes.OK},
		{name: "token that expires later", header: "Bearer tok-later", want: codes.OK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			if tc.header != "" {
				ctx = metadata.AppendToOutgoingContext(ctx, "authorization", tc.header)
			}
			_, err := c.Recommend(ctx, request(t, "", "shop", "web"))
			wantCode(t, "Recommend", err, tc.want)
			if tok, _ := strings.CutPrefix(tc.header, "Bearer "); err != nil && tok != "" && strings.Contains(status.Convert(err).Message(), tok) {
				t.Errorf("the message %q echoes the token", status.Convert(err).Message())
			}
		})
	}
	t.Run("expired says so", func(t *testing.T) {
		_, err := c.GetTarget(bearer(t.Context(), "tok-old"), &pb.GetTargetRequest{Target: &pb.TargetRef{Namespace: "shop", Name: "web"}})
		if !strings.Contains(status.Convert(err).Message(), "expired") {
			t.Errorf("got %v, want a message saying the token expired", err)
		}
	})
	t.Run("health and reflection need no credentials", func(t *testing.T) {
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := healthpb.NewHealthClient(conn).Check(t.Context(), &healthpb.HealthCheckRequest{}); err != nil {
			t.Errorf("health: %v", err)
		}
	})
}

func TestTenantsTouchOnlyTheirCluster(t *testing.T) {
	addr, _ := startAuthServer(t, func(c *server.Config) { c.TokensFile = writeTokens(t, tokensFile) })
	c := plaintext(t, addr)
	ctx := t.Context()
	c1, c2, admin := bearer(ctx, "tok-c1"), bearer(ctx, "tok-c2"), bearer(ctx, "tok-admin")

	// An empty cluster is the caller's; its own name explicitly is fine too.
	if _, err := c.Recommend(c1, request(t, "", "shop", "web")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Recommend(c2, request(t, "c2", "shop", "secret-api")); err != nil {
		t.Fatal(err)
	}
	got, err := c.GetTarget(c1, &pb.GetTargetRequest{Target: &pb.TargetRef{Namespace: "shop", Name: "web"}})
	if err != nil {
		t.Fatal(err)
	}
	if got.Target.Cluster != "c1" {
		t.Errorf("stored under cluster %q, want the caller's c1", got.Target.Cluster)
	}

	// Another cluster's target: PermissionDenied for every RPC, naming nothing of it.
	theirs := &pb.TargetRef{Cluster: "c2", Namespace: "shop", Name: "secret-api"}
	denied := map[string]error{}
	_, denied["Recommend"] = c.Recommend(c1, request(t, "c2", "shop", "secret-api"))
	_, denied["Recommend (new target)"] = c.Recommend(c1, request(t, "c9", "shop", "web"))
	_, denied["ReportScale"] = c.ReportScale(c1, &pb.ReportScaleRequest{Target: theirs, RecommendationId: "x", Succeeded: true})
	_, denied["GetTarget"] = c.GetTarget(c1, &pb.GetTargetRequest{Target: theirs})
	_, denied["DeleteTarget"] = c.DeleteTarget(c1, &pb.DeleteTargetRequest{Target: theirs})
	_, denied["ListTargets"] = c.ListTargets(c1, &pb.ListTargetsRequest{Cluster: "c2"})
	_, denied["ListDecisions"] = c.ListDecisions(c1, &pb.ListDecisionsRequest{Target: theirs})
	for name, err := range denied {
		wantCode(t, name, err, codes.PermissionDenied)
		if strings.Contains(status.Convert(err).Message(), "secret-api") {
			t.Errorf("%s: message %q names the other tenant's target", name, status.Convert(err).Message())
		}
	}

	// ListTargets never shows another tenant's names; admin sees both.
	for _, req := range []*pb.ListTargetsRequest{{}, {Cluster: "c1"}, {Namespace: "shop"}, {PageSize: 1}} {
		if diff := cmpStrings(listNames(t, c1, c, req), []string{"c1/shop/web"}); diff != "" {
			t.Errorf("c1 ListTargets(%v): %s", req, diff)
		}
	}
	if diff := cmpStrings(listNames(t, c2, c, &pb.ListTargetsRequest{}), []string{"c2/shop/secret-api"}); diff != "" {
		t.Errorf("c2 ListTargets: %s", diff)
	}
	if diff := cmpStrings(listNames(t, admin, c, &pb.ListTargetsRequest{}), []string{"c1/shop/web", "c2/shop/secret-api"}); diff != "" {
		t.Errorf("admin ListTargets: %s", diff)
	}
	if diff := cmpStrings(listNames(t, admin, c, &pb.ListTargetsRequest{Cluster: "c2"}), []string{"c2/shop/secret-api"}); diff != "" {
		t.Errorf("admin ListTargets c2: %s", diff)
	}

	// Admin reads any cluster but must name it; it may write on behalf of a named cluster.
	if _, err := c.GetTarget(admin, &pb.GetTargetRequest{Target: theirs}); err != nil {
		t.Errorf("admin GetTarget: %v", err)
	}
	_, err = c.GetTarget(admin, &pb.GetTargetRequest{Target: &pb.TargetRef{Namespace: "shop", Name: "web"}})
	wantCode(t, "admin GetTarget without a cluster", err, codes.InvalidArgument)
	_, err = c.Recommend(admin, request(t, "", "shop", "web"))
	wantCode(t, "admin Recommend without a cluster", err, codes.InvalidArgument)
	if _, err := c.Recommend(admin, request(t, "c3", "shop", "web")); err != nil {
		t.Errorf("admin Recommend for c3: %v", err)
	}
	if _, err := c.DeleteTarget(admin, &pb.DeleteTargetRequest{Target: theirs}); err != nil {
		t.Errorf("admin DeleteTarget: %v", err)
	}

	// Simulate touches no stored data: any identity, but an identity.
	sim := &pb.SimulateRequest{Spec: externalRequest(t, 0, "0").Spec, InitialReplicas: 2,
		Steps: []*pb.SimulateStep{{Time: timestamppb.New(t0), Metrics: externalRequest(t, 0, "50").Metrics}}}
	if _, err := c.Simulate(c2, sim); err != nil {
		t.Errorf("Simulate with a token: %v", err)
	}
	_, err = c.Simulate(ctx, sim)
	wantCode(t, "Simulate without credentials", err, codes.Unauthenticated)
}

func cmpStrings(got, want []string) string {
	if slices.Equal(got, want) {
		return ""
	}
	return "got " + strings.Join(got, ",") + ", want " + strings.Join(want, ",")
}

func TestMutualTLS(t *testing.T) {
	p := newPKI(t)
	addr, logs := startAuthServer(t, func(c *server.Config) {
		c.TLSCert, c.TLSKey, c.ClientCA = p.certFile, p.keyFile, p.ca.CertFile
	})
	ctx := t.Context()
	c1 := tlsClient(t, addr, p.ca, &p.c1)
	c2 := tlsClient(t, addr, p.ca, &p.c2)

	// The URI SAN's last segment names the cluster (not the CN); without a URI SAN, the CN.
	if _, err := c1.Recommend(ctx, request(t, "", "shop", "web")); err != nil {
		t.Fatal(err)
	}
	if _, err := c2.Recommend(ctx, request(t, "c2", "shop", "api")); err != nil {
		t.Fatal(err)
	}
	got, err := c1.GetTarget(ctx, &pb.GetTargetRequest{Target: &pb.TargetRef{Namespace: "shop", Name: "web"}})
	if err != nil || got.Target.Cluster != "c1" {
		t.Errorf("c1's target: %v, %v; want it stored under c1", got.GetTarget(), err)
	}
	if diff := cmpStrings(listNames(t, ctx, c2, &pb.ListTargetsRequest{}), []string{"c2/shop/api"}); diff != "" {
		t.Errorf("c2 ListTargets: %s", diff)
	}
	_, err = c1.GetTarget(ctx, &pb.GetTargetRequest{Target: &pb.TargetRef{Cluster: "c2", Namespace: "shop", Name: "api"}})
	wantCode(t, "c1 reads c2's target", err, codes.PermissionDenied)
	_, err = c1.Recommend(ctx, request(t, "c2", "shop", "api"))
	wantCode(t, "c1 writes c2's target", err, codes.PermissionDenied)

	// Tokens are not enabled on this server: a bearer header is refused, not ignored.
	_, err = c1.GetTarget(bearer(ctx, "tok-c1"), &pb.GetTargetRequest{Target: &pb.TargetRef{Namespace: "shop", Name: "web"}})
	wantCode(t, "bearer token without --tokens-file", err, codes.Unauthenticated)

	// Handshake failures: no client certificate, an untrusted one, or no TLS at all.
	for name, c := range map[string]pb.RecommenderServiceClient{
		"no client certificate": tlsClient(t, addr, p.ca, nil),
		"untrusted certificate": tlsClient(t, addr, p.ca, &p.untrusted),
		"plaintext against TLS": plaintext(t, addr),
	} {
		_, err := c.ListTargets(ctx, &pb.ListTargetsRequest{})
		wantCode(t, name, err, codes.Unavailable)
	}
	if strings.Contains(logs.String(), "running without authentication") {
		t.Errorf("an mTLS server logs that it runs without authentication:\n%s", logs)
	}
}

func TestMutualTLSWithTokens(t *testing.T) {
	p := newPKI(t)
	addr, _ := startAuthServer(t, func(c *server.Config) {
		c.TLSCert, c.TLSKey, c.ClientCA = p.certFile, p.keyFile, p.ca.CertFile
		c.TokensFile = writeTokens(t, tokensFile)
	})
	ctx := t.Context()
	noCert := tlsClient(t, addr, p.ca, nil)
	c1 := tlsClient(t, addr, p.ca, &p.c1)

	if _, err := c1.Recommend(ctx, request(t, "", "shop", "web")); err != nil {
		t.Errorf("a valid certificate alone: %v", err)
	}
	if _, err := noCert.Recommend(bearer(ctx, "tok-c2"), request(t, "", "shop", "api")); err != nil {
		t.Errorf("a valid token alone over TLS: %v", err)
	}
	_, err := noCert.ListTargets(ctx, &pb.ListTargetsRequest{})
	wantCode(t, "neither certificate nor token", err, codes.Unauthenticated)
	_, err = c1.ListTargets(bearer(ctx, "tok-nobody-knows"), &pb.ListTargetsRequest{})
	wantCode(t, "a valid certificate with an unknown token", err, codes.Unauthenticated)
	_, err = tlsClient(t, addr, p.ca, &p.untrusted).ListTargets(bearer(ctx, "tok-c1"), &pb.ListTargetsRequest{})
	wantCode(t, "an untrusted certificate with a valid token", err, codes.Unavailable)
	// The token decides the identity when one is sent.
	if diff := cmpStrings(listNames(t, bearer(ctx, "tok-admin"), c1, &pb.ListTargetsRequest{}), []string{"c1/shop/web", "c2/shop/api"}); diff != "" {
		t.Errorf("c1 certificate with the admin token: %s", diff)
	}
}

// errorReason is the reason of err's ErrorInfo in the server's domain ("" without one).
func errorReason(err error) string {
	for _, d := range status.Convert(err).Details() {
		if ei, ok := d.(*errdetails.ErrorInfo); ok && ei.GetDomain() == server.ErrorDomain {
			return ei.GetReason()
		}
	}
	return ""
}

func retryDelay(err error) time.Duration {
	for _, d := range status.Convert(err).Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			return ri.GetRetryDelay().AsDuration()
		}
	}
	return -1
}

func TestRateLimitPerCluster(t *testing.T) {
	addr, _ := startAuthServer(t, func(c *server.Config) { c.RateLimit, c.RateBurst = 0.5, 2 })
	c := plaintext(t, addr)
	ctx := t.Context()
	for i := range 2 {
		if _, err := c.Recommend(ctx, request(t, "c1", "shop", "web")); err != nil {
			t.Fatalf("call %d within the burst: %v", i, err)
		}
	}
	_, err := c.Recommend(ctx, request(t, "c1", "shop", "web"))
	wantCode(t, "over the burst", err, codes.ResourceExhausted)
	if d := retryDelay(err); d <= 0 || d > 2*time.Second {
		t.Errorf("RetryInfo delay %v, want in (0, 2s] (one token at 0.5/s)", d)
	}
	if r := errorReason(err); r != server.ReasonRateLimited {
		t.Errorf("ErrorInfo reason %q, want %q", r, server.ReasonRateLimited)
	}
	// Another cluster has its own bucket; other RPCs are not limited.
	if _, err := c.Recommend(ctx, request(t, "c2", "shop", "web")); err != nil {
		t.Errorf("another cluster: %v", err)
	}
	if _, err := c.GetTarget(ctx, &pb.GetTargetRequest{Target: &pb.TargetRef{Cluster: "c1", Namespace: "shop", Name: "web"}}); err != nil {
		t.Errorf("GetTarget of the limited cluster: %v", err)
	}
}

func TestFloodFromOneTenantDoesNotStarveAnother(t *testing.T) {
	addr, _ := startAuthServer(t, func(c *server.Config) {
		c.TokensFile = writeTokens(t, tokensFile)
		c.RateLimit, c.RateBurst = 10, 10
	})
	c := plaintext(t, addr)
	ctx := t.Context()
	stop := make(chan struct{})
	start := time.Now()
	var wg sync.WaitGroup
	var floodOK, floodLimited, floodOther atomic.Int64
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fctx := bearer(ctx, "tok-c1")
			for {
				select {
				case <-stop:
					return
				default:
				}
				req := request(t, "", "shop", "web")
				req.DryRun = true
				_, err := c.Recommend(fctx, req)
				switch status.Code(err) {
				case codes.OK:
					floodOK.Add(1)
				case codes.ResourceExhausted:
					floodLimited.Add(1)
				default:
					floodOther.Add(1)
				}
			}
		}()
	}
	// c2 stays under its rate (about 5/s) during the flood: every call must succeed.
	var failures []error
	for i := range 15 {
		if _, err := c.Recommend(bearer(ctx, "tok-c2"), request(t, "", "shop", "api")); err != nil {
			failures = append(failures, err)
		}
		if i < 14 {
			time.Sleep(200 * time.Millisecond)
		}
	}
	close(stop)
	wg.Wait()
	elapsed := time.Since(start)
	if len(failures) > 0 {
		t.Errorf("c2 failed %d of 15 calls during c1's flood: %v", len(failures), failures)
	}
	if floodLimited.Load() == 0 || floodOK.Load() == 0 {
		t.Errorf("flood: %d OK, %d limited; want both", floodOK.Load(), floodLimited.Load())
	}
	if n := floodOther.Load(); n > 0 {
		t.Errorf("flood: %d calls failed with something other than ResourceExhausted", n)
	}
	// The bucket lets through at most its burst plus the rate over the flood's duration.
	if n, most := floodOK.Load(), 10+int64(10*elapsed.Seconds())+1; n > most {
		t.Errorf("flood: %d calls allowed in %v at 10/s with burst 10, want at most %d", n, elapsed, most)
	}
}

func TestTokensFileErrorsNameTheLine(t *testing.T) {
	tests := []struct {
		name    string
		content string
		want    []string
	}{
		{"duplicate token", "s3cret-a,c1\n# comment\n\ns3cret-a,c2\n", []string{":4:", "duplicate token (first on line 1)"}},
		{"missing cluster", "s3cret-a\n", []string{":1:", "want token,cluster"}},
		{"empty cluster", "s3cret-a, \n", []string{":1:", "empty cluster"}},
		{"bad expiry", "ok,c1\ns3cret-a,c1,expires=tomorrow\n", []string{":2:", "RFC 3339"}},
		{"unknown third field", "s3cret-a,c1,ttl=1h\n", []string{":1:", "expires="}},
		{"too many fields", "s3cret-a,c1,expires=2030-01-01T00:00:00Z,x\n", []string{":1:", "4 fields"}},
		{"several errors", "s3cret-a\n\ns3cret-b,\n", []string{":1:", ":3:"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := server.DefaultConfig()
			cfg.Store, cfg.TokensFile = server.StoreMemory, writeTokens(t, tc.content)
			_, err := server.New(cfg, server.Deps{Store: memStore(t)})
			if err == nil {
				t.Fatal("New succeeded, want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("error %q echoes a token", err)
			}
		})
	}
	t.Run("missing file", func(t *testing.T) {
		cfg := server.DefaultConfig()
		cfg.TokensFile = filepath.Join(t.TempDir(), "nope")
		if _, err := server.New(cfg, server.Deps{Store: memStore(t)}); err == nil || !strings.Contains(err.Error(), "tokens file") {
			t.Errorf("got %v, want a tokens file error", err)
		}
	})
}

func TestTokensFileReloadsWhenItChanges(t *testing.T) {
	path := writeTokens(t, tokensFile)
	addr, logs := startAuthServer(t, func(c *server.Config) { c.TokensFile = path })
	c := plaintext(t, addr)
	ctx := t.Context()
	list := func(tok string) error {
		_, err := c.ListTargets(bearer(ctx, tok), &pb.ListTargetsRequest{})
		return err
	}
	if err := list("tok-c1"); err != nil {
		t.Fatal(err)
	}
	rewrite := func(content string, age time.Duration) {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		// A distinct modification time even on coarse file systems.
		mt := time.Now().Add(age)
		if err := os.Chtimes(path, mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	rewrite("tok-new,c3\n", time.Minute)
	deadline := time.Now().Add(15 * time.Second)
	for list("tok-new") != nil {
		if time.Now().After(deadline) {
			t.Fatalf("the new token never worked:\n%s", logs)
		}
		time.Sleep(100 * time.Millisecond)
	}
	wantCode(t, "a removed token", list("tok-c1"), codes.Unauthenticated)

	// A broken file leaves the previous tokens in force and says so in the log.
	rewrite("tok-new\n", 2*time.Minute)
	deadline = time.Now().Add(15 * time.Second)
	for !strings.Contains(logs.String(), "tokens file not reloaded") {
		if time.Now().After(deadline) {
			t.Fatalf("no reload error logged:\n%s", logs)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := list("tok-new"); err != nil {
		t.Errorf("after a broken reload: %v", err)
	}
}

func TestTLSCertificateReloadsWhenItChanges(t *testing.T) {
	p := newPKI(t)
	addr, _ := startAuthServer(t, func(c *server.Config) { c.TLSCert, c.TLSKey = p.certFile, p.keyFile })
	served := func() *big.Int {
		conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: p.ca.Pool(), NextProtos: []string{"h2"}, MinVersion: tls.VersionTLS12})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber
	}
	before := served()
	next := p.writeServerCert(t)
	mt := time.Now().Add(time.Minute)
	for _, f := range []string{p.certFile, p.keyFile} {
		if err := os.Chtimes(f, mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := served()
		if got.Cmp(next.Leaf.SerialNumber) == 0 {
			break
		}
		if got.Cmp(before) != 0 || time.Now().After(deadline) {
			t.Fatalf("serving serial %v, want %v (was %v)", got, next.Leaf.SerialNumber, before)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The gRPC service still works over the new certificate.
	if _, err := tlsClient(t, addr, p.ca, nil).ListTargets(t.Context(), &pb.ListTargetsRequest{}); err != nil {
		t.Errorf("after reload: %v", err)
	}
}

func TestOpenModeSaysSo(t *testing.T) {
	p := newPKI(t)
	tests := []struct {
		name   string
		mutate func(*server.Config)
		warned bool
	}{
		{"plaintext, no auth", func(*server.Config) {}, true},
		{"TLS without client auth", func(c *server.Config) { c.TLSCert, c.TLSKey = p.certFile, p.keyFile }, true},
		{"tokens", func(c *server.Config) { c.TokensFile = writeTokens(t, tokensFile) }, false},
		{"mTLS", func(c *server.Config) { c.TLSCert, c.TLSKey, c.ClientCA = p.certFile, p.keyFile, p.ca.CertFile }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, logs := startAuthServer(t, tc.mutate)
			deadline := time.Now().Add(5 * time.Second)
			for !strings.Contains(logs.String(), "msg=serving") && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if got := strings.Contains(logs.String(), "running without authentication"); got != tc.warned {
				t.Errorf("warned %v, want %v:\n%s", got, tc.warned, logs)
			}
		})
	}
	// Open mode keeps "default" for an empty cluster and lets anyone read anything.
	addr, _ := startAuthServer(t)
	c := plaintext(t, addr)
	if _, err := c.Recommend(t.Context(), request(t, "", "shop", "web")); err != nil {
		t.Fatal(err)
	}
	if diff := cmpStrings(listNames(t, t.Context(), c, &pb.ListTargetsRequest{}), []string{"default/shop/web"}); diff != "" {
		t.Errorf("open mode: %s", diff)
	}
}

func TestConfigValidatesRateLimit(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*server.Config)
		want   string
	}{
		{"negative rate", func(c *server.Config) { c.RateLimit = -1 }, "--rate-limit"},
		{"infinite rate", func(c *server.Config) { c.RateLimit = math.Inf(1) }, "--rate-limit"},
		{"no burst", func(c *server.Config) { c.RateLimit, c.RateBurst = 5, 0 }, "--rate-burst"},
		{"valid", func(c *server.Config) { c.RateLimit, c.RateBurst, c.TokensFile = 5, 1, "tokens" }, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := server.DefaultConfig()
			tc.mutate(&cfg)
			err := cfg.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("got %v, want no error", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want an error naming %s", err, tc.want)
			}
		})
	}
}

func memStore(t *testing.T) store.Store {
	st := memstore.New()
	t.Cleanup(func() { st.Close() })
	return st
}

// TestCallLogging: a successful call is logged at debug only, a client error at info with its
// code and method, and health checks never.
func TestCallLogging(t *testing.T) {
	for _, level := range []slog.Level{slog.LevelDebug, slog.LevelInfo} {
		t.Run(level.String(), func(t *testing.T) {
			st, err := boltstore.Open(filepath.Join(t.TempDir(), "db"), boltstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			logs := &syncBuffer{}
			cfg := server.DefaultConfig()
			addr, stop := servertest.Start(t, cfg, server.Deps{Store: st,
				Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: level}))})
			c := plaintext(t, addr)
			if _, err := c.Recommend(t.Context(), request(t, "", "ns", "web")); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Recommend(t.Context(), &pb.RecommendRequest{}); status.Code(err) != codes.InvalidArgument {
				t.Fatalf("empty request: %v, want InvalidArgument", err)
			}
			conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := healthpb.NewHealthClient(conn).Check(t.Context(), &healthpb.HealthCheckRequest{}); err != nil {
				t.Fatal(err)
			}
			stop()
			var finished []string
			for _, line := range strings.Split(logs.String(), "\n") {
				if strings.Contains(line, "finished call") {
					finished = append(finished, line)
				}
			}
			want := 1
			if level == slog.LevelDebug {
				want = 2
			}
			if len(finished) != want {
				t.Fatalf("%d call lines at %s, want %d:\n%s", len(finished), level, want, logs)
			}
			failed := finished[len(finished)-1]
			for _, s := range []string{"level=INFO", "grpc.service=recommender.v1.RecommenderService", "grpc.method=Recommend", "grpc.code=InvalidArgument", "peer.address=127.0.0.1:", "grpc.time_ms="} {
				if !strings.Contains(failed, s) {
					t.Errorf("failed call's line lacks %q: %s", s, failed)
				}
			}
			if level == slog.LevelDebug && (!strings.Contains(finished[0], "level=DEBUG") || !strings.Contains(finished[0], "grpc.code=OK")) {
				t.Errorf("successful call's line: %s", finished[0])
			}
		})
	}
}

// TestClientCAReloadsWhenItChanges: with mTLS, replacing the --client-ca file takes effect
// without a restart: a client of the new CA gets in, one of the old CA no longer does.
func TestClientCAReloadsWhenItChanges(t *testing.T) {
	p := newPKI(t)
	caFile := filepath.Join(t.TempDir(), "client-ca.pem")
	copyFile(t, p.ca.CertFile, caFile)
	addr, _ := startAuthServer(t, func(c *server.Config) { c.TLSCert, c.TLSKey, c.ClientCA = p.certFile, p.keyFile, caFile })
	list := func(cert tls.Certificate) error {
		_, err := tlsClient(t, addr, p.ca, &cert).ListTargets(t.Context(), &pb.ListTargetsRequest{})
		return err
	}
	if err := list(p.c1); err != nil {
		t.Fatalf("client of the first CA: %v", err)
	}
	next := certgen.New(t, "hpa-ca-2")
	c1Next := clientCert(t, next, "c1", "spiffe://hpa/cluster/c1")
	if err := list(c1Next); err == nil {
		t.Fatal("a client of the second CA got in before the CA file changed")
	}
	copyFile(t, next.CertFile, caFile)
	mt := time.Now().Add(time.Minute)
	if err := os.Chtimes(caFile, mt, mt); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for err := list(c1Next); err != nil; err = list(c1Next) {
		if time.Now().After(deadline) {
			t.Fatalf("client of the second CA still refused after the CA file changed: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := list(p.c1); err == nil {
		t.Error("a client of the replaced CA still gets in")
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
