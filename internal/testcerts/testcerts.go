// Package testcerts makes throwaway certificate authorities and the PEM files of certificates
// they sign, for tests that need real TLS.
package testcerts

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CA is a certificate authority valid for a day; CertFile is its certificate (PEM).
type CA struct {
	CertFile string
	cert     *x509.Certificate
	key      crypto.Signer
	dir      string
}

// New makes a CA named cn, with its files in a temporary directory of t.
func New(t testing.TB, cn string) *CA {
	t.Helper()
	ca := &CA{dir: t.TempDir()}
	ca.key = newKey(t)
	tmpl := template(cn)
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign
	tmpl.BasicConstraintsValid, tmpl.IsCA = true, true
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, ca.key.Public(), ca.key)
	if err != nil {
		t.Fatal(err)
	}
	if ca.cert, err = x509.ParseCertificate(der); err != nil {
		t.Fatal(err)
	}
	ca.CertFile = filepath.Join(ca.dir, "ca.pem")
	write(t, ca.CertFile, "CERTIFICATE", der)
	return ca
}

// Server signs a serving certificate for hosts (DNS names or IP addresses) and returns its
// certificate and key files, named after name.
func (ca *CA) Server(t testing.TB, name string, hosts ...string) (certFile, keyFile string) {
	t.Helper()
	tmpl := template(name)
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	return ca.sign(t, name, tmpl)
}

// Client signs a client certificate with common name cn and returns its certificate and key
// files, named after name.
func (ca *CA) Client(t testing.TB, name, cn string) (certFile, keyFile string) {
	t.Helper()
	tmpl := template(cn)
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	return ca.sign(t, name, tmpl)
}

func (ca *CA) sign(t testing.TB, name string, tmpl *x509.Certificate) (certFile, keyFile string) {
	key := newKey(t)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(ca.dir, name+".pem"), filepath.Join(ca.dir, name+"-key.pem")
	write(t, certFile, "CERTIFICATE", der)
	write(t, keyFile, "PRIVATE KEY", keyDER)
	return certFile, keyFile
}

func newKey(t testing.TB) crypto.Signer {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func template(cn string) *x509.Certificate {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		panic(err) // crypto/rand does not fail
	}
	now := time.Now()
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
	}
}

func write(t testing.TB, file, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
