package etcdstore_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/hpa-recommender/hpa-recommender/recommender"
	"github.com/hpa-recommender/hpa-recommender/store"
	"github.com/hpa-recommender/hpa-recommender/store/etcdstore"
	"github.com/hpa-recommender/hpa-recommender/store/internal/codec"
	"github.com/hpa-recommender/hpa-recommender/store/storetest"
)

var prefixes atomic.Int64

// newPrefix returns a key prefix no other test uses.
func newPrefix() string {
	return fmt.Sprintf("/etcdstore-test/%d-%d/", time.Now().UnixNano(), prefixes.Add(1))
}

func open(t *testing.T, cfg etcdstore.Config) *etcdstore.Store {
	t.Helper()
	if cfg.Endpoints == nil {
		cfg.Endpoints = endpoints
	}
	s, err := etcdstore.New(t.Context(), cfg)
	if err != nil {
		t.Fatalf("New(%+v): %v", cfg, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// rawClient is a plain etcd client of the shared etcd, to look under the store or to write
// what it would not.
func rawClient(t *testing.T) *clientv3.Client {
	t.Helper()
	return clientOf(t, endpoints...)
}

// clientOf is a plain etcd client of the etcd at endpoints, closed when the test ends.
func clientOf(t *testing.T, endpoints ...string) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestStore runs the stores' shared suite.
func TestStore(t *testing.T) {
	raw := rawClient(t)
	storetest.Run(t, func(t *testing.T) store.Store {
		return open(t, etcdstore.Config{Prefix: newPrefix()})
	}, storetest.WithInvariant(func(t *testing.T, s store.Store) {
		checkLayout(t, raw, s.(*etcdstore.Store).Prefix())
	}))
}

// TestDecisionLog runs the decision log suite.
func TestDecisionLog(t *testing.T) {
	raw := rawClient(t)
	storetest.RunDecisionLog(t, func(t *testing.T, limits store.DecisionLogLimits) store.Store {
		return open(t, etcdstore.Config{Prefix: newPrefix(), DecisionLog: limits})
	}, storetest.WithInvariant(func(t *testing.T, s store.Store) {
		checkLayout(t, raw, s.(*etcdstore.Store).Prefix())
	}))
}

// checkLayout checks every key under prefix against schema.go: the schema version, and
// targets whose key decodes and whose record decodes to that key.
func checkLayout(t *testing.T, raw *clientv3.Client, prefix string) {
	t.Helper()
	resp, err := raw.Get(t.Context(), prefix, clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	sawVersion := false
	for _, kv := range resp.Kvs {
		rel := strings.TrimPrefix(string(kv.Key), prefix)
		switch rel {
		case "meta/schema_version":
			sawVersion = string(kv.Value) == strconv.Itoa(etcdstore.SchemaVersion)
			continue
		case "meta/record_format":
			if string(kv.Value) != "4" {
				t.Errorf("%q = %q, want \"4\"", kv.Key, kv.Value)
			}
			continue
		}
		if dk, ok := strings.CutPrefix(rel, "decisions/"); ok {
			checkDecision(t, raw, prefix, []byte(dk), kv.Value)
			continue
		}
		enc, ok := strings.CutPrefix(rel, "targets/")
		if !ok {
			t.Errorf("unexpected key %q under the store's prefix", kv.Key)
			continue
		}
		key, err := codec.DecodeKey([]byte(enc))
		if err != nil {
			t.Errorf("stored key %q: %v", kv.Key, err)
			continue
		}
		rec, _, err := codec.Unmarshal(kv.Value)
		if err != nil {
			t.Errorf("record of %s: %v", key, err)
		} else if rec.Key != key {
			t.Errorf("record under %s names %s", key, rec.Key)
		}
	}
	if !sawVersion {
		t.Errorf("no schema version %d under %q", etcdstore.SchemaVersion, prefix)
	}
}

// checkDecision checks a retired decision log entry: its key names a stored target and its
// Seq, and it decodes to that Seq.
func checkDecision(t *testing.T, raw *clientv3.Client, prefix string, dk, v []byte) {
	t.Helper()
	seq, err := codec.DecisionSeq(dk)
	if err != nil {
		t.Errorf("decision key %q: %v", dk, err)
		return
	}
	if _, err := codec.DecodeKey(dk[:len(dk)-8]); err != nil {
		t.Errorf("decision key %q: %v", dk, err)
		return
	}
	if resp, err := raw.Get(t.Context(), prefix+"targets/"+string(dk[:len(dk)-8])); err != nil || len(resp.Kvs) == 0 {
		t.Errorf("decision %q belongs to no stored target (%v)", dk, err)
	}
	if e, err := codec.UnmarshalDecision(v); err != nil || e.Seq != seq {
		t.Errorf("decision %q: seq %d, %v; want seq %d", dk, e.Seq, err, seq)
	}
}

func TestSchemaVersion(t *testing.T) {
	tests := []struct {
		name    string
		keys    map[string]string // relative to the prefix, written before New
		wantErr string            // "" = opens
	}{
		{name: "empty prefix"},
		{name: "current", keys: map[string]string{"meta/schema_version": "3"}},
		{name: "older, upgraded", keys: map[string]string{"meta/schema_version": "1"}}, // checkLayout wants the current one
		{name: "version 2, upgraded", keys: map[string]string{"meta/schema_version": "2"}},
		{name: "newer", keys: map[string]string{"meta/schema_version": "4"}, wantErr: "newer binary"},
		{name: "garbage", keys: map[string]string{"meta/schema_version": "one"}, wantErr: "corrupt schema version"},
		{name: "zero", keys: map[string]string{"meta/schema_version": "0"}, wantErr: "corrupt schema version"},
		{name: "someone else's keys", keys: map[string]string{"config": "x"}, wantErr: "not an hpa-recommender store"},
	}
	raw := rawClient(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prefix := newPrefix()
			for k, v := range tt.keys {
				if _, err := raw.Put(t.Context(), prefix+k, v); err != nil {
					t.Fatal(err)
				}
			}
			s, err := etcdstore.New(t.Context(), etcdstore.Config{Endpoints: endpoints, Prefix: prefix})
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				_ = s.Close()
				checkLayout(t, raw, prefix)
				return
			}
			if err == nil {
				_ = s.Close()
				t.Fatal("New succeeded, want a schema error")
			}
			if !errors.Is(err, etcdstore.ErrUnsupportedSchema) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("New error = %q, want ErrUnsupportedSchema mentioning %q", err, tt.wantErr)
			}
		})
	}
}

func TestPrefixesAreSeparate(t *testing.T) {
	base := strings.TrimSuffix(newPrefix(), "/")
	a := open(t, etcdstore.Config{Prefix: base + "/app"})    // normalized to .../app/
	b := open(t, etcdstore.Config{Prefix: base + "/apple/"}) // shares a string prefix, not a path prefix
	if a.Prefix() != base+"/app/" {
		t.Errorf("Prefix() = %q, want a trailing slash added", a.Prefix())
	}
	k := store.Key{Cluster: "c", Namespace: "ns", Name: "web"}
	put := func(s *etcdstore.Store, n int32) {
		t.Helper()
		if _, err := s.Update(t.Context(), k, func(*store.Target) (*store.Target, error) {
			return &store.Target{Spec: recommender.Spec{MaxReplicas: n}}, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	put(a, 1)
	put(b, 2)
	for _, tc := range []struct {
		s    *etcdstore.Store
		want int32
	}{{a, 1}, {b, 2}} {
		got, err := tc.s.Get(t.Context(), k)
		if err != nil || got.Spec.MaxReplicas != tc.want {
			t.Errorf("Get under %q = %+v, %v; want MaxReplicas %d", tc.s.Prefix(), got, err, tc.want)
		}
		sums, _, err := tc.s.List(t.Context(), store.ListOptions{})
		if err != nil || len(sums) != 1 {
			t.Errorf("List under %q = %v, %v; want its one target", tc.s.Prefix(), sums, err)
		}
	}
}

// counter adds one to Spec.MaxReplicas and records the count it saw in Reported, so a lost
// update shows as a short count or a repeated id.
// countTo updates key n times with counter and returns the target after the first update and
// after the last.
func countTo(t *testing.T, s *etcdstore.Store, key store.Key, n int) (first, last *store.Target) {
	t.Helper()
	for i := range n {
		tg, err := s.Update(t.Context(), key, counter)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = tg
		}
		last = tg
	}
	return first, last
}

func counter(cur *store.Target) (*store.Target, error) {
	if cur == nil {
		cur = &store.Target{}
	}
	id := fmt.Sprintf("n%d", cur.Spec.MaxReplicas)
	if cur.HasReported(id) {
		return nil, fmt.Errorf("count %d seen twice: an update was lost", cur.Spec.MaxReplicas)
	}
	cur.MarkReported(id)
	cur.Spec.MaxReplicas++
	return cur, nil
}

// TestReplicas runs two stores, each with its own client, as two server replicas would: their
// Updates of the same keys race only through etcd's compare-and-swap, and none is lost. (Each
// may retry many times: with the default 16 attempts, 1 run in 4 under -race on a loaded machine
// gave up with ErrConflict, which TestUpdateGivesUpWithConflict covers; this test is about
// lost updates.)
func TestReplicas(t *testing.T) {
	prefix := newPrefix()
	cfg := etcdstore.Config{Prefix: prefix, MaxAttempts: 1000}
	replicas := []*etcdstore.Store{open(t, cfg), open(t, cfg)}
	const (
		goroutines = 4 // per replica
		increments = 25
	)
	keys := []store.Key{{Cluster: "c", Namespace: "ns", Name: "hot"}, {Cluster: "c", Namespace: "ns", Name: "warm"}}
	var wg sync.WaitGroup
	errs := make(chan error, len(replicas)*goroutines)
	for _, s := range replicas {
		for range goroutines {
			wg.Go(func() {
				for i := range increments {
					if _, err := s.Update(t.Context(), keys[i%len(keys)], counter); err != nil {
						errs <- err
						return
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i, k := range keys {
		want := 0 // every goroutine's increments of this key
		for j := range increments {
			if j%len(keys) == i {
				want += len(replicas) * goroutines
			}
		}
		for _, s := range replicas {
			got, err := s.Get(t.Context(), k)
			if err != nil {
				t.Fatal(err)
			}
			if got.Spec.MaxReplicas != int32(want) {
				t.Errorf("%s: %d increments stored, want %d (lost updates)", k, got.Spec.MaxReplicas, want)
			}
		}
	}
}

func TestUpdateGivesUpWithConflict(t *testing.T) {
	prefix := newPrefix()
	s := open(t, etcdstore.Config{Prefix: prefix, MaxAttempts: 3})
	other := open(t, etcdstore.Config{Prefix: prefix})
	k := store.Key{Cluster: "c", Namespace: "ns", Name: "contended"}
	if _, err := s.Update(t.Context(), k, counter); err != nil {
		t.Fatal(err)
	}
	calls := 0
	// Another replica writes the key every time fn runs, so every compare-and-swap loses.
	// (A real fn must not have side effects; this one exists to lose races on purpose.)
	_, err := s.Update(t.Context(), k, func(cur *store.Target) (*store.Target, error) {
		calls++
		if _, err := other.Update(t.Context(), k, counter); err != nil {
			return nil, err
		}
		return cur, nil
	})
	if !errors.Is(err, store.ErrConflict) {
		t.Errorf("Update error = %v, want ErrConflict", err)
	}
	if calls != 3 {
		t.Errorf("fn ran %d times, want MaxAttempts = 3", calls)
	}
	got, err := s.Get(t.Context(), k)
	if err != nil || got.Spec.MaxReplicas != 4 {
		t.Errorf("Get = %+v, %v; want the 1+3 increments of the winners only", got, err)
	}
}

func TestRevisionIsModRevision(t *testing.T) {
	prefix := newPrefix()
	s := open(t, etcdstore.Config{Prefix: prefix})
	k := store.Key{Cluster: "c", Namespace: "ns", Name: "web"}
	got, err := s.Update(t.Context(), k, counter)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := rawClient(t).Get(t.Context(), prefix+"targets/"+string(codec.EncodeKey(k)))
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("raw Get = %v, %v", resp, err)
	}
	if got.Revision != resp.Kvs[0].ModRevision {
		t.Errorf("Revision = %d, want the key's ModRevision %d", got.Revision, resp.Kvs[0].ModRevision)
	}
}

// TestDeleteUnseenSinceKeepsTargetSeenAgain updates a target, through another replica, between
// the read that finds it unseen and its deletion: the guarded deletion must keep it.
func TestDeleteUnseenSinceKeepsTargetSeenAgain(t *testing.T) {
	prefix := newPrefix()
	collector := open(t, etcdstore.Config{Prefix: prefix})
	other := open(t, etcdstore.Config{Prefix: prefix})
	cutoff := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	stale := store.Key{Cluster: "c", Namespace: "ns", Name: "stale"}
	revived := store.Key{Cluster: "c", Namespace: "ns", Name: "revived"}
	for _, k := range []store.Key{stale, revived} {
		if _, err := other.Update(t.Context(), k, func(*store.Target) (*store.Target, error) {
			return &store.Target{LastSeen: cutoff.Add(-time.Hour)}, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	n, err := collector.DeleteUnseenSinceWithPause(t.Context(), cutoff, func() {
		if _, err := other.Update(t.Context(), revived, func(cur *store.Target) (*store.Target, error) {
			cur.LastSeen = cutoff.Add(time.Hour)
			return cur, nil
		}); err != nil {
			t.Error(err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("DeleteUnseenSince removed %d, want 1", n)
	}
	if _, err := collector.Get(t.Context(), stale); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get(stale) error = %v, want ErrNotFound", err)
	}
	if _, err := collector.Get(t.Context(), revived); err != nil {
		t.Errorf("Get(revived) = %v, want it kept", err)
	}
}

func TestDeleteUnseenSinceManyBatches(t *testing.T) {
	s := open(t, etcdstore.Config{Prefix: newPrefix()})
	cutoff := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	const n = 600 // more than one range read and one Txn
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			seen := cutoff.Add(-time.Minute)
			if i%3 == 0 {
				seen = cutoff
			}
			k := store.Key{Cluster: "c", Namespace: fmt.Sprintf("ns%d", i%7), Name: fmt.Sprintf("t%04d", i)}
			_, err := s.Update(t.Context(), k, func(*store.Target) (*store.Target, error) {
				return &store.Target{LastSeen: seen}, nil
			})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	removed, err := s.DeleteUnseenSince(t.Context(), cutoff)
	if err != nil || removed != n*2/3 {
		t.Errorf("DeleteUnseenSince = %d, %v; want %d", removed, err, n*2/3)
	}
	var left int
	opts := store.ListOptions{PageSize: store.MaxPageSize}
	sums, next, err := s.List(t.Context(), opts)
	if err != nil || next != "" {
		t.Fatalf("List = %v, %q, %v", len(sums), next, err)
	}
	left = len(sums)
	if left != n/3 {
		t.Errorf("%d targets left, want %d", left, n/3)
	}
	// A namespace filter without cluster is not a key prefix: List scans past other namespaces.
	sums, _, err = s.List(t.Context(), store.ListOptions{Namespace: "ns0", PageSize: 5})
	if err != nil || len(sums) != 5 {
		t.Errorf("List(ns0) = %d targets, %v; want a full page of 5", len(sums), err)
	}
}

// TestUnavailable stops etcd under an open store: every call fails with ErrUnavailable within
// about the request timeout instead of waiting for etcd to come back.
func TestUnavailable(t *testing.T) {
	stopEtcd, endpoint := startEtcdForTest(t)
	const timeout = 300 * time.Millisecond
	s := open(t, etcdstore.Config{Endpoints: []string{endpoint}, Prefix: newPrefix(), RequestTimeout: timeout})
	k := store.Key{Cluster: "c", Namespace: "ns", Name: "web"}
	if _, err := s.Update(t.Context(), k, counter); err != nil {
		t.Fatal(err)
	}
	stopEtcd()

	calls := []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"Ping", func(ctx context.Context) error { return s.Ping(ctx) }},
		{"Get", func(ctx context.Context) error { _, err := s.Get(ctx, k); return err }},
		{"Update", func(ctx context.Context) error { _, err := s.Update(ctx, k, counter); return err }},
		{"Delete", func(ctx context.Context) error { return s.Delete(ctx, k) }},
		{"List", func(ctx context.Context) error { _, _, err := s.List(ctx, store.ListOptions{}); return err }},
		{"DeleteUnseenSince", func(ctx context.Context) error { _, err := s.DeleteUnseenSince(ctx, time.Now()); return err }},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			err := c.call(t.Context())
			if !errors.Is(err, store.ErrUnavailable) {
				t.Errorf("error = %v, want ErrUnavailable", err)
			}
			if took := time.Since(start); took > 10*timeout {
				t.Errorf("took %s, want about the request timeout %s", took, timeout)
			}
			// A caller's shorter deadline wins and comes back as itself.
			ctx, cancel := context.WithTimeout(t.Context(), timeout/4)
			defer cancel()
			if err := c.call(ctx); !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, store.ErrUnavailable) {
				t.Errorf("with a shorter caller deadline: error = %v, want context.DeadlineExceeded", err)
			}
		})
	}

	t.Run("New", func(t *testing.T) {
		start := time.Now()
		s, err := etcdstore.New(t.Context(), etcdstore.Config{Endpoints: []string{endpoint}, DialTimeout: timeout})
		if err == nil {
			_ = s.Close()
		}
		if !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("New error = %v, want ErrUnavailable", err)
		}
		if took := time.Since(start); took > 10*timeout {
			t.Errorf("New took %s, want about the dial timeout %s", took, timeout)
		}
	})
}

// startEtcdForTest starts an etcd of the test's own, which it may stop: the returned func
// closes it (once; embed.Etcd.Close must not run twice), and so does the test's cleanup.
func startEtcdForTest(t *testing.T, opts ...func(*embed.Config)) (stop func(), endpoint string) {
	t.Helper()
	e, endpoint, err := startEtcd(t.TempDir(), opts...)
	if err != nil {
		t.Fatalf("start embedded etcd: %v", err)
	}
	stop = sync.OnceFunc(e.Close)
	t.Cleanup(stop)
	return stop, endpoint
}

func TestNewNeedsEndpoints(t *testing.T) {
	if s, err := etcdstore.New(t.Context(), etcdstore.Config{}); err == nil {
		_ = s.Close()
		t.Fatal("New without endpoints succeeded")
	}
}

// TestReplicasStartTogether opens one prefix from several replicas at once, each writing a
// target as soon as it is open: on a fresh prefix none may mistake another's keys for a foreign
// store, and on one of schema version 1, which they all upgrade, none may fail; the record of
// version 1 stored there still reads.
func TestReplicasStartTogether(t *testing.T) {
	old := store.Key{Cluster: "c", Namespace: "ns", Name: "old"}
	for name, keys := range map[string]map[string]string{
		"fresh": nil,
		"schema version 1": {
			"meta/schema_version":                     "1",
			"targets/" + string(codec.EncodeKey(old)): storetest.RecordV1(0),
		},
	} {
		t.Run(name, func(t *testing.T) {
			prefix := newPrefix()
			raw := rawClient(t)
			for k, v := range keys {
				if _, err := raw.Put(t.Context(), prefix+k, v); err != nil {
					t.Fatal(err)
				}
			}
			var wg sync.WaitGroup
			errs := make(chan error, 8)
			for i := range cap(errs) {
				wg.Go(func() {
					s, err := etcdstore.New(t.Context(), etcdstore.Config{Endpoints: endpoints, Prefix: prefix})
					if err != nil {
						errs <- err
						return
					}
					defer s.Close()
					k := store.Key{Cluster: "c", Namespace: "ns", Name: fmt.Sprintf("r%d", i)}
					_, err = s.Update(t.Context(), k, counter)
					errs <- err
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Error(err)
				}
			}
			checkLayout(t, raw, prefix)
			if keys == nil {
				return
			}
			s := open(t, etcdstore.Config{Prefix: prefix})
			got, err := s.Get(t.Context(), old)
			if err != nil {
				t.Fatal(err)
			}
			if got.Spec.MaxReplicas != 5 || got.LastDecision == nil || len(got.LastDecision.Decision.Conditions) != 1 {
				t.Errorf("the version 1 record reads as %+v", got)
			}
		})
	}
}

// TestStaleReadNeverAnswers: Update's first read is serializable, and may lag (here it answers
// as a member two writes behind). A write decided on it is retried on the current record, so
// none is lost; an error, or nothing to change, is only answered from a linearizable read.
func TestStaleReadNeverAnswers(t *testing.T) {
	s := open(t, etcdstore.Config{Prefix: newPrefix()})
	key := store.Key{Cluster: "c", Namespace: "n", Name: "web"}
	first, latest := countTo(t, s, key, 3)
	s.StaleSerializableReads(first.Revision)

	wantFresh := func(cur *store.Target) (*store.Target, error) {
		if cur == nil || len(cur.Reported) != 3 {
			return nil, fmt.Errorf("decided on a stale record: %v", cur.Reported)
		}
		return nil, errors.New("refused on the current record")
	}
	if _, err := s.Update(t.Context(), key, wantFresh); err == nil || err.Error() != "refused on the current record" {
		t.Errorf("an error decided on the stale read: %v, want the one decided on the current record", err)
	}
	same, err := s.Update(t.Context(), key, func(*store.Target) (*store.Target, error) { return nil, nil })
	if err != nil || same.Revision != latest.Revision || len(same.Reported) != 3 {
		t.Errorf("nothing to change answered %+v, %v; want the current record, revision %d", same, err, latest.Revision)
	}
	next, err := s.Update(t.Context(), key, counter)
	if err != nil || len(next.Reported) != 4 {
		t.Errorf("a write decided on the stale read gave %+v, %v; want it retried on the current record (4 updates)", next, err)
	}
}
