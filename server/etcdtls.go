package server

import (
	"crypto/tls"
	"fmt"
	"strings"

	"github.com/hpa-recommender/hpa-recommender/internal/tlsfiles"
)

// EtcdTLS is the TLS configuration of the etcd backend: nil (plaintext) unless --etcd-ca,
// --etcd-cert or --etcd-key is set or an endpoint is https://. The CA bundle, when given,
// replaces the system roots. It and the client certificate follow their files
// (tlsfiles.Client, as the scaler's connection to the service), so rotating them needs no
// restart.
func (c *Config) EtcdTLS() (*tls.Config, error) {
	https := false
	for _, e := range c.EtcdEndpoints {
		https = https || strings.HasPrefix(e, "https://")
	}
	if c.EtcdCA == "" && c.EtcdCert == "" && !https {
		return nil, nil
	}
	tc, err := tlsfiles.Client(c.EtcdCA, c.EtcdCert, c.EtcdKey)
	if err != nil {
		return nil, fmt.Errorf("--etcd-ca, --etcd-cert, --etcd-key: %w", err)
	}
	return tc, nil
}
