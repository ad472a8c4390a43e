package memstore

import (
	"context"
	"fmt"
	"slices"

	"github.com/hpa-recommender/hpa-recommender/store"
	"github.com/hpa-recommender/hpa-recommender/store/internal/codec"
)

// retired is one retired decision log entry, encoded as the other backends store it.
type retired struct {
	seq uint64
	b   []byte
}

// writeDecisions numbers next's new entries, appends its retired ones to log and trims log to
// the limits; it returns the new log (log itself is never changed in place) and clears
// next.RetiredDecisions.
func (s *Store) writeDecisions(log []retired, next *store.Target) ([]retired, error) {
	floor := uint64(0)
	if n := len(log); n > 0 {
		floor = log[n-1].seq + 1
	}
	next.RecentDecisions = slices.Clone(next.RecentDecisions)
	next.RetiredDecisions = slices.Clone(next.RetiredDecisions)
	store.NumberDecisions(next, floor)
	add := next.RetiredDecisions
	next.RetiredDecisions = nil
	if len(add) == 0 {
		return log, nil
	}
	log = slices.Clip(log)
	for i := range add {
		b, err := codec.MarshalDecision(&add[i])
		if err != nil {
			return nil, err
		}
		log = append(log, retired{seq: add[i].Seq, b: b})
		next.DecisionLog.Retired++
		next.DecisionLog.Bytes += int64(len(b))
	}
	recent := codec.RecentDecisionsSize(next)
	newest := next.NewestDecisionTime()
	drop := 0
	for ; drop < len(log); drop++ {
		e, err := codec.UnmarshalDecision(log[drop].b)
		if err != nil {
			return nil, err
		}
		if !s.limits.Expired(&e, newest, next.DecisionLog.Bytes+recent) {
			break
		}
		next.DecisionLog.Retired--
		next.DecisionLog.Bytes -= int64(len(log[drop].b))
	}
	return log[drop:], nil
}

// ListDecisions implements store.Store, under the target's shard lock.
func (s *Store) ListDecisions(ctx context.Context, key store.Key, opts store.DecisionListOptions) ([]store.DecisionEntry, string, error) {
	if err := codec.CheckKey(key); err != nil {
		return nil, "", err
	}
	p, err := store.NewDecisionPager(opts)
	if err != nil {
		return nil, "", err
	}
	k := string(codec.EncodeKey(key))
	sh := s.shard(k)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return nil, "", err
	}
	b, ok := sh.records[k]
	if !ok {
		return nil, "", fmt.Errorf("list decisions of %s: %w", key, store.ErrNotFound)
	}
	t, err := decode(key, b)
	if err != nil {
		return nil, "", err
	}
	if p.AddRecent(t.RecentDecisions) {
		log := sh.logs[k]
		for i := len(log) - 1; i >= 0; i-- {
			if p.Before() != 0 && log[i].seq >= p.Before() {
				continue
			}
			e, err := codec.UnmarshalDecision(log[i].b)
			if err != nil {
				return nil, "", err
			}
			if !p.Add(e) {
				break
			}
		}
	}
	out, next := p.Page()
	return out, next, nil
}
