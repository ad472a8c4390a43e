package etcdstore

import (
	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/hpa-recommender/hpa-recommender/store"
	"github.com/hpa-recommender/hpa-recommender/store/internal/codec"
)

// recentRecord is what Store.recent holds, by etcd key, for a bounded number of targets: the
// record this replica last wrote or read, with its ModRevision. Update starts from it instead
// of reading etcd first, which saves one of a decision's two round trips to etcd. An entry is
// a guess, never the truth. Update's write is guarded by the entry's ModRevision, so when another replica has
// written or deleted the key since, the write fails and etcd's answer carries the current
// record, as the read would have; the guess then cost a failed write (which goes through etcd's
// log) instead of a read. A scaler keeps its connection to one replica, so the replica that
// wrote a target last is nearly always the one that decides it next.
//
// A record read from etcd is kept as etcd returned it (JSON); one this replica wrote, in the
// binary record format of the bbolt store, a third of the bytes and faster to decode, to the
// same target (codec's TestBinaryIsTheRoundTrip). Values are never modified (codec.Unmarshal
// does not alias its input) and hold no pointers, so the collector does not scan them.
type recentRecord struct {
	val []byte
	rev int64
}

// kept returns the record kept for k as a KeyValue, or nil.
func (s *Store) kept(k string) *mvccpb.KeyValue {
	e, ok := s.recent.Get(k)
	if !ok {
		return nil
	}
	return &mvccpb.KeyValue{Value: e.val, ModRevision: e.rev}
}

// admits reports whether k may have a record kept: it has one, or the map admits it.
func (s *Store) admits(k string) bool {
	_, ok := s.recent.Get(k)
	return ok || s.recent.Admit()
}

// saw records what etcd said k holds: kv, or nothing when kv is nil.
func (s *Store) saw(k string, kv *mvccpb.KeyValue) {
	if kv == nil {
		s.recent.Delete(k)
	} else if s.admits(k) {
		s.recent.Put(k, recentRecord{val: kv.Value, rev: kv.ModRevision})
	}
}

// keep records t, just written to etcd key k at revision rev, in the binary record format.
func (s *Store) keep(k string, t *store.Target, rev int64) {
	if !s.admits(k) {
		return
	}
	b, err := codec.Binary.Marshal(t, 0)
	if err != nil { // cannot be: t was just encoded as JSON; start from a read then
		s.recent.Delete(k)
		return
	}
	s.recent.Put(k, recentRecord{val: b, rev: rev})
}
