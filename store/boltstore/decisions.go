package boltstore

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/hpa-recommender/hpa-recommender/store"
	"github.com/hpa-recommender/hpa-recommender/store/internal/codec"
)

// writeDecisions numbers next's new decision log entries and appends its retired ones to the
// decisions bucket, then trims the target's retired entries to the limits, all in tx. k is the
// target's encoded key. It updates next.DecisionLog and clears next.RetiredDecisions.
func (s *Store) writeDecisions(tx *bolt.Tx, k []byte, next *store.Target) error {
	b := tx.Bucket(bucketDecisions)
	floor := uint64(0)
	if next.DecisionLog.NextSeq == 0 && (len(next.RecentDecisions) > 0 || len(next.RetiredDecisions) > 0) {
		// A new log, or one whose bookkeeping a release without logs dropped: continue after
		// what the bucket holds.
		c := b.Cursor()
		sk, _ := c.Seek(codec.EncodeDecisionKey(k, math.MaxUint64))
		if sk == nil {
			sk, _ = c.Last()
		} else {
			sk, _ = c.Prev()
		}
		if sk != nil && bytes.HasPrefix(sk, k) {
			seq, err := codec.DecisionSeq(sk)
			if err != nil {
				return err
			}
			floor = seq + 1
		}
	}
	next.RecentDecisions = slices.Clone(next.RecentDecisions) // numbered in place below
	retired := slices.Clone(next.RetiredDecisions)
	next.RetiredDecisions = retired
	store.NumberDecisions(next, floor)
	next.RetiredDecisions = nil
	if len(retired) == 0 {
		return nil
	}
	for i := range retired {
		v, err := codec.MarshalDecision(&retired[i])
		if err != nil {
			return err
		}
		if err := b.Put(codec.EncodeDecisionKey(k, retired[i].Seq), v); err != nil {
			return err
		}
		next.DecisionLog.Retired++
		next.DecisionLog.Bytes += int64(len(v))
	}
	return s.trimDecisions(b, k, next)
}

// trimDecisions removes the target's oldest retired entries that its limits drop.
func (s *Store) trimDecisions(b *bolt.Bucket, k []byte, t *store.Target) error {
	recent := codec.RecentDecisionsSize(t)
	newest := t.NewestDecisionTime()
	var doomed [][]byte
	c := b.Cursor()
	for dk, v := c.Seek(k); dk != nil && bytes.HasPrefix(dk, k); dk, v = c.Next() {
		e, err := codec.UnmarshalDecision(v)
		if err != nil {
			return fmt.Errorf("stored decision %q: %w", dk, err)
		}
		if !s.limits.Expired(&e, newest, t.DecisionLog.Bytes+recent) {
			break
		}
		doomed = append(doomed, bytes.Clone(dk))
		t.DecisionLog.Retired--
		t.DecisionLog.Bytes -= int64(len(v))
	}
	for _, dk := range doomed {
		if err := b.Delete(dk); err != nil {
			return err
		}
	}
	return nil
}

// deleteDecisions removes every retired entry of the target whose encoded key is k.
func deleteDecisions(tx *bolt.Tx, k []byte) error {
	b := tx.Bucket(bucketDecisions)
	var doomed [][]byte
	c := b.Cursor()
	for dk, _ := c.Seek(k); dk != nil && bytes.HasPrefix(dk, k); dk, _ = c.Next() {
		doomed = append(doomed, bytes.Clone(dk))
	}
	for _, dk := range doomed {
		if err := b.Delete(dk); err != nil {
			return err
		}
	}
	return nil
}

// ListDecisions implements store.Store: the record's recent entries, then the retired ones
// walked backwards from the page token, in one read transaction.
func (s *Store) ListDecisions(ctx context.Context, key store.Key, opts store.DecisionListOptions) ([]store.DecisionEntry, string, error) {
	if err := codec.CheckKey(key); err != nil {
		return nil, "", err
	}
	p, err := store.NewDecisionPager(opts)
	if err != nil {
		return nil, "", err
	}
	if err := ctx.Err(); err != nil {
		return nil, "", err
	}
	k := codec.EncodeKey(key)
	err = s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketTargets).Get(k)
		if v == nil {
			return store.ErrNotFound
		}
		t, err := decode(key, v)
		if err != nil {
			return err
		}
		if !p.AddRecent(t.RecentDecisions) {
			return nil
		}
		bound := p.Before()
		if bound == 0 {
			bound = math.MaxUint64
		}
		c := tx.Bucket(bucketDecisions).Cursor()
		var dk, dv []byte
		if sk, _ := c.Seek(codec.EncodeDecisionKey(k, bound)); sk == nil {
			dk, dv = c.Last()
		} else {
			dk, dv = c.Prev()
		}
		for ; dk != nil && bytes.HasPrefix(dk, k); dk, dv = c.Prev() {
			e, err := codec.UnmarshalDecision(dv)
			if err != nil {
				return fmt.Errorf("stored decision %q: %w", dk, err)
			}
			if !p.Add(e) {
				break
			}
		}
		return nil
	})
	if err != nil {
		return nil, "", fmt.Errorf("list decisions of %s: %w", key, translate(err, s.path))
	}
	out, next := p.Page()
	return out, next, nil
}
