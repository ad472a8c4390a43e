package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hpa-recommender/hpa-recommender/store"
)

// Compaction of etcd's history.
//
// etcd keeps every version of every key until it is compacted, and the store writes a target's
// record at every decision, so an etcd nobody compacts grows until its space quota refuses
// every write (TestCompactionKeepsEtcdUnderQuota). Each replica therefore runs one loop that,
// every Config.CompactionInterval, asks etcd to compact to the revision it read one interval
// before, so every key keeps its versions of the last interval. (Update's guarded writes compare
// a key's current ModRevision, never its history, so compaction cannot fail them.)
//
// Compaction is cluster-wide, not limited to the store's prefix. Replicas sharing an etcd each
// compact; one that finds etcd already compacted past its revision (by another replica, or by
// etcd's own --auto-compaction-retention) counts that as done. Outcomes go to
// Config.OnCompact and CompactionStats; a failure is retried at the next tick.

// compactor is the state of a store's compaction loop.
type compactor struct {
	// stop ends the loop (nil when none runs) and done is closed when it has returned.
	stop context.CancelFunc
	done chan struct{}
	// compactions, failures and rev are CompactionStats'.
	compactions, failures atomic.Uint64
	rev                   atomic.Int64
}

var _ store.CompactionReporter = (*Store)(nil)

// CompactionStats implements store.CompactionReporter.
func (s *Store) CompactionStats() store.CompactionStats {
	c := &s.compaction
	return store.CompactionStats{Compactions: c.compactions.Load(), Failures: c.failures.Load(), Revision: c.rev.Load()}
}

// startCompacting starts the compaction loop unless cfg.CompactionInterval is negative.
func (s *Store) startCompacting() {
	if s.cfg.CompactionInterval == 0 {
		s.cfg.CompactionInterval = DefaultCompactionInterval
	}
	if s.cfg.CompactionInterval < 0 {
		return
	}
	var ctx context.Context
	ctx, s.compaction.stop = context.WithCancel(context.Background())
	s.compaction.done = make(chan struct{})
	go s.compactLoop(ctx, s.cfg.CompactionInterval)
}

// stopCompacting ends the compaction loop, if one runs, and waits for it.
func (s *Store) stopCompacting() {
	if s.compaction.stop != nil {
		s.compaction.stop()
		<-s.compaction.done
	}
}

// compactLoop compacts etcd every interval, to the revision it read one interval before,
// until ctx ends.
func (s *Store) compactLoop(ctx context.Context, interval time.Duration) {
	defer close(s.compaction.done)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	// prev is the revision read at the tick before, done the last one compacted to (0: none).
	var prev, done int64
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		prev, done = s.compactTo(ctx, prev, done)
	}
}

// compactTo compacts etcd to rev unless it did to done >= rev already, and returns the current
// revision, to compact to at the next tick, and what it has compacted to. On a failed read it
// returns rev again: at least an interval old by the next tick.
func (s *Store) compactTo(ctx context.Context, rev, done int64) (next, compacted int64) {
	c := &s.compaction
	resp, err := call(ctx, s, func(ctx context.Context) (*clientv3.GetResponse, error) {
		return s.kv.Get(ctx, s.keys.version, clientv3.WithCountOnly())
	})
	if err != nil {
		if ctx.Err() == nil {
			c.failures.Add(1)
			if s.cfg.OnCompact != nil {
				s.cfg.OnCompact(rev, fmt.Errorf("read etcd's revision before compacting: %w", err))
			}
		}
		return rev, done
	}
	cur := resp.Header.Revision
	if rev <= done {
		return cur, done
	}
	_, err = call(ctx, s, func(ctx context.Context) (*clientv3.CompactResponse, error) {
		resp, err := s.client.Compact(ctx, rev)
		if errors.Is(err, rpctypes.ErrCompacted) {
			err = nil // compacted past rev already: by another replica, or etcd itself
		}
		return resp, err
	})
	if ctx.Err() != nil {
		return cur, done
	}
	if err != nil {
		c.failures.Add(1)
		err = fmt.Errorf("compact etcd to revision %d: %w", rev, err)
	} else {
		done = rev
		c.rev.Store(rev)
		c.compactions.Add(1)
	}
	if s.cfg.OnCompact != nil {
		s.cfg.OnCompact(rev, err)
	}
	return cur, done
}
