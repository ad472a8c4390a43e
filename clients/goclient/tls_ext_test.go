package goclient_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/hpa-recommender/hpa-recommender/clients/goclient"
	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

type certPair struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	der  []byte
}

func newCert(t *testing.T, cn string, parent *certPair, isCA bool, dns ...string) *certPair {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		DNSNames:     dns,
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IsCA:         isCA, BasicConstraintsValid: true,
	}
	signer, signerKey := tmpl, key
	if parent != nil {
		signer, signerKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &certPair{cert: cert, key: key, der: der}
}

// write stores the certificate and key as PEM files and returns their paths.
func (c *certPair) write(t *testing.T, dir, name string) (string, string) {
	t.Helper()
	keyDER, err := x509.MarshalECPrivateKey(c.key)
	if err != nil {
		t.Fatal(err)
	}
	certPath, keyPath := filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
	if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certPath, keyPath
}

// TestMutualTLS runs a real gRPC server that requires a client certificate from the test CA
// and checks that WithTLS, WithClientCertificate and WithBearerToken get through.
func TestMutualTLS(t *testing.T) {
	dir := t.TempDir()
	ca := newCert(t, "test CA", nil, true)
	srvCert := newCert(t, "recommender.test", ca, false, "recommender.test")
	cliCert := newCert(t, "cluster-a", ca, false)
	caPath, _ := ca.write(t, dir, "ca")
	cliPath, cliKey := cliCert.write(t, dir, "client")

	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	r := &recorder{calls: map[string]int{}}
	s := grpc.NewServer(
		grpc.Creds(credentials.NewTLS(&tls.Config{
			Certificates: []tls.Certificate{{Certificate: [][]byte{srvCert.der}, PrivateKey: srvCert.key}},
			ClientCAs:    pool,
			ClientAuth:   tls.RequireAndVerifyClientCert,
			MinVersion:   tls.VersionTLS12,
		})),
		grpc.UnaryInterceptor(r.intercept),
	)
	pb.RegisterRecommenderServiceServer(s, r)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	addr := lis.Addr().String()

	c := newClient(t, addr, goclient.WithTLS(caPath), goclient.WithServerName("recommender.test"),
		goclient.WithClientCertificate(cliPath, cliKey), goclient.WithBearerToken("tok"))
	if _, err := c.GetTarget(t.Context(), &pb.GetTargetRequest{}); err != nil {
		t.Fatalf("GetTarget over mTLS: %v", err)
	}
	if len(r.auth) != 1 || r.auth[0] != "Bearer tok" {
		t.Errorf("authorization = %q, want [Bearer tok]", r.auth)
	}

	// Without the client certificate the handshake fails.
	noCert := newClient(t, addr, goclient.WithTLS(caPath), goclient.WithServerName("recommender.test"), goclient.WithTimeout(2*time.Second))
	if _, err := noCert.GetTarget(t.Context(), &pb.GetTargetRequest{}); status.Code(err) != codes.Unavailable {
		t.Errorf("without a client certificate: %v, want Unavailable", err)
	}
}
