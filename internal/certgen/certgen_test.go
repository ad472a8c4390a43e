package certgen

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"testing"
)

// TestLeavesVerify checks that server and client certificates chain to the CA's Pool for
// their own extended key usage only, carry the requested SANs, and match their keys.
func TestLeavesVerify(t *testing.T) {
	ca := New(t, "test CA")
	if b, err := os.ReadFile(ca.CertFile); err != nil || string(b) != string(ca.CertPEM) {
		t.Fatalf("CertFile does not hold CertPEM: %v", err)
	}
	certFile, keyFile := ca.Server(t, "server", "127.0.0.1", "recommender.test")
	srv, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	cliPEM, cliKey := ca.ClientPEM(t, "cluster-a", "spiffe://hpa/cluster/c1")
	cli := parse(t, cliPEM, cliKey)

	for _, c := range []struct {
		name string
		leaf *x509.Certificate
		opts x509.VerifyOptions
		ok   bool
	}{
		{"server by IP", srv.Leaf, x509.VerifyOptions{DNSName: "127.0.0.1"}, true},
		{"server by name", srv.Leaf, x509.VerifyOptions{DNSName: "recommender.test"}, true},
		{"server for another name", srv.Leaf, x509.VerifyOptions{DNSName: "other.test"}, false},
		{"server as a client", srv.Leaf, x509.VerifyOptions{KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, false},
		{"client", cli, x509.VerifyOptions{KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, true},
		{"client as a server", cli, x509.VerifyOptions{}, false},
		{"client of another CA", cli, x509.VerifyOptions{KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, Roots: New(t, "other").Pool()}, false},
	} {
		if c.opts.Roots == nil {
			c.opts.Roots = ca.Pool()
		}
		if _, err := c.leaf.Verify(c.opts); (err == nil) != c.ok {
			t.Errorf("%s: verify error %v, want ok=%v", c.name, err, c.ok)
		}
	}
	if cli.Subject.CommonName != "cluster-a" || len(cli.URIs) != 1 || cli.URIs[0].String() != "spiffe://hpa/cluster/c1" {
		t.Errorf("client certificate: CN %q, URIs %v", cli.Subject.CommonName, cli.URIs)
	}
}

// TestSignClientRefusesABadURI checks that a URI SAN that does not parse is an error.
func TestSignClientRefusesABadURI(t *testing.T) {
	ca, err := NewCA("test CA")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := ca.SignClient("c1", "spiffe://bad host/%zz"); err == nil {
		t.Error("SignClient accepted a URI that does not parse")
	}
}

// parse checks that certPEM and keyPEM are a pair and returns the certificate.
func parse(t *testing.T, certPEM, keyPEM []byte) *x509.Certificate {
	t.Helper()
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return c.Leaf
}
