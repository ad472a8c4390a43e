package main_test

import (
	"context"
	"errors"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/hpa-recommender/hpa-recommender/internal/certgen"
	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
	"github.com/hpa-recommender/hpa-recommender/server"
	"github.com/hpa-recommender/hpa-recommender/store"
	"github.com/hpa-recommender/hpa-recommender/store/etcdstore"
)

// startTLSEtcd starts a single-member etcd in the test process that serves clients over TLS
// with a certificate of ca and requires client certificates signed by ca; it returns the
// client URL.
func startTLSEtcd(t *testing.T, ca *certgen.CA) string {
	t.Helper()
	cfg := embed.NewConfig()
	cfg.Dir = t.TempDir()
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cfg.UnsafeNoFsync = true
	certFile, keyFile := ca.Server(t, "etcd", "127.0.0.1")
	cfg.ClientTLSInfo = transport.TLSInfo{CertFile: certFile, KeyFile: keyFile, TrustedCAFile: ca.CertFile, ClientCertAuth: true}
	client, _ := url.Parse("https://127.0.0.1:0")
	peer, _ := url.Parse("http://127.0.0.1:0")
	cfg.ListenClientUrls, cfg.ListenPeerUrls = []url.URL{*client}, []url.URL{*peer}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatalf("start etcd with TLS: %v", err)
	}
	t.Cleanup(e.Close)
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		t.Fatalf("etcd with TLS: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("etcd with TLS not ready after 60s")
	}
	return "https://" + e.Clients[0].Addr().String()
}

// TestEtcdOverTLS: against an etcd that requires client certificates, the binary with
// --etcd-ca, --etcd-cert and --etcd-key stores what it decides (read back from etcd through
// Config.EtcdTLS, the same configuration); without a client certificate, or trusting another
// CA, it refuses to start with an error naming the etcd store and the TLS failure.
func TestEtcdOverTLS(t *testing.T) {
	ca := certgen.New(t, "etcd-ca")
	endpoint := startTLSEtcd(t, ca)
	certFile, keyFile := ca.Client(t, "hpa-recommender", "hpa-recommender")
	base := []string{"--store", "etcd", "--etcd-endpoints", endpoint, "--etcd-prefix", "/tls"}

	p := startBinary(t, append(base, "--etcd-ca", ca.CertFile, "--etcd-cert", certFile, "--etcd-key", keyFile)...)
	client := pb.NewRecommenderServiceClient(dial(t, p.addr))
	target := &pb.TargetRef{Cluster: "c1", Namespace: "shop", Name: "web"}
	resp, err := client.Recommend(t.Context(), &pb.RecommendRequest{Target: target, Spec: mrSpec(t, `{}`), CurrentReplicas: 2, Metrics: queue(50)})
	if err != nil {
		t.Fatalf("Recommend through etcd over TLS: %v\n%s", err, p.stderr.String())
	}
	cfg := server.Config{EtcdEndpoints: []string{endpoint}, EtcdCA: ca.CertFile, EtcdCert: certFile, EtcdKey: keyFile}
	tc, err := cfg.EtcdTLS()
	if err != nil {
		t.Fatal(err)
	}
	st, err := etcdstore.New(t.Context(), etcdstore.Config{Endpoints: []string{endpoint}, Prefix: "/tls", TLS: tc})
	if err != nil {
		t.Fatalf("open the store over TLS: %v", err)
	}
	defer st.Close()
	got, err := st.Get(t.Context(), store.Key{Cluster: "c1", Namespace: "shop", Name: "web"})
	if err != nil {
		t.Fatalf("the decision is not in etcd: %v", err)
	}
	if got.LastDecision == nil || got.LastDecision.Decision.DesiredReplicas != resp.GetDesiredReplicas() {
		t.Errorf("etcd holds last decision %+v, the service answered %d", got.LastDecision, resp.GetDesiredReplicas())
	}
	p.term(t)

	other := certgen.New(t, "another-ca")
	for _, refused := range []struct {
		name, cause string
		args        []string
	}{
		{"no client certificate", "certificate required", []string{"--etcd-ca", ca.CertFile}},
		{"another CA", "certificate signed by unknown authority", []string{"--etcd-ca", other.CertFile, "--etcd-cert", certFile, "--etcd-key", keyFile}},
	} {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		args := append(append([]string{"--listen", "127.0.0.1:0", "--metrics-listen", ""}, base...), refused.args...)
		out, err := exec.CommandContext(ctx, binary, args...).CombinedOutput()
		cancel()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || !strings.Contains(string(out), "open etcd store") || !strings.Contains(string(out), refused.cause) {
			t.Errorf("%s: %v, want an exit naming the etcd store and %q; output:\n%s", refused.name, err, refused.cause, out)
		}
		t.Logf("%s: %s", refused.name, strings.TrimSpace(string(out)))
	}
}
