package certgen

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CA is a certificate authority. CertPEM is its certificate; CertFile is that certificate
// written to a file, set only by New.
type CA struct {
	CertFile string
	CertPEM  []byte
	cert     *x509.Certificate
	key      crypto.Signer
	dir      string // where Server and Client write; set only by New
}

// New makes a CA named cn, with its files in a temporary directory of t.
func New(t testing.TB, cn string) *CA {
	t.Helper()
	ca, err := NewCA(cn)
	if err != nil {
		t.Fatal(err)
	}
	ca.dir = t.TempDir()
	ca.CertFile = filepath.Join(ca.dir, "ca.pem")
	write(t, ca.CertFile, ca.CertPEM)
	return ca
}

// NewCA makes a CA named cn in memory, for callers without a testing.TB. It has no
// directory: take its certificates from SignServer and SignClient, not Server and Client.
func NewCA(cn string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := template(cn)
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign
	tmpl.BasicConstraintsValid, tmpl.IsCA = true, true
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{CertPEM: encode("CERTIFICATE", der), cert: cert, key: key}, nil
}

// Pool returns a new pool holding only the CA's certificate.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

// SignServer signs a serving certificate with common name cn for hosts (DNS names or IP
// addresses) and returns it and its key as PEM.
func (ca *CA) SignServer(cn string, hosts ...string) (certPEM, keyPEM []byte, err error) {
	tmpl := template(cn)
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	return ca.sign(tmpl)
}

// SignClient signs a client certificate with common name cn and the URI SANs uris (such as
// spiffe://…) and returns it and its key as PEM.
func (ca *CA) SignClient(cn string, uris ...string) (certPEM, keyPEM []byte, err error) {
	tmpl := template(cn)
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	for _, s := range uris {
		u, err := url.Parse(s)
		if err != nil {
			return nil, nil, err
		}
		tmpl.URIs = append(tmpl.URIs, u)
	}
	return ca.sign(tmpl)
}

// ServerPEM is SignServer failing t on an error.
func (ca *CA) ServerPEM(t testing.TB, cn string, hosts ...string) (certPEM, keyPEM []byte) {
	t.Helper()
	certPEM, keyPEM, err := ca.SignServer(cn, hosts...)
	if err != nil {
		t.Fatal(err)
	}
	return certPEM, keyPEM
}

// ClientPEM is SignClient failing t on an error.
func (ca *CA) ClientPEM(t testing.TB, cn string, uris ...string) (certPEM, keyPEM []byte) {
	t.Helper()
	certPEM, keyPEM, err := ca.SignClient(cn, uris...)
	if err != nil {
		t.Fatal(err)
	}
	return certPEM, keyPEM
}

// Server signs a serving certificate with common name name for hosts (DNS names or IP
// addresses) and returns its certificate and key files, named after name. A second call
// with the same name replaces the files.
func (ca *CA) Server(t testing.TB, name string, hosts ...string) (certFile, keyFile string) {
	t.Helper()
	certPEM, keyPEM := ca.ServerPEM(t, name, hosts...)
	return ca.writePair(t, name, certPEM, keyPEM)
}

// Client signs a client certificate with common name cn and returns its certificate and key
// files, named after name. A second call with the same name replaces the files.
func (ca *CA) Client(t testing.TB, name, cn string) (certFile, keyFile string) {
	t.Helper()
	certPEM, keyPEM := ca.ClientPEM(t, cn)
	return ca.writePair(t, name, certPEM, keyPEM)
}

// writePair writes a certificate and its key into the CA's directory as name.pem and
// name-key.pem.
func (ca *CA) writePair(t testing.TB, name string, certPEM, keyPEM []byte) (certFile, keyFile string) {
	t.Helper()
	if ca.dir == "" {
		t.Fatal("certgen: Server and Client need a CA made by New")
	}
	certFile, keyFile = filepath.Join(ca.dir, name+".pem"), filepath.Join(ca.dir, name+"-key.pem")
	write(t, certFile, certPEM)
	write(t, keyFile, keyPEM)
	return certFile, keyFile
}

// sign gives tmpl a new key and the leaf key usages and signs it with the CA.
func (ca *CA) sign(tmpl *x509.Certificate) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return nil, nil, fmt.Errorf("certgen: sign %q: %w", tmpl.Subject.CommonName, err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return encode("CERTIFICATE", der), encode("PRIVATE KEY", keyDER), nil
}

// template is a certificate for cn with a random serial, valid from an hour ago until a day
// from now.
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

func encode(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func write(t testing.TB, file string, data []byte) {
	t.Helper()
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
