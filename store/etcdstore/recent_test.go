package etcdstore_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hpa-recommender/hpa-recommender/store"
	"github.com/hpa-recommender/hpa-recommender/store/etcdstore"
)

// TestUpdateStartsFromWhatItWrote: an Update of a target this replica wrote last makes one
// request to etcd, its guarded write, and no read; without the records kept it reads first.
func TestUpdateStartsFromWhatItWrote(t *testing.T) {
	for _, tc := range []struct {
		name          string
		cached        int
		gets, txns    int64
		recentRecords int
	}{
		{"default", 0, 0, 5, 1},
		{"none", -1, 5, 5, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t, etcdstore.Config{Prefix: newPrefix(), CachedRecords: tc.cached})
			key := store.Key{Cluster: "c", Namespace: "n", Name: "web"}
			countTo(t, s, key, 1)
			reqs := s.CountRequests()
			_, last := countTo(t, s, key, 5)
			if got := reqs.Gets.Load(); got != tc.gets {
				t.Errorf("5 updates read etcd %d times, want %d", got, tc.gets)
			}
			if got := reqs.Txns.Load(); got != tc.txns {
				t.Errorf("5 updates sent %d transactions, want %d", got, tc.txns)
			}
			if len(last.Reported) != 6 {
				t.Errorf("after 6 updates the record holds %d, want 6", len(last.Reported))
			}
			if got := s.RecentRecords(); got != tc.recentRecords {
				t.Errorf("%d records kept, want %d", got, tc.recentRecords)
			}
			st := s.UpdateStats()
			if want := 5 - uint64(tc.gets); st.FromKept != want || st.FromRead != 6-want || st.Conflicts != 0 {
				t.Errorf("UpdateStats = %+v, want %d from kept records, %d from reads, no conflicts", st, want, 6-want)
			}
		})
	}
}

// TestRecentRecordsBounded: the records kept never exceed CachedRecords, and a target whose
// record was let go is read again, with nothing lost.
func TestRecentRecordsBounded(t *testing.T) {
	s := open(t, etcdstore.Config{Prefix: newPrefix(), CachedRecords: 2})
	for round := range 3 {
		for i := range 5 {
			key := store.Key{Cluster: "c", Namespace: "n", Name: fmt.Sprintf("t%d", i)}
			got, err := s.Update(t.Context(), key, counter)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Reported) != round+1 {
				t.Fatalf("%s in round %d holds %d updates, want %d", key.Name, round, len(got.Reported), round+1)
			}
			if n := s.RecentRecords(); n > 2 {
				t.Fatalf("%d records kept, want at most 2", n)
			}
		}
	}
}

// TestStaleRecordNeverAnswers: a record this replica kept goes stale when another replica
// writes the target. A write decided on it is retried on the current record, so none is lost,
// and an error, or nothing to change, is only answered from the current record. Each case
// starts right after the other replica's write.
func TestStaleRecordNeverAnswers(t *testing.T) {
	prefix := newPrefix()
	s := open(t, etcdstore.Config{Prefix: prefix})
	other := open(t, etcdstore.Config{Prefix: prefix})
	key := store.Key{Cluster: "c", Namespace: "n", Name: "web"}
	countTo(t, s, key, 3)
	n := 3
	otherWrites := func() *store.Target {
		t.Helper()
		_, latest := countTo(t, other, key, 1)
		n++
		return latest
	}

	otherWrites()
	wantFresh := func(cur *store.Target) (*store.Target, error) {
		if cur == nil || len(cur.Reported) != n {
			return nil, fmt.Errorf("decided on a stale record: %v", cur.Reported)
		}
		return nil, errors.New("refused on the current record")
	}
	if _, err := s.Update(t.Context(), key, wantFresh); err == nil || err.Error() != "refused on the current record" {
		t.Errorf("an error decided on the kept record: %v, want the one decided on the current record", err)
	}

	latest := otherWrites()
	same, err := s.Update(t.Context(), key, func(*store.Target) (*store.Target, error) { return nil, nil })
	if err != nil || same.Revision != latest.Revision || len(same.Reported) != n {
		t.Errorf("nothing to change answered %+v, %v; want the current record, revision %d", same, err, latest.Revision)
	}

	otherWrites()
	before := s.UpdateStats().Conflicts
	next, err := s.Update(t.Context(), key, counter)
	if err != nil || len(next.Reported) != n+1 {
		t.Errorf("a write decided on the kept record gave %+v, %v; want it retried on the current record (%d updates)", next, err, n+1)
	}
	if got := s.UpdateStats().Conflicts - before; got != 1 {
		t.Errorf("the write on the stale record counted %d conflicts, want 1", got)
	}
}

// TestRecentRecordAfterDelete: after a target is deleted, here or by another replica, or
// forgotten as unseen, an Update starts from nothing, not from the record kept.
func TestRecentRecordAfterDelete(t *testing.T) {
	prefix := newPrefix()
	s := open(t, etcdstore.Config{Prefix: prefix})
	other := open(t, etcdstore.Config{Prefix: prefix})
	for _, tc := range []struct {
		name   string
		delete func(key store.Key) error
	}{
		{"here", func(key store.Key) error { return s.Delete(t.Context(), key) }},
		{"by another replica", func(key store.Key) error { return other.Delete(t.Context(), key) }},
		{"unseen", func(store.Key) error {
			_, err := s.DeleteUnseenSince(t.Context(), time.Now().Add(time.Hour))
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := store.Key{Cluster: "c", Namespace: "n", Name: "gone"}
			countTo(t, s, key, 2)
			if err := tc.delete(key); err != nil {
				t.Fatal(err)
			}
			var saw *store.Target
			got, err := s.Update(t.Context(), key, func(cur *store.Target) (*store.Target, error) {
				saw = cur
				return counter(cur)
			})
			if err != nil {
				t.Fatal(err)
			}
			if saw != nil || len(got.Reported) != 1 {
				t.Errorf("the update after the delete started from %v and wrote %d updates; want nothing, then 1", saw, len(got.Reported))
			}
		})
	}
}

// TestKeptRecordsBackOffWhenSpread: two replicas taking turns on one target, as a load
// balancer spreading a caller's calls would make them, find their kept record stale every
// time; each backs off from it, losing few guarded writes, and a replica that then has the
// target to itself starts from its kept record again.
func TestKeptRecordsBackOffWhenSpread(t *testing.T) {
	prefix := newPrefix()
	a := open(t, etcdstore.Config{Prefix: prefix})
	b := open(t, etcdstore.Config{Prefix: prefix})
	key := store.Key{Cluster: "c", Namespace: "n", Name: "spread"}
	const turns = 100
	for range turns {
		countTo(t, a, key, 1)
		countTo(t, b, key, 1)
	}
	for _, r := range []struct {
		name string
		s    *etcdstore.Store
	}{{"a", a}, {"b", b}} {
		// Stale at updates 2 and 67 (without backing off, 99).
		t.Logf("replica %s: %+v", r.name, r.s.UpdateStats())
		if c := r.s.UpdateStats().Conflicts; c < 1 || c > 3 {
			t.Errorf("replica %s lost %d guarded writes in %d turns, want 1 to 3", r.name, c, turns)
		}
	}
	before := a.UpdateStats()
	_, last := countTo(t, a, key, 300)
	after := a.UpdateStats()
	if kept := after.FromKept - before.FromKept; kept < 200 || after.Conflicts != before.Conflicts {
		t.Errorf("alone, replica a started %d of 300 updates from its kept record with %d conflicts; want at least 200, none",
			kept, after.Conflicts-before.Conflicts)
	}
	if last.Spec.MaxReplicas != 2*turns+300 {
		t.Errorf("the record counts %d updates, want %d", last.Spec.MaxReplicas, 2*turns+300)
	}
}
