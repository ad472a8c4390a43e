package etcdstore

import (
	"go.etcd.io/etcd/api/v3/mvccpb"
)

// recentRecord is what Store.recent holds, by etcd key, for a bounded number of targets: the
// record this replica last wrote or read, with its ModRevision. Update starts from it instead
// of reading etcd first, which saves one of a decision's two round trips to etcd. An entry is
// a guess, never the truth. Update's write is guarded by the entry's ModRevision, so when
// another replica has written or deleted the key since, the write fails and etcd's answer
// carries the current record, as the read would have; the guess then cost a failed write
// (which goes through etcd's log) instead of a read. A scaler keeps its connection to one replica, so the replica that
// wrote a target last is nearly always the one that decides it next.
//
// A record is kept as etcd holds it: as read, or as this replica wrote it. Values are never
// modified (codec.Unmarshal does not alias its input) and hold no pointers, so the collector
// does not scan them.
//
// A caller whose calls a load balancer spreads over the replicas (a service mesh balancing
// each request) makes another replica write the target between two of this one's decisions,
// so its kept record is stale nearly every time, and a failed guarded write costs etcd more
// than a read (it goes through etcd's log). So a key whose kept record was stale starts its
// next skipAfterStale updates from a read: two replicas taking turns on a target lose one
// guarded write in 65 of their updates, and a caller that stays on one replica loses none
// (TestKeptRecordsBackOffWhenSpread). A replica whose target another wrote once (a failover)
// only reads first for a while, as it did before it kept records.
type recentRecord struct {
	val []byte // nil: none kept
	rev int64
	// skip is how many more updates of the key start from a read.
	skip int32
}

// skipAfterStale is how many updates of a key start from a read after its kept record was
// stale. A ladder that began at 2 and doubled up to 64 was measured first: two replicas
// taking turns on 1,000 targets lost 3,000 guarded writes each in 10 s (every target's first
// three rungs) and decided 12 % less than without kept records.
const skipAfterStale = 64

// kept returns the record kept for k, unless none is or k is backing off.
func (s *Store) kept(k string) *mvccpb.KeyValue {
	e, ok := s.recent.Get(k)
	switch {
	case !ok:
		return nil
	case e.skip > 0:
		e.skip--
		s.recent.Put(k, e)
		return nil
	case e.val == nil:
		return nil
	}
	return &mvccpb.KeyValue{Value: e.val, ModRevision: e.rev}
}

// saw records what etcd said k holds: kv, or nothing when kv is nil.
func (s *Store) saw(k string, kv *mvccpb.KeyValue) {
	e, ok := s.recent.Get(k)
	switch {
	case kv == nil && ok && e.skip > 0:
		e.val, e.rev = nil, 0 // keep the back-off
		s.recent.Put(k, e)
	case kv == nil:
		s.recent.Delete(k)
	case ok || s.recent.Admit():
		e.val, e.rev = kv.Value, kv.ModRevision
		s.recent.Put(k, e)
	}
}

// keep records the record val, just written to etcd key k at revision rev.
func (s *Store) keep(k string, val []byte, rev int64) {
	e, ok := s.recent.Get(k)
	if !ok && !s.recent.Admit() {
		return
	}
	e.val, e.rev = val, rev
	s.recent.Put(k, e)
}

// stale records that the record kept for k was not current: k backs off from it.
func (s *Store) stale(k string) {
	e, _ := s.recent.Get(k)
	e.skip = skipAfterStale
	s.recent.Put(k, e)
}
