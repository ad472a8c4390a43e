package etcdstore

import (
	"context"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// DeleteUnseenSinceWithPause is DeleteUnseenSince running between after each range read, before
// that batch's guarded deletions.
func (s *Store) DeleteUnseenSinceWithPause(ctx context.Context, cutoff time.Time, between func()) (int, error) {
	return s.deleteUnseenSince(ctx, cutoff, between)
}

// StaleSerializableReads makes every serializable read of s answer as a member that has
// applied etcd's log only up to revision rev would: with etcd's own answer at that revision.
// Linearizable reads and writes are unchanged.
func (s *Store) StaleSerializableReads(rev int64) {
	s.kv = staleKV{KV: s.kv, rev: rev}
}

type staleKV struct {
	clientv3.KV
	rev int64
}

func (k staleKV) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	if clientv3.OpGet(key, opts...).IsSerializable() {
		opts = append(opts, clientv3.WithRev(k.rev))
	}
	return k.KV.Get(ctx, key, opts...)
}

// CompactingEvery is the interval of s's compaction loop, 0 when none runs.
func (s *Store) CompactingEvery() time.Duration {
	if s.compaction.stop == nil {
		return 0
	}
	return s.cfg.CompactionInterval
}

// Upgrade is the migration's rewrite of kvs, records as they were read (maybe since changed).
func (s *Store) Upgrade(ctx context.Context, kvs []*mvccpb.KeyValue) error {
	return s.upgrade(ctx, kvs)
}

// TranslateErr is how the store words an error of the etcd client.
func TranslateErr(err error) error { return translateErr([]string{"127.0.0.1:2379"}, err) }
