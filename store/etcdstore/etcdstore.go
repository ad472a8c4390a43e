package etcdstore

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/hpa-recommender/hpa-recommender/store"
	"github.com/hpa-recommender/hpa-recommender/store/internal/codec"
)

// Config configures the etcd store. Endpoints is required; the zero value of every other field
// gives its default.
type Config struct {
	// Endpoints are the etcd client URLs, e.g. "http://127.0.0.1:2379". Required.
	Endpoints []string
	// Prefix is the key prefix every key of this store lives under. Default DefaultPrefix; a
	// trailing "/" is added when missing. Stores that must not see each other's targets need
	// prefixes neither of which is a path prefix of the other.
	Prefix string
	// DialTimeout bounds New: connecting and the schema check. Default 5s.
	DialTimeout time.Duration
	// RequestTimeout bounds every request to etcd; when it expires the call fails with
	// ErrUnavailable. Default 5s. (The etcd client waits for a connection rather than failing
	// fast, so without it a call would wait as long as its context allows.)
	RequestTimeout time.Duration
	// MaxAttempts is how many compare-and-swap attempts one Update makes before it gives up
	// with ErrConflict. Default 16.
	MaxAttempts int
	// TLS, when set, is used to connect to etcd.
	TLS *tls.Config
	// Username and Password authenticate to etcd when set.
	Username, Password string
	// Logger receives the etcd client's logs. Default none: every failure is returned.
	Logger *zap.Logger
	// CompactionInterval is how often the store compacts etcd's history. etcd keeps every
	// version of every key until it is compacted, and this store writes a target's record at
	// every decision, so without compaction etcd's database grows with every Recommend until
	// it reaches its space quota (2 GiB by default) and refuses every write after. At each
	// tick the store compacts to the revision it saw at the tick before, so every key keeps
	// its versions of the last interval. Compaction is cluster-wide: it drops the history of
	// every key in that etcd, not only this store's. Between compactions etcd holds one to two
	// intervals of writes: at a 10k-target fleet's rate (~4 MB a second of records) one
	// minute, the default DefaultCompactionInterval, held 0.56 GB (measured), and kube-apiserver's
	// five minutes would hold up to 2.4 GB, past the default quota. Negative: never, for an
	// etcd that compacts itself (--auto-compaction-retention) or that software needing longer
	// history shares.
	// Replicas sharing an etcd each compact; a compaction another one made first is no error.
	CompactionInterval time.Duration
	// DecisionLog bounds each target's decision log (store/decisions.go); zero fields: no
	// bound.
	DecisionLog store.DecisionLogLimits
	// OnCompact, when set, is called after each compaction the store asks etcd for, with the
	// revision and the request's error (nil when etcd compacted, or had already compacted past
	// it). It must not block.
	OnCompact func(rev int64, err error)
}

// Defaults for Config.
const (
	DefaultPrefix         = "/hpa-recommender"
	DefaultDialTimeout    = 5 * time.Second
	DefaultRequestTimeout = 5 * time.Second
	DefaultMaxAttempts    = 16
	// DefaultCompactionInterval is Config.CompactionInterval's default.
	DefaultCompactionInterval = time.Minute
)

const (
	// listBatch is the smallest range read List makes when a filter is not a key prefix
	// (namespace without cluster), so sparse matches do not cost a round trip each.
	listBatch = 256
	// gcBatch bounds the targets one DeleteUnseenSince range read returns.
	gcBatch = 256
	// gcTxnOps bounds the guarded deletions in one Txn; etcd's default --max-txn-ops is 128.
	gcTxnOps = 64
	// lockStripes is how many in-process locks serialize Updates by key (see Store.stripes).
	lockStripes = 64
	// maxBackoff caps the jittered wait between compare-and-swap attempts.
	maxBackoff = 64 * time.Millisecond
)

// Store is a store.Store in etcd.
type Store struct {
	client *clientv3.Client
	kv     clientv3.KV
	keys   keys
	cfg    Config
	// stripes serialize the Updates of one key within this process, so compare-and-swap only
	// races other processes: without them, many goroutines on one hot key keep invalidating
	// each other's reads and exhaust MaxAttempts. Each is a one-slot semaphore, so waiting
	// honours the context.
	stripes [lockStripes]chan struct{}
	seed    maphash.Seed

	closed     atomic.Bool
	closeOnce  sync.Once
	closeErr   error
	compaction compactor // see compact.go
}

var _ store.Store = (*Store)(nil)

// New connects to etcd and opens the store under cfg.Prefix: it writes the schema version
// under an empty prefix, or checks the one found and refuses, with an error wrapping
// ErrUnsupportedSchema, a newer version or a prefix holding other keys. The first store to open
// a prefix an older release wrote rewrites its records of older formats (upgrade.go), each
// request under cfg.RequestTimeout. It fails with an error wrapping store.ErrUnavailable when
// etcd does not answer within cfg.DialTimeout.
func New(ctx context.Context, cfg Config) (*Store, error) {
	if len(cfg.Endpoints) == 0 {
		return nil, errors.New("open etcd store: no endpoints")
	}
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultPrefix
	}
	if !strings.HasSuffix(cfg.Prefix, "/") {
		cfg.Prefix += "/"
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = DefaultDialTimeout
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = DefaultMaxAttempts
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	client, err := clientv3.New(clientv3.Config{
		Endpoints:   cfg.Endpoints,
		DialTimeout: cfg.DialTimeout,
		// Keepalives notice a silently dead connection (a vanished host) so the client
		// moves to another endpoint instead of timing out every request for minutes.
		// etcd accepts pings every 5s by default (--grpc-keepalive-min-time).
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: 5 * time.Second,
		TLS:                  cfg.TLS,
		Username:             cfg.Username,
		Password:             cfg.Password,
		Logger:               cfg.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("open etcd store %v: %w", cfg.Endpoints, translateErr(cfg.Endpoints, err))
	}
	s := &Store{client: client, kv: client.KV, keys: newKeys(cfg.Prefix), cfg: cfg, seed: maphash.MakeSeed()}
	for i := range s.stripes {
		s.stripes[i] = make(chan struct{}, 1)
	}
	openCtx, cancel := context.WithTimeoutCause(ctx, cfg.DialTimeout, timeoutError{cfg.DialTimeout})
	defer cancel()
	if err := s.checkSchema(openCtx); err != nil {
		_ = client.Close()
		if !errors.Is(err, ErrUnsupportedSchema) {
			err = s.translate(ctx, openCtx, err)
		}
		if errors.Is(err, store.ErrUnavailable) && cfg.TLS != nil {
			// The etcd client retries a failed handshake until the deadline and reports only
			// the timeout; a handshake of our own says why (unknown CA, certificate required).
			if herr := probeTLS(cfg.Endpoints[0], cfg.TLS); herr != nil {
				err = fmt.Errorf("%w; TLS with %s: %w", err, cfg.Endpoints[0], herr)
			}
		}
		return nil, fmt.Errorf("open etcd store %v prefix %q: %w", cfg.Endpoints, cfg.Prefix, err)
	}
	if err := s.upgradeRecords(ctx); err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("open etcd store %v prefix %q: rewrite records of older formats: %w", cfg.Endpoints, cfg.Prefix, err)
	}
	s.startCompacting()
	return s, nil
}

// probeTLS makes one TLS handshake with endpoint and returns its error, or nil. After the
// handshake it waits briefly for an alert: with TLS 1.3 a server that refuses the client's
// certificate (or its absence) says so only then.
func probeTLS(endpoint string, tc *tls.Config) error {
	host := endpoint
	if u, err := url.Parse(endpoint); err == nil && u.Host != "" {
		host = u.Host
	}
	cfg := tc.Clone()
	if cfg.ServerName == "" {
		if h, _, err := net.SplitHostPort(host); err == nil {
			cfg.ServerName = h
		}
	}
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", host, cfg)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if _, err := conn.Read(make([]byte, 1)); err != nil {
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			return nil // no alert: the handshake was accepted
		}
		return err
	}
	return nil
}

// Prefix returns the normalized key prefix the store lives under.
func (s *Store) Prefix() string { return s.keys.prefix }

// ready returns the error a call must fail with before it starts: closed store, ended context.
func (s *Store) ready(ctx context.Context) error {
	if s.closed.Load() {
		return errClosed
	}
	return ctx.Err()
}

// call runs one etcd request under the request timeout and translates its error.
func call[T any](ctx context.Context, s *Store, req func(ctx context.Context) (T, error)) (T, error) {
	rctx, cancel := context.WithTimeoutCause(ctx, s.cfg.RequestTimeout, timeoutError{s.cfg.RequestTimeout})
	defer cancel()
	resp, err := req(rctx)
	if err != nil {
		var zero T
		return zero, s.translate(ctx, rctx, err)
	}
	return resp, nil
}

func decode(key store.Key, kv *mvccpb.KeyValue) (*store.Target, error) {
	t, _, err := codec.Unmarshal(kv.Value)
	if err != nil {
		return nil, err
	}
	t.Key, t.Revision = key, kv.ModRevision
	return t, nil
}

func firstKV(kvs []*mvccpb.KeyValue) *mvccpb.KeyValue {
	if len(kvs) == 0 {
		return nil
	}
	return kvs[0]
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, key store.Key) (*store.Target, error) {
	if err := codec.CheckKey(key); err != nil {
		return nil, err
	}
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	kv, err := s.read(ctx, s.keys.target(codec.EncodeKey(key)), false)
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", key, err)
	}
	if kv == nil {
		return nil, fmt.Errorf("get %s: %w", key, store.ErrNotFound)
	}
	t, err := decode(key, kv)
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", key, err)
	}
	return t, nil
}

// lock takes the in-process lock of the etcd key k, or returns the context's error.
func (s *Store) lock(ctx context.Context, k string) (unlock func(), err error) {
	ch := s.stripes[maphash.String(s.seed, k)%lockStripes]
	select {
	case ch <- struct{}{}:
		return func() { <-ch }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Update implements store.Store: read, fn, then a Txn that writes only if the key's
// ModRevision is still the one read (CreateRevision 0 when it was absent). On a lost race the
// Txn returns the current record, so a retry costs one round trip; after MaxAttempts lost
// races Update fails with ErrConflict. Calls for one key within this process take turns.
func (s *Store) Update(ctx context.Context, key store.Key, fn store.UpdateFunc) (*store.Target, error) {
	if err := codec.CheckKey(key); err != nil {
		return nil, err
	}
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	k := s.keys.target(codec.EncodeKey(key))
	unlock, err := s.lock(ctx, k)
	if err != nil {
		return nil, err
	}
	defer unlock()
	// The first read is serializable: the member answers from what it has applied, without
	// asking a quorum whether that is current (a linearizable read costs a heartbeat round on
	// every member). A stale answer costs a retry, never a wrong result: a write is guarded by the revision read, compared through
	// the leader, and a mismatch returns the current value; an answer without a write (fn's
	// error, or nothing to change) is only given from a linearizable read.
	kv, err := s.read(ctx, k, true)
	if err != nil {
		return nil, fmt.Errorf("update %s: %w", key, err)
	}
	fresh := false // kv is known current: read linearizably, or returned by a failed guard
	for attempt := 1; ; attempt++ {
		var cur *store.Target
		guard := clientv3.Compare(clientv3.CreateRevision(k), "=", 0)
		if kv != nil {
			if cur, err = decode(key, kv); err != nil {
				return nil, fmt.Errorf("update %s: %w", key, err)
			}
			guard = clientv3.Compare(clientv3.ModRevision(k), "=", kv.ModRevision)
		}
		next, err := fn(cur)
		if (err != nil || next == nil) && !fresh {
			if kv, err = s.read(ctx, k, false); err != nil {
				return nil, fmt.Errorf("update %s: %w", key, err)
			}
			fresh = true
			continue
		}
		if err != nil {
			return nil, err
		}
		if next == nil {
			if kv == nil {
				return nil, nil
			}
			return decode(key, kv) // afresh: fn may have changed cur
		}
		withKey := *next
		withKey.Key = key
		logOps, err := s.writeDecisions(ctx, codec.EncodeKey(key), &withKey)
		if err != nil {
			return nil, fmt.Errorf("update %s: %w", key, err)
		}
		enc, err := codec.Marshal(&withKey, 0) // Revision is the key's ModRevision, not stored
		if err != nil {
			return nil, fmt.Errorf("update %s: %w", key, err)
		}
		ops := append([]clientv3.Op{clientv3.OpPut(k, string(enc))}, logOps...)
		txn, err := call(ctx, s, func(ctx context.Context) (*clientv3.TxnResponse, error) {
			return s.kv.Txn(ctx).If(guard).Then(ops...).Else(clientv3.OpGet(k)).Commit()
		})
		if err != nil {
			return nil, fmt.Errorf("update %s: %w", key, err)
		}
		if txn.Succeeded {
			withKey.Revision = txn.Header.Revision // the Txn's revision is the one its Put wrote
			return &withKey, nil
		}
		if attempt >= s.cfg.MaxAttempts {
			return nil, fmt.Errorf("update %s: still racing other writers after %d attempts: %w",
				key, attempt, store.ErrConflict)
		}
		kv, fresh = firstKV(txn.Responses[0].GetResponseRange().Kvs), true
		if err := sleep(ctx, backoff(attempt)); err != nil {
			return nil, err
		}
	}
}

// read returns key k's value (nil when absent), read serializably (from the member's applied
// state, which may lag) or linearizably.
func (s *Store) read(ctx context.Context, k string, serializable bool) (*mvccpb.KeyValue, error) {
	var opts []clientv3.OpOption
	if serializable {
		opts = append(opts, clientv3.WithSerializable())
	}
	resp, err := call(ctx, s, func(ctx context.Context) (*clientv3.GetResponse, error) { return s.kv.Get(ctx, k, opts...) })
	if err != nil {
		return nil, err
	}
	return firstKV(resp.Kvs), nil
}

// backoff is the jittered wait after the attempt-th lost race: nothing after the first (the
// Txn returned the fresh record), then up to 1ms, 2ms, ... maxBackoff, so writers that keep
// colliding spread out.
func backoff(attempt int) time.Duration {
	if attempt < 2 {
		return 0
	}
	ceiling := min(time.Millisecond<<min(attempt-2, 16), maxBackoff)
	return rand.N(ceiling) + 1
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Delete implements store.Store.
func (s *Store) Delete(ctx context.Context, key store.Key) error {
	if err := codec.CheckKey(key); err != nil {
		return err
	}
	if err := s.ready(ctx); err != nil {
		return err
	}
	enc := codec.EncodeKey(key)
	k := s.keys.target(enc)
	txn, err := call(ctx, s, func(ctx context.Context) (*clientv3.TxnResponse, error) {
		return s.kv.Txn(ctx).Then(clientv3.OpDelete(k), clientv3.OpDelete(s.keys.decisionsOf(enc), clientv3.WithPrefix())).Commit()
	})
	if err != nil {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	if txn.Responses[0].GetResponseDeleteRange().Deleted == 0 {
		return fmt.Errorf("delete %s: %w", key, store.ErrNotFound)
	}
	return nil
}

// List implements store.Store with ordered range reads from the page token's key, each asking
// for one page plus the token's own key plus one more (to know whether a next page exists).
func (s *Store) List(ctx context.Context, opts store.ListOptions) ([]store.TargetSummary, string, error) {
	r, err := codec.ListRange(opts)
	if err != nil {
		return nil, "", err
	}
	if err := s.ready(ctx); err != nil {
		return nil, "", err
	}
	limit := int64(r.PageSize + 2)
	if opts.Cluster == "" && opts.Namespace != "" {
		limit = max(limit, listBatch)
	}
	from := s.keys.target(r.Seek)
	end := clientv3.GetPrefixRangeEnd(s.keys.target(r.Prefix))
	var out []store.TargetSummary
	for {
		resp, err := call(ctx, s, func(ctx context.Context) (*clientv3.GetResponse, error) {
			return s.kv.Get(ctx, from, clientv3.WithRange(end), clientv3.WithLimit(limit))
		})
		if err != nil {
			return nil, "", fmt.Errorf("list: %w", err)
		}
		for _, kv := range resp.Kvs {
			raw := kv.Key[len(s.keys.targets):]
			if r.Skip != nil && bytes.Equal(raw, r.Skip) {
				continue
			}
			key, err := codec.DecodeKey(raw)
			if err != nil {
				return nil, "", fmt.Errorf("list: stored key %q: %w", kv.Key, err)
			}
			if !opts.Matches(key) {
				continue
			}
			if len(out) == r.PageSize {
				return out, codec.EncodePageToken(out[len(out)-1].Key), nil
			}
			t, err := decode(key, kv)
			if err != nil {
				return nil, "", fmt.Errorf("list: %w", err)
			}
			out = append(out, t.Summary())
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return out, "", nil
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// DeleteUnseenSince implements store.Store: range reads find the targets unseen since cutoff,
// then Txns delete them, each deletion guarded by the ModRevision the read saw, so a target
// another replica updated meanwhile is kept, and two replicas collecting at once each count
// only what they removed.
func (s *Store) DeleteUnseenSince(ctx context.Context, cutoff time.Time) (int, error) {
	return s.deleteUnseenSince(ctx, cutoff, nil)
}

// deleteUnseenSince is DeleteUnseenSince; tests pass beforeDelete to act between a range read
// and its deletions.
func (s *Store) deleteUnseenSince(ctx context.Context, cutoff time.Time, beforeDelete func()) (int, error) {
	if err := s.ready(ctx); err != nil {
		return 0, err
	}
	from, end := s.keys.targets, clientv3.GetPrefixRangeEnd(s.keys.targets)
	removed := 0
	for {
		resp, err := call(ctx, s, func(ctx context.Context) (*clientv3.GetResponse, error) {
			return s.kv.Get(ctx, from, clientv3.WithRange(end), clientv3.WithLimit(gcBatch))
		})
		if err != nil {
			return removed, fmt.Errorf("collect unseen targets: %w", err)
		}
		var doomed []clientv3.Op
		for _, kv := range resp.Kvs {
			seen, err := codec.LastSeen(kv.Value)
			if err != nil {
				return removed, fmt.Errorf("collect unseen targets: stored key %q: %w", kv.Key, err)
			}
			if seen.Before(cutoff) {
				k := string(kv.Key)
				log := s.keys.decisionsOf(kv.Key[len(s.keys.targets):])
				doomed = append(doomed, clientv3.OpTxn(
					[]clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(k), "=", kv.ModRevision)},
					[]clientv3.Op{clientv3.OpDelete(k), clientv3.OpDelete(log, clientv3.WithPrefix())}, nil))
			}
		}
		if beforeDelete != nil {
			beforeDelete()
		}
		for len(doomed) > 0 {
			chunk := doomed[:min(gcTxnOps, len(doomed))]
			doomed = doomed[len(chunk):]
			txn, err := call(ctx, s, func(ctx context.Context) (*clientv3.TxnResponse, error) {
				return s.kv.Txn(ctx).Then(chunk...).Commit()
			})
			if err != nil {
				return removed, fmt.Errorf("delete unseen targets: %w", err)
			}
			for _, r := range txn.Responses {
				if r.GetResponseTxn().GetSucceeded() {
					removed++
				}
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return removed, nil
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
		if err := ctx.Err(); err != nil {
			return removed, err
		}
	}
}

// Ping implements store.Store with a linearizable read of the schema version key, which needs
// a quorum with a leader: an etcd that answers it can serve every call.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.ready(ctx); err != nil {
		return err
	}
	_, err := call(ctx, s, func(ctx context.Context) (*clientv3.GetResponse, error) {
		return s.kv.Get(ctx, s.keys.version, clientv3.WithCountOnly())
	})
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrUnavailable) || ctx.Err() != nil:
		return fmt.Errorf("ping etcd store: %w", err)
	}
	// Whatever else keeps etcd from answering (auth, permissions) makes the store unusable too.
	return fmt.Errorf("ping etcd store: %w: %w", store.ErrUnavailable, err)
}

// Close implements store.Store. Calling it again does nothing.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.stopCompacting()
		s.closed.Store(true)
		if err := s.client.Close(); err != nil && !errors.Is(err, context.Canceled) {
			s.closeErr = fmt.Errorf("close etcd store: %w", translateErr(s.cfg.Endpoints, err))
		}
	})
	return s.closeErr
}
