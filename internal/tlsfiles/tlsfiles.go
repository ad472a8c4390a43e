package tlsfiles

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
)

// NewFile returns a File that reads path.
func NewFile(path string) *File { return &File{path: path} }

// File caches a file's contents and re-reads it at most once a second (the files are
// small; a mounted Secret swaps a symlink, so modification times are not relied on). A file
// that cannot be read or is empty keeps the last good contents.
type File struct {
	path string

	mu      sync.Mutex
	checked time.Time
	data    []byte
}

// Read returns the contents and whether they changed since the last read.
func (w *File) Read() ([]byte, bool, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.data != nil && time.Since(w.checked) < time.Second {
		return w.data, false, nil
	}
	w.checked = time.Now()
	b, err := os.ReadFile(w.path)
	if err != nil || len(b) == 0 {
		if w.data != nil {
			return w.data, false, nil
		}
		if err == nil {
			err = fmt.Errorf("%s is empty", w.path)
		}
		return nil, false, err
	}
	changed := !bytes.Equal(b, w.data)
	w.data = b
	return b, changed, nil
}

// caPool returns the CA bundle in caFile as a pool, read again when the file changes: a file
// without a PEM certificate (half written) keeps the last good pool. The first read must
// succeed.
func caPool(caFile string) (func() (*x509.CertPool, error), error) {
	ca := NewFile(caFile)
	var (
		mu   sync.Mutex
		pool *x509.CertPool
	)
	current := func() (*x509.CertPool, error) {
		b, changed, err := ca.Read()
		if err != nil {
			return nil, fmt.Errorf("read CA file: %w", err)
		}
		mu.Lock()
		defer mu.Unlock()
		if pool == nil || changed {
			p := x509.NewCertPool()
			if !p.AppendCertsFromPEM(b) {
				if pool != nil {
					return pool, nil // a half-written file: keep the last good pool
				}
				return nil, fmt.Errorf("no PEM certificate in CA file %s", caFile)
			}
			pool = p
		}
		return pool, nil
	}
	if _, err := current(); err != nil {
		return nil, err
	}
	return current, nil
}

// keyPair returns the certificate in certFile with the key in keyFile, loaded again when
// either file changes: a pair that does not load (mid-rotation) keeps the last good one. The
// first load must succeed. what names the pair in errors ("client", "TLS").
func keyPair(what, certFile, keyFile string) (func() (*tls.Certificate, error), error) {
	cf, kf := NewFile(certFile), NewFile(keyFile)
	var (
		mu   sync.Mutex
		cert *tls.Certificate
	)
	current := func() (*tls.Certificate, error) {
		cb, c1, err := cf.Read()
		if err != nil {
			return nil, fmt.Errorf("read %s certificate: %w", what, err)
		}
		kb, c2, err := kf.Read()
		if err != nil {
			return nil, fmt.Errorf("read %s key: %w", what, err)
		}
		mu.Lock()
		defer mu.Unlock()
		if cert == nil || c1 || c2 {
			c, err := tls.X509KeyPair(cb, kb)
			if err != nil {
				if cert != nil {
					return cert, nil // certificate and key mid-rotation: keep the last good pair
				}
				return nil, fmt.Errorf("load %s certificate: %w", what, err)
			}
			cert = &c
		}
		return cert, nil
	}
	if _, err := current(); err != nil {
		return nil, err
	}
	return current, nil
}

// Client returns a client tls.Config whose CA bundle (caFile; empty: the system roots) and
// client certificate (certFile and keyFile; empty: none) follow their files. The server
// certificate is verified in VerifyConnection against the current CA pool (Go's own
// verification runs against a fixed pool, hence InsecureSkipVerify with a full verification of
// our own: chain, name, and usage).
func Client(caFile, certFile, keyFile string) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		currentPool, err := caPool(caFile)
		if err != nil {
			return nil, err
		}
		tc.InsecureSkipVerify = true // verified below, against the current pool
		tc.VerifyConnection = func(cs tls.ConnectionState) error {
			p, err := currentPool()
			if err != nil {
				return err
			}
			if len(cs.PeerCertificates) == 0 {
				return errors.New("tls: the server sent no certificate")
			}
			inter := x509.NewCertPool()
			for _, c := range cs.PeerCertificates[1:] {
				inter.AddCert(c)
			}
			_, err = cs.PeerCertificates[0].Verify(x509.VerifyOptions{
				DNSName:       strings.TrimSuffix(cs.ServerName, "."),
				Roots:         p,
				Intermediates: inter,
				KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
			})
			return err
		}
	}
	if certFile != "" {
		current, err := keyPair("client", certFile, keyFile)
		if err != nil {
			return nil, err
		}
		tc.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return current() }
	}
	return tc, nil
}

// Server returns a server tls.Config whose certificate (certFile and keyFile) and, when caFile
// is set, the CA bundle that verifies client certificates follow their files, so that rotating
// them needs no restart: each handshake uses them as the files now stand. With a CA bundle,
// clientAuth says whether a client certificate is required.
func Server(certFile, keyFile, caFile string, clientAuth tls.ClientAuthType) (*tls.Config, error) {
	current, err := keyPair("TLS", certFile, keyFile)
	if err != nil {
		return nil, err
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return current() }}
	if caFile == "" {
		return tc, nil
	}
	currentPool, err := caPool(caFile)
	if err != nil {
		return nil, fmt.Errorf("client CA: %w", err)
	}
	tc.ClientAuth = clientAuth
	base := tc.Clone()
	tc.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		p, err := currentPool()
		if err != nil {
			return nil, err
		}
		c := base.Clone()
		c.ClientCAs = p
		return c, nil
	}
	return tc, nil
}
