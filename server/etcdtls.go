package server

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"strings"
)

// EtcdTLS is the TLS configuration of the etcd backend: nil (plaintext) unless --etcd-ca,
// --etcd-cert or --etcd-key is set or an endpoint is https://. The CA bundle, when given,
// replaces the system roots; the client certificate is read again when its files change, as
// the server's own (certReloader), so a rotated certificate needs no restart. A reload that
// fails is logged to log (nil: slog.Default()).
func (c *Config) EtcdTLS(log *slog.Logger) (*tls.Config, error) {
	https := false
	for _, e := range c.EtcdEndpoints {
		https = https || strings.HasPrefix(e, "https://")
	}
	if c.EtcdCA == "" && c.EtcdCert == "" && !https {
		return nil, nil
	}
	if log == nil {
		log = slog.Default()
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.EtcdCA != "" {
		pool, err := loadCertPool(c.EtcdCA)
		if err != nil {
			return nil, fmt.Errorf("--etcd-ca: %w", err)
		}
		tc.RootCAs = pool
	}
	if c.EtcdCert != "" {
		certs, err := newCertReloader(c.EtcdCert, c.EtcdKey, log)
		if err != nil {
			return nil, fmt.Errorf("--etcd-cert, --etcd-key: %w", err)
		}
		tc.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return certs.GetCertificate(nil)
		}
	}
	return tc, nil
}
