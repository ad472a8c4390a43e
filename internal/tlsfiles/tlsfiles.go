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

// Client returns a client tls.Config whose CA bundle (caFile; empty: the system roots) and
// client certificate (certFile and keyFile; empty: none) follow their files. The server certificate is verified in VerifyConnection against the current CA pool
// (Go's own verification runs against a fixed pool, hence InsecureSkipVerify with a full
// verification of our own: chain, name, and usage).
func Client(caFile, certFile, keyFile string) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		ca := NewFile(caFile)
		var (
			mu   sync.Mutex
			pool *x509.CertPool
		)
		currentPool := func() (*x509.CertPool, error) {
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
		if _, err := currentPool(); err != nil {
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
		cf, kf := NewFile(certFile), NewFile(keyFile)
		var (
			mu   sync.Mutex
			cert *tls.Certificate
		)
		current := func() (*tls.Certificate, error) {
			cb, c1, err := cf.Read()
			if err != nil {
				return nil, fmt.Errorf("read client certificate: %w", err)
			}
			kb, c2, err := kf.Read()
			if err != nil {
				return nil, fmt.Errorf("read client key: %w", err)
			}
			mu.Lock()
			defer mu.Unlock()
			if cert == nil || c1 || c2 {
				c, err := tls.X509KeyPair(cb, kb)
				if err != nil {
					if cert != nil {
						return cert, nil // certificate and key mid-rotation: keep the last good pair
					}
					return nil, fmt.Errorf("load client certificate: %w", err)
				}
				cert = &c
			}
			return cert, nil
		}
		if _, err := current(); err != nil {
			return nil, err
		}
		tc.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return current() }
	}
	return tc, nil
}
