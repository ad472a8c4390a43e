package etcdstore

import (
	"math/rand/v2"
	"sync"

	"go.etcd.io/etcd/api/v3/mvccpb"
)

// recent holds, by etcd key, the record this replica last wrote or read for a bounded number of
// targets, with its ModRevision: Update starts from it instead of reading etcd first, which
// saves one of a decision's two round trips to etcd. An entry is a guess, never the truth.
// Update's write is guarded by the entry's ModRevision, so when another replica has written or
// deleted the key since, the write fails and etcd's answer carries the current record, as the
// read would have; the guess then cost a failed write (which goes through etcd's log) instead
// of a read. A scaler keeps its connection to one replica, so the replica that wrote a target
// last is nearly always the one that decides it next.
//
// A record read from etcd is kept as etcd returned it (JSON); one this replica wrote, in the
// binary record format of the bbolt store, a third of the bytes and faster to decode, to the
// same target (codec's TestBinaryIsTheRoundTrip). Values are never modified (codec.Unmarshal
// does not alias its input) and hold no pointers, so the collector does not scan them.
type recent struct {
	max int // <= 0: disabled
	mu  sync.Mutex
	m   map[string]recentRecord
}

type recentRecord struct {
	val []byte
	rev int64
}

func newRecent(max int) *recent {
	r := &recent{max: max}
	if max > 0 {
		r.m = make(map[string]recentRecord, min(max, 4096))
	}
	return r
}

// get returns k's entry as a KeyValue, or nil.
func (r *recent) get(k string) *mvccpb.KeyValue {
	if r.max <= 0 {
		return nil
	}
	r.mu.Lock()
	e, ok := r.m[k]
	r.mu.Unlock()
	if !ok {
		return nil
	}
	return &mvccpb.KeyValue{Value: e.val, ModRevision: e.rev}
}

// admitOneIn is how seldom a key not in a full map gets an entry, in place of an arbitrary
// other one (Go's map iteration order is random). A replica deciding more targets than the map
// holds decides each once per sync period, in turn: replacing an entry at every miss evicts
// most entries before their next use (0.14 of the decisions hit with 2.5 times as many
// targets as entries), while replacing one miss in eight keeps most of them until then (0.36
// hit, of the 0.4 the map can hold; TestRecentHitsWhenFleetExceedsIt).
const admitOneIn = 8

// saw records what etcd said k holds: kv, or nothing when kv is nil.
func (r *recent) saw(k string, kv *mvccpb.KeyValue) {
	if kv == nil {
		r.forget(k)
	} else if r.admits(k) {
		r.put(k, kv.Value, kv.ModRevision)
	}
}

// admits reports whether k may get an entry: it has one, the map has room, or one time in
// admitOneIn. Never when disabled.
func (r *recent) admits(k string) bool {
	if r.max <= 0 {
		return false
	}
	r.mu.Lock()
	_, ok := r.m[k]
	room := len(r.m) < r.max
	r.mu.Unlock()
	return ok || room || rand.N(admitOneIn) == 0
}

// put sets k's entry to val at revision rev, first evicting an arbitrary other entry when the
// map is full.
func (r *recent) put(k string, val []byte, rev int64) {
	if r.max <= 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.m[k]; !ok && len(r.m) >= r.max {
		for victim := range r.m {
			delete(r.m, victim)
			break
		}
	}
	r.m[k] = recentRecord{val: val, rev: rev}
}

// forget drops k's entry.
func (r *recent) forget(k string) {
	if r.max <= 0 {
		return
	}
	r.mu.Lock()
	delete(r.m, k)
	r.mu.Unlock()
}

func (r *recent) len() int {
	if r.max <= 0 {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.m)
}
