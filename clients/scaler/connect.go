package scaler

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"google.golang.org/grpc"

	"github.com/hpa-recommender/hpa-recommender/clients/goclient"
	"github.com/hpa-recommender/hpa-recommender/internal/tlsfiles"
)

// Dial connects to the service as cfg says: TLS or mTLS with certificates re-read when their
// files change, and the bearer token of TokenFile re-read when it changes. Recommend is never
// retried (goclient retries it only for dry runs); ReportScale is retried on Unavailable.
func Dial(cfg Config) (*goclient.Client, error) {
	opts := []goclient.Option{goclient.WithTimeout(cfg.RPCTimeout), goclient.WithRetries(2)}
	if cfg.useTLS() {
		tc, err := tlsfiles.Client(cfg.TLSCA, cfg.TLSCert, cfg.TLSKey)
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

// fileToken is a per-RPC bearer token read from a file and re-read when it changes.
type fileToken struct {
	path       string
	requireTLS bool
	once       sync.Once
	f          *tlsfiles.File
}

func (t *fileToken) get() (string, error) {
	t.once.Do(func() { t.f = tlsfiles.NewFile(t.path) })
	b, _, err := t.f.Read()
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
