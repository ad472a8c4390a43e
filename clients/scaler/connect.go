package scaler

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"

	"github.com/hpa-recommender/hpa-recommender/clients/goclient"
)

// Dial connects to the service as cfg says: TLS or mTLS with certificates re-read when their
// files change, and the bearer token of TokenFile re-read when it changes. Recommend is never
// retried (goclient retries it only for dry runs); ReportScale is retried on Unavailable.
func Dial(cfg Config) (*goclient.Client, error) {
	opts := []goclient.Option{goclient.WithTimeout(cfg.RPCTimeout), goclient.WithRetries(2)}
	if cfg.useTLS() {
		tc, err := reloadingTLS(cfg.TLSCA, cfg.TLSCert, cfg.TLSKey)
		if err != nil {
			return nil, err
		}
		opts = append(opts, goclient.WithTLSConfig(tc))
		if cfg.TLSServerName != "" {
			opts = append(opts, goclient.WithServerName(cfg.TLSServerName))
		}
	} else if cfg.Insecure {
		opts = append(opts, goclient.WithInsecure())
	}
	if cfg.TokenFile != "" {
		tok := &fileToken{path: cfg.TokenFile, requireTLS: cfg.useTLS()}
		if _, err := tok.get(); err != nil {
			return nil, err
		}
		opts = append(opts, goclient.WithDialOptions(grpc.WithPerRPCCredentials(tok)))
	}
	return goclient.New(cfg.ServiceAddr, opts...)
}

// watchedFile caches a file's contents and re-reads it at most once a second (the files are
// small; a mounted Secret swaps a symlink, so modification times are not relied on). A file
// that cannot be read or is empty keeps the last good contents.
type watchedFile struct {
	path string

	mu      sync.Mutex
	checked time.Time
	data    []byte
}

// read returns the contents and whether they changed since the last read.
func (w *watchedFile) read() ([]byte, bool, error) {
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

// reloadingTLS returns a client tls.Config whose CA bundle and client certificate follow their
// files. The server certificate is verified in VerifyConnection against the current CA pool
// (Go's own verification runs against a fixed pool, hence InsecureSkipVerify with a full
// verification of our own: chain, name, and usage).
func reloadingTLS(caFile, certFile, keyFile string) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		ca := &watchedFile{path: caFile}
		var (
			mu   sync.Mutex
			pool *x509.CertPool
		)
		currentPool := func() (*x509.CertPool, error) {
			b, changed, err := ca.read()
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
		cf, kf := &watchedFile{path: certFile}, &watchedFile{path: keyFile}
		var (
			mu   sync.Mutex
			cert *tls.Certificate
		)
		current := func() (*tls.Certificate, error) {
			cb, c1, err := cf.read()
			if err != nil {
				return nil, fmt.Errorf("read client certificate: %w", err)
			}
			kb, c2, err := kf.read()
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

// fileToken is a per-RPC bearer token read from a file and re-read when it changes.
type fileToken struct {
	path       string
	requireTLS bool
	once       sync.Once
	f          *watchedFile
}

func (t *fileToken) get() (string, error) {
	t.once.Do(func() { t.f = &watchedFile{path: t.path} })
	b, _, err := t.f.read()
	if err != nil {
		return "", fmt.Errorf("read token file: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("token file %s is empty", t.path)
	}
	return tok, nil
}

func (t *fileToken) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	tok, err := t.get()
	if err != nil {
		return nil, err
	}
	return map[string]string{"authorization": "Bearer " + tok}, nil
}

func (t *fileToken) RequireTransportSecurity() bool { return t.requireTLS }
