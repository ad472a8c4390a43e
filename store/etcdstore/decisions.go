package etcdstore

import (
	"context"
	"fmt"
	"math"
	"slices"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hpa-recommender/hpa-recommender/store"
	"github.com/hpa-recommender/hpa-recommender/store/internal/codec"
)

// trimBatch is how many of a target's oldest retired entries a write that retires entries
// reads to apply the limits: a write retires one or two, so the log keeps to its bounds, and a
// log over bounds after the limits were lowered shrinks by up to this many per decision.
const trimBatch = 8

// writeDecisions numbers next's new decision log entries and returns the operations that
// append its retired ones and drop the oldest its limits no longer keep; they go into the
// Txn that writes next, guarded by the record's revision, so they apply exactly when the
// record does. It updates next.DecisionLog and clears next.RetiredDecisions.
func (s *Store) writeDecisions(ctx context.Context, enc []byte, next *store.Target) ([]clientv3.Op, error) {
	next.RecentDecisions = slices.Clone(next.RecentDecisions)
	next.RetiredDecisions = slices.Clone(next.RetiredDecisions)
	store.NumberDecisions(next, 0)
	add := next.RetiredDecisions
	next.RetiredDecisions = nil
	if len(add) == 0 {
		return nil, nil
	}
	var ops []clientv3.Op
	for i := range add {
		v, err := codec.MarshalDecision(&add[i])
		if err != nil {
			return nil, err
		}
		ops = append(ops, clientv3.OpPut(s.keys.decisions+string(codec.EncodeDecisionKey(enc, add[i].Seq)), string(v)))
		next.DecisionLog.Retired++
		next.DecisionLog.Bytes += int64(len(v))
	}
	prefix := s.keys.decisionsOf(enc)
	resp, err := call(ctx, s, func(ctx context.Context) (*clientv3.GetResponse, error) {
		return s.kv.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithLimit(trimBatch), clientv3.WithSerializable())
	})
	if err != nil {
		return nil, err
	}
	// The record's guard makes a stale read harmless: a Txn built on it does not apply.
	recent := codec.RecentDecisionsSize(next)
	newest := next.NewestDecisionTime()
	for _, kv := range resp.Kvs {
		e, err := codec.UnmarshalDecision(kv.Value)
		if err != nil {
			return nil, fmt.Errorf("stored decision %q: %w", kv.Key, err)
		}
		if !s.cfg.DecisionLog.Expired(&e, newest, next.DecisionLog.Bytes+recent) {
			break
		}
		ops = append(ops, clientv3.OpDelete(string(kv.Key)))
		next.DecisionLog.Retired--
		next.DecisionLog.Bytes -= int64(len(kv.Value))
	}
	return ops, nil
}

// ListDecisions implements store.Store: the record's recent entries, then the retired ones
// in descending key order from the page token, read at the record's revision.
func (s *Store) ListDecisions(ctx context.Context, key store.Key, opts store.DecisionListOptions) ([]store.DecisionEntry, string, error) {
	if err := codec.CheckKey(key); err != nil {
		return nil, "", err
	}
	p, err := store.NewDecisionPager(opts)
	if err != nil {
		return nil, "", err
	}
	if err := s.ready(ctx); err != nil {
		return nil, "", err
	}
	enc := codec.EncodeKey(key)
	resp, err := call(ctx, s, func(ctx context.Context) (*clientv3.GetResponse, error) {
		return s.kv.Get(ctx, s.keys.target(enc))
	})
	if err != nil {
		return nil, "", fmt.Errorf("list decisions of %s: %w", key, err)
	}
	kv := firstKV(resp.Kvs)
	if kv == nil {
		return nil, "", fmt.Errorf("list decisions of %s: %w", key, store.ErrNotFound)
	}
	t, err := decode(key, kv)
	if err != nil {
		return nil, "", fmt.Errorf("list decisions of %s: %w", key, err)
	}
	if !p.AddRecent(t.RecentDecisions) {
		out, next := p.Page()
		return out, next, nil
	}
	rev := resp.Header.Revision
	from := s.keys.decisionsOf(enc)
	bound := p.Before()
	if bound == 0 {
		bound = math.MaxUint64
	}
	end := s.keys.decisions + string(codec.EncodeDecisionKey(enc, bound))
	for {
		page, err := call(ctx, s, func(ctx context.Context) (*clientv3.GetResponse, error) {
			return s.kv.Get(ctx, from, clientv3.WithRange(end), clientv3.WithRev(rev),
				clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend), clientv3.WithLimit(listBatch))
		})
		if err != nil {
			return nil, "", fmt.Errorf("list decisions of %s: %w", key, err)
		}
		for _, kv := range page.Kvs {
			e, err := codec.UnmarshalDecision(kv.Value)
			if err != nil {
				return nil, "", fmt.Errorf("list decisions of %s: stored decision %q: %w", key, kv.Key, err)
			}
			if !p.Add(e) {
				out, next := p.Page()
				return out, next, nil
			}
		}
		if !page.More || len(page.Kvs) == 0 {
			break
		}
		end = string(page.Kvs[len(page.Kvs)-1].Key) // exclusive: the next read starts below it
	}
	out, next := p.Page()
	return out, next, nil
}
