package scaler

import (
	"crypto/tls"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hpa-recommender/hpa-recommender/internal/certgen"
	"github.com/hpa-recommender/hpa-recommender/internal/tlsfiles"
	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
	"github.com/hpa-recommender/hpa-recommender/server"
	"github.com/hpa-recommender/hpa-recommender/server/servertest"
)

// TestReloadingTLS checks that the CA bundle and the client certificate follow their files.
func TestReloadingTLS(t *testing.T) {
	dir := t.TempDir()
	ca1, ca2 := certgen.New(t, "ca1"), certgen.New(t, "ca2")
	caFile, certFile, keyFile := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	writeFile(t, dir, "ca.pem", string(ca1.CertPEM))
	c, k := ca1.ClientPEM(t, "cluster-a")
	writeFile(t, dir, "tls.crt", string(c))
	writeFile(t, dir, "tls.key", string(k))

	// A TLS server that requires a client certificate from ca1 and reports its CN; its own
	// certificate is swappable.
	sc1, sk1 := ca1.ServerPEM(t, "server", "127.0.0.1")
	sc2, sk2 := ca2.ServerPEM(t, "server", "127.0.0.1")
	pair1, _ := tls.X509KeyPair(sc1, sk1)
	pair2, _ := tls.X509KeyPair(sc2, sk2)
	serving := &pair1
	lis, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return serving, nil },
		ClientAuth:     tls.RequireAndVerifyClientCert,
		ClientCAs:      ca1.Pool(),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	cns := make(chan string, 10)
	go func() {
		for {
			conn, err := lis.Accept()
			if err != nil {
				return
			}
			tc := conn.(*tls.Conn)
			if err := tc.Handshake(); err == nil {
				cns <- tc.ConnectionState().PeerCertificates[0].Subject.CommonName
			}
			conn.Close()
		}
	}()

	tc, err := tlsfiles.Client(caFile, certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	dial := func() error {
		cfg := tc.Clone()
		cfg.ServerName = "127.0.0.1"
		conn, err := tls.Dial("tcp", lis.Addr().String(), cfg)
		if err != nil {
			return err
		}
		defer conn.Close()
		return conn.Handshake()
	}
	if err := dial(); err != nil {
		t.Fatalf("handshake: %v", err)
	}
	if cn := <-cns; cn != "cluster-a" {
		t.Errorf("client CN = %q, want cluster-a", cn)
	}

	// The client certificate is rotated: the next handshake presents the new one.
	c, k = ca1.ClientPEM(t, "cluster-b")
	writeFile(t, dir, "tls.crt", string(c))
	writeFile(t, dir, "tls.key", string(k))
	time.Sleep(1100 * time.Millisecond) // files are checked at most once a second
	if err := dial(); err != nil {
		t.Fatalf("handshake after rotating the client certificate: %v", err)
	}
	if cn := <-cns; cn != "cluster-b" {
		t.Errorf("client CN = %q, want the rotated cluster-b", cn)
	}

	// The server moves to ca2: refused until the CA bundle names ca2.
	serving = &pair2
	if err := dial(); err == nil {
		t.Fatal("handshake with a server certificate from an unknown CA succeeded")
	}
	writeFile(t, dir, "ca.pem", string(ca2.CertPEM))
	time.Sleep(1100 * time.Millisecond)
	if err := dial(); err != nil {
		t.Fatalf("handshake after rotating the CA bundle: %v", err)
	}
}

// TestReloadingTLSChecksName refuses a certificate for another name, which
// InsecureSkipVerify alone would accept.
func TestReloadingTLSChecksName(t *testing.T) {
	dir := t.TempDir()
	ca := certgen.New(t, "ca")
	writeFile(t, dir, "ca.pem", string(ca.CertPEM))
	sc, sk := ca.ServerPEM(t, "server", "127.0.0.1") // valid for 127.0.0.1 only
	pair, _ := tls.X509KeyPair(sc, sk)
	lis, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{pair}})
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	go func() {
		for {
			conn, err := lis.Accept()
			if err != nil {
				return
			}
			_ = conn.(*tls.Conn).Handshake()
			conn.Close()
		}
	}()
	tc, err := tlsfiles.Client(filepath.Join(dir, "ca.pem"), "", "")
	if err != nil {
		t.Fatal(err)
	}
	cfg := tc.Clone()
	cfg.ServerName = "recommender.example"
	conn, err := tls.Dial("tcp", lis.Addr().String(), cfg)
	if err == nil {
		conn.Close()
		t.Fatal("handshake with a certificate for another name succeeded")
	}
}

// TestDialTokenFile sends the token file's token and follows a rotation of the file.
func TestDialTokenFile(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "tokens", "good-token,c1\n")
	writeFile(t, dir, "token", "good-token\n")
	clk := realClock()
	cfg := server.DefaultConfig()
	cfg.TokensFile = filepath.Join(dir, "tokens")
	addr, _ := servertest.Start(t, cfg, server.Deps{Now: clk.Now})

	sc := DefaultConfig()
	sc.Cluster, sc.ManifestsDir, sc.ServiceAddr, sc.TokenFile = "c1", dir, addr, filepath.Join(dir, "token")
	if err := sc.Validate(); err != nil {
		t.Fatal(err)
	}
	client, err := Dial(sc)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	list := func() error {
		_, err := client.ListTargets(t.Context(), &pb.ListTargetsRequest{Cluster: "c1"})
		return err
	}
	if err := list(); err != nil {
		t.Fatalf("with the good token: %v", err)
	}
	writeFile(t, dir, "token", "rotated-away\n")
	time.Sleep(1100 * time.Millisecond) // re-read at most once a second
	if err := list(); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("after rotating the token file to an unknown token: %v, want Unauthenticated", err)
	}
}
