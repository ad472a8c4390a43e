package server

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/auth"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/hpa-recommender/hpa-recommender/internal/apiconv"
	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
	"github.com/hpa-recommender/hpa-recommender/store"
)

// Authentication and authorization.
//
// Identities come from a verified client certificate (--client-ca) or a bearer token
// (--tokens-file). With neither flag the server runs open: every caller may touch every
// target and an empty target.cluster is "default".
//
// With authentication on, every RPC but health and reflection needs an identity:
//   - A tenant (a certificate, or a token of a named cluster) touches only its own cluster's
//     targets. An empty target.cluster is filled with its cluster; another cluster is
//     PermissionDenied, and ListTargets shows only its own cluster.
//   - An admin (a token whose cluster is "*") may list and read every cluster, delete any
//     target, and call Recommend and ReportScale on behalf of a cluster; it has no cluster of
//     its own, so it must name target.cluster (an empty one is InvalidArgument). Certificates
//     never make an admin: a CA that issues cluster certificates should not thereby issue
//     admin rights.
//   - Simulate touches no stored data: any identity may call it.
//   - AdminService (Backup, admin.go) is an admin's only: a tenant is PermissionDenied. On a
//     server running open, every caller may call it, as every other RPC.
//
// With both --client-ca and --tokens-file, a client certificate is verified when given (an
// untrusted one fails the handshake) but not required: a verified certificate or a valid
// token suffices. When a bearer token is sent it must be valid, and it decides the identity
// (so an operator whose certificate names a cluster can act as admin with an admin token).

// Identity sources.
const (
	SourceMTLS  = "mtls"
	SourceToken = "token"
)

// adminCluster is the tokens-file cluster that makes a token an admin.
const adminCluster = "*"

// tokensPollInterval is how often the tokens file's modification time is checked.
const tokensPollInterval = 2 * time.Second

// Identity is the authenticated caller of an RPC.
type Identity struct {
	// Cluster is the caller's cluster; empty for an admin.
	Cluster string
	// Admin may read every cluster (a token of cluster "*").
	Admin bool
	// Source is SourceMTLS or SourceToken.
	Source string
}

type identityKey struct{}

// IdentityFrom returns the identity the auth interceptor put in ctx; false on a server
// running without authentication.
func IdentityFrom(ctx context.Context) (Identity, bool) {
	id, ok := ctx.Value(identityKey{}).(Identity)
	return id, ok
}

func (s *Server) authEnabled() bool { return s.cfg.ClientCA != "" || s.cfg.TokensFile != "" }

// authenticate is the auth interceptor's AuthFunc: it puts the caller's Identity in the
// context or fails with Unauthenticated. Messages never echo the credentials.
func (s *Server) authenticate(ctx context.Context) (context.Context, error) {
	id, err := s.identify(ctx)
	if err != nil {
		return nil, s.toStatus(ctx, "auth", err)
	}
	return context.WithValue(ctx, identityKey{}, id), nil
}

func (s *Server) identify(ctx context.Context) (Identity, error) {
	if vals := metadata.ValueFromIncomingContext(ctx, "authorization"); len(vals) > 0 {
		if s.tokens == nil {
			return Identity{}, &unauthenticated{"bearer tokens are not enabled on this server (no --tokens-file); use a client certificate"}
		}
		token, err := auth.AuthFromMD(ctx, "bearer")
		if err != nil || token == "" {
			return Identity{}, &unauthenticated{"malformed authorization header: want \"Bearer <token>\""}
		}
		return s.tokens.lookup(token, time.Now())
	}
	if s.cfg.ClientCA != "" {
		if cert := verifiedClientCert(ctx); cert != nil {
			cluster := certCluster(cert)
			if cluster == "" {
				return Identity{}, &unauthenticated{"the client certificate names no cluster (no URI SAN path and no CN)"}
			}
			return Identity{Cluster: cluster, Source: SourceMTLS}, nil
		}
	}
	if s.tokens != nil {
		return Identity{}, &unauthenticated{"missing credentials: send \"authorization: Bearer <token>\" or a client certificate"}
	}
	return Identity{}, &unauthenticated{"missing credentials: a client certificate is required"}
}

// verifiedClientCert is the leaf of the client's verified chain, nil without one.
func verifiedClientCert(ctx context.Context) *x509.Certificate {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return nil
	}
	info, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok || len(info.State.VerifiedChains) == 0 || len(info.State.VerifiedChains[0]) == 0 {
		return nil
	}
	return info.State.VerifiedChains[0][0]
}

// certCluster is the last path segment of the certificate's first URI SAN
// (spiffe://hpa/cluster/c1 is c1), else its CN.
func certCluster(cert *x509.Certificate) string {
	if len(cert.URIs) > 0 {
		if seg := path.Base(strings.TrimRight(cert.URIs[0].Path, "/")); seg != "" && seg != "." && seg != "/" {
			return seg
		}
	}
	return cert.Subject.CommonName
}

// authorizedKey is targetKey plus authorization: on a server with authentication it fills an
// empty cluster from the caller's identity and refuses another cluster's target.
func (s *Server) authorizedKey(ctx context.Context, ref *pb.TargetRef, field string) (store.Key, []apiconv.FieldViolation, error) {
	key, violations := targetKey(ref, field)
	if !s.authEnabled() {
		return key, violations, nil
	}
	id, ok := IdentityFrom(ctx)
	if !ok {
		return key, nil, &unauthenticated{"missing credentials"}
	}
	requested := ref.GetCluster()
	switch {
	case id.Admin && requested == "":
		if ref != nil {
			violations = append(violations, apiconv.FieldViolation{Field: field + ".cluster", Description: "Required value: an admin names the target's cluster"})
		}
	case id.Admin:
		key.Cluster = requested
	case requested == "" || requested == id.Cluster:
		key.Cluster = id.Cluster
	default:
		return key, nil, &permissionDenied{fmt.Sprintf("cluster %q may not touch targets of another cluster", id.Cluster)}
	}
	return key, violations, nil
}

// authorizedListCluster is the cluster filter ListTargets may use: a tenant's own (when it
// asks for none or for its own), any for an admin or an open server.
func (s *Server) authorizedListCluster(ctx context.Context, requested string) (string, error) {
	if !s.authEnabled() {
		return requested, nil
	}
	id, ok := IdentityFrom(ctx)
	switch {
	case !ok:
		return "", &unauthenticated{"missing credentials"}
	case id.Admin:
		return requested, nil
	case requested == "" || requested == id.Cluster:
		return id.Cluster, nil
	}
	return "", &permissionDenied{fmt.Sprintf("cluster %q may list only its own targets", id.Cluster)}
}

// tokenEntry is one line of the tokens file. Only the token's hash is kept.
type tokenEntry struct {
	hash    [sha256.Size]byte
	cluster string
	expires time.Time // zero: never
}

// tokenFile is the parsed --tokens-file, reloaded when it changes.
type tokenFile struct {
	path string

	mu      sync.RWMutex
	entries []tokenEntry
	loaded  fileStamp // the file behind entries
	failed  fileStamp // the last version that did not load, reported once
}

func loadTokenFile(p string) (*tokenFile, error) {
	tf := &tokenFile{path: p}
	if _, err := tf.reload(); err != nil {
		return nil, err
	}
	return tf, nil
}

// reload reads the file again if its modification time or size changed; on an error the
// previous tokens stay in force, and the same broken version is not reported twice. It
// reports whether it loaded new contents.
func (tf *tokenFile) reload() (bool, error) {
	st, err := stampOf(tf.path)
	tf.mu.RLock()
	unchanged := tf.entries != nil && (st == tf.loaded || st == tf.failed)
	tf.mu.RUnlock()
	switch {
	case err != nil:
		return false, fmt.Errorf("tokens file: %w", err)
	case unchanged:
		return false, nil
	}
	var entries []tokenEntry
	data, err := os.ReadFile(tf.path)
	if err == nil {
		entries, err = parseTokens(tf.path, data)
	}
	tf.mu.Lock()
	defer tf.mu.Unlock()
	if err != nil {
		tf.failed = st
		return false, fmt.Errorf("tokens file: %w", err)
	}
	tf.entries, tf.loaded = entries, st
	return true, nil
}

func (tf *tokenFile) count() int {
	tf.mu.RLock()
	defer tf.mu.RUnlock()
	return len(tf.entries)
}

// lookup finds the token, comparing its hash with every entry in constant time.
func (tf *tokenFile) lookup(token string, now time.Time) (Identity, error) {
	h := sha256.Sum256([]byte(token))
	tf.mu.RLock()
	var found *tokenEntry
	for i := range tf.entries {
		if subtle.ConstantTimeCompare(h[:], tf.entries[i].hash[:]) == 1 {
			found = &tf.entries[i]
		}
	}
	var e tokenEntry
	if found != nil {
		e = *found
	}
	tf.mu.RUnlock()
	switch {
	case found == nil:
		return Identity{}, &unauthenticated{"unknown bearer token"}
	case !e.expires.IsZero() && !now.Before(e.expires):
		return Identity{}, &unauthenticated{"bearer token expired"}
	case e.cluster == adminCluster:
		return Identity{Admin: true, Source: SourceToken}, nil
	}
	return Identity{Cluster: e.cluster, Source: SourceToken}, nil
}

// parseTokens parses "token,cluster[,expires=RFC3339]" lines; blank lines and lines starting
// with # are skipped. Errors name the file and line, never the token.
func parseTokens(name string, data []byte) ([]tokenEntry, error) {
	entries := []tokenEntry{}
	seen := map[[sha256.Size]byte]int{}
	var errs []error
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		bad := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("%s:%d: %s", name, n, fmt.Sprintf(format, args...)))
		}
		fields := strings.Split(line, ",")
		for i := range fields {
			fields[i] = strings.TrimSpace(fields[i])
		}
		if len(fields) < 2 || len(fields) > 3 {
			bad("want token,cluster[,expires=RFC3339], got %d fields", len(fields))
			continue
		}
		token, cluster := fields[0], fields[1]
		if token == "" {
			bad("empty token")
			continue
		}
		if strings.ContainsAny(token, " \t") {
			bad("the token contains white space")
			continue
		}
		if cluster == "" {
			bad("empty cluster (use * for an admin)")
			continue
		}
		if strings.ContainsAny(cluster, " \t") || (strings.Contains(cluster, "*") && cluster != adminCluster) {
			bad("invalid cluster %q", cluster)
			continue
		}
		e := tokenEntry{hash: sha256.Sum256([]byte(token)), cluster: cluster}
		if len(fields) == 3 {
			v, ok := strings.CutPrefix(fields[2], "expires=")
			if !ok {
				bad("the third field must be expires=RFC3339")
				continue
			}
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				bad("expires %q is not an RFC 3339 time (2026-12-31T23:59:59Z)", v)
				continue
			}
			e.expires = t
		}
		if first, dup := seen[e.hash]; dup {
			bad("duplicate token (first on line %d)", first)
			continue
		}
		seen[e.hash] = n
		entries = append(entries, e)
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", name, err))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return entries, nil
}

// watchTokens reloads the tokens file when its modification time changes (checked every
// tokensPollInterval) and on SIGHUP. A file that fails to parse leaves the old tokens in force.
func (s *Server) watchTokens(ctx context.Context) {
	if s.tokens == nil {
		return
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	tick := time.NewTicker(tokensPollInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
		case <-tick.C:
		}
		changed, err := s.tokens.reload()
		switch {
		case err != nil:
			s.log.Error("tokens file not reloaded; the previous tokens stay in force", "error", err)
		case changed:
			s.log.Info("tokens file reloaded", "path", s.tokens.path, "tokens", s.tokens.count())
		}
	}
}

type fileStamp struct {
	mod  time.Time
	size int64
}

func stampOf(p string) (fileStamp, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{fi.ModTime(), fi.Size()}, nil
}
