package etcdstore_test

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"

	"github.com/hpa-recommender/hpa-recommender/store"
	"github.com/hpa-recommender/hpa-recommender/store/etcdstore"
)

// compactions collects what OnCompact reports.
type compactions struct {
	mu   sync.Mutex
	revs []int64
	errs []error
}

func (c *compactions) on(rev int64, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.revs = append(c.revs, rev)
	if err != nil {
		c.errs = append(c.errs, err)
	}
}

// waitPast waits up to 20 s for a compaction to a revision of at least rev, and returns it.
func (c *compactions) waitPast(t *testing.T, rev int64) int64 {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		c.mu.Lock()
		for _, r := range c.revs {
			if r >= rev {
				c.mu.Unlock()
				return r
			}
		}
		c.mu.Unlock()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t.Fatalf("no compaction to revision %d or later in 20 s (compactions %v, errors %v)", rev, c.revs, c.errs)
	return 0
}

// TestCompaction: two replicas of one store, each compacting every 100 ms, drop etcd's history
// up to a revision they read a tick before: an old version of a record can no longer be read,
// the latest still can, and neither replica reports an error when the other compacted first.
func TestCompaction(t *testing.T) {
	_, endpoint := startEtcdForTest(t)
	raw := clientOf(t, endpoint)
	var a, b compactions
	prefix := newPrefix()
	s := open(t, etcdstore.Config{Endpoints: []string{endpoint}, Prefix: prefix, CompactionInterval: 100 * time.Millisecond, OnCompact: a.on})
	open(t, etcdstore.Config{Endpoints: []string{endpoint}, Prefix: prefix, CompactionInterval: 100 * time.Millisecond, OnCompact: b.on})
	key := store.Key{Cluster: "c", Namespace: "n", Name: "web"}
	first, latest := countTo(t, s, key, 10)
	rev := a.waitPast(t, latest.Revision)
	b.waitPast(t, latest.Revision)
	if _, err := raw.Get(t.Context(), "x", clientv3.WithRev(first.Revision)); !errors.Is(err, rpctypes.ErrCompacted) {
		t.Errorf("read at revision %d after a compaction to %d: error %v, want %v", first.Revision, rev, err, rpctypes.ErrCompacted)
	}
	again, err := s.Get(t.Context(), key)
	if err != nil || again.Revision != latest.Revision || len(again.Reported) != 10 {
		t.Errorf("after compaction the record reads %+v, %v; want the latest, revision %d, its 10 updates", again, err, latest.Revision)
	}
	a.mu.Lock()
	b.mu.Lock()
	defer a.mu.Unlock()
	defer b.mu.Unlock()
	if len(a.errs)+len(b.errs) != 0 {
		t.Errorf("compaction errors: %v, %v", a.errs, b.errs)
	}
	if st := s.CompactionStats(); st.Compactions == 0 || st.Failures != 0 || st.Revision < latest.Revision {
		t.Errorf("compaction stats %+v: want compactions, no failure, a revision of at least %d", st, latest.Revision)
	}
}

// TestCompactionFailureReported: with etcd gone, every compaction fails: OnCompact gets the
// error and CompactionStats counts it.
func TestCompactionFailureReported(t *testing.T) {
	stop, endpoint := startEtcdForTest(t)
	var c compactions
	s := open(t, etcdstore.Config{Endpoints: []string{endpoint}, Prefix: newPrefix(), CompactionInterval: 100 * time.Millisecond,
		RequestTimeout: 200 * time.Millisecond, OnCompact: c.on})
	stop()
	for deadline := time.Now().Add(10 * time.Second); s.CompactionStats().Failures == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no failed compaction 10 s after etcd stopped: %+v", s.CompactionStats())
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.errs) == 0 || !errors.Is(c.errs[0], store.ErrUnavailable) {
		t.Errorf("OnCompact errors %v: want etcd unavailable", c.errs)
	}
	if st := s.CompactionStats(); st.Compactions != 0 {
		t.Errorf("compaction stats %+v: nothing compacted without etcd", st)
	}
}

// TestCompactionOff: a negative interval runs no compaction loop at all (where no interval
// runs one at the default), and the first version stays readable.
func TestCompactionOff(t *testing.T) {
	_, endpoint := startEtcdForTest(t)
	if every := open(t, etcdstore.Config{Endpoints: []string{endpoint}, Prefix: newPrefix()}).CompactingEvery(); every != etcdstore.DefaultCompactionInterval {
		t.Errorf("no interval: compacting every %v, want the default %v", every, etcdstore.DefaultCompactionInterval)
	}
	raw := clientOf(t, endpoint)
	var c compactions
	s := open(t, etcdstore.Config{Endpoints: []string{endpoint}, Prefix: newPrefix(), CompactionInterval: -1, OnCompact: c.on})
	if every := s.CompactingEvery(); every != 0 {
		t.Errorf("interval -1: compacting every %v, want no compaction loop", every)
	}
	tg, _ := countTo(t, s, store.Key{Cluster: "c", Namespace: "n", Name: "web"}, 6)
	time.Sleep(500 * time.Millisecond)
	if _, err := raw.Get(t.Context(), "x", clientv3.WithRev(tg.Revision)); err != nil {
		t.Errorf("read at the first revision with compaction off: %v", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.revs) != 0 {
		t.Errorf("compactions %v with compaction off", c.revs)
	}
}

// TestCompactionKeepsEtcdUnderQuota: an etcd with a 32 MiB space quota takes 80 MiB of writes
// to one key while the store compacts every 100 ms; without compaction the same writes fill
// the quota and etcd refuses them (so the test can fail).
func TestCompactionKeepsEtcdUnderQuota(t *testing.T) {
	value := strings.Repeat("x", 512<<10)
	for _, tc := range []struct {
		interval time.Duration
		wantFull bool
	}{{100 * time.Millisecond, false}, {-1, true}} {
		t.Run(tc.interval.String(), func(t *testing.T) {
			_, endpoint := startEtcdForTest(t, func(c *embed.Config) { c.QuotaBackendBytes = 32 << 20 })
			raw := clientOf(t, endpoint)
			var c compactions
			open(t, etcdstore.Config{Endpoints: []string{endpoint}, Prefix: newPrefix(), CompactionInterval: tc.interval, OnCompact: c.on})
			var err error
			for i := 0; i < 160 && err == nil; i++ {
				_, err = raw.Put(t.Context(), "/other/big", value)
				time.Sleep(10 * time.Millisecond)
			}
			full := errors.Is(err, rpctypes.ErrNoSpace)
			if err != nil && !full {
				t.Fatal(err)
			}
			if full != tc.wantFull {
				t.Errorf("80 MiB of writes with compaction every %v: error %v; want etcd full: %v", tc.interval, err, tc.wantFull)
			}
		})
	}
}
