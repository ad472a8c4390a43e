package memstore

import (
	"context"
	"fmt"
	"hash/maphash"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hpa-recommender/hpa-recommender/store"
	"github.com/hpa-recommender/hpa-recommender/store/internal/codec"
)

// shardCount is how many parts the records are split into, each with its own lock, so that
// updates of different targets seldom wait for each other: a decision runs its UpdateFunc (the
// engine, tens of µs) under its part's lock.
const shardCount = 64

// Store is an in-memory store.Store. The zero value is not usable; call New.
//
// Records are kept in the record format every store writes (codec), split over shardCount
// maps by a hash of their key. Revisions come from one counter, so a target's revision grows
// with every write of it. List walks an index of the keys, sorted lazily: a key written for the
// first time waits in an unsorted set until the next List merges it, so a new target costs no
// O(targets) insert into a sorted slice.
type Store struct {
	closed atomic.Bool
	rev    atomic.Int64 // last revision handed out
	seed   maphash.Seed
	shards [shardCount]shard
	limits store.DecisionLogLimits

	// keysMu guards sorted and added; it is taken inside a shard's lock, never around one.
	keysMu sync.Mutex
	sorted []string            // sorted keys of records; never changed in place, so List may keep walking a copy
	added  map[string]struct{} // keys of records that are not in sorted yet
}

type shard struct {
	mu      sync.Mutex
	records map[string][]byte    // encoded key -> record (with its revision); never changed in place
	logs    map[string][]retired // encoded key -> the target's retired decisions, oldest first
	_       [40]byte             // a cache line of its own: writers on two CPUs do not share their locks' line
}

var _ store.Store = (*Store)(nil)

// Options tune the memory store. The zero value gives the defaults.
type Options struct {
	// DecisionLog bounds each target's decision log; zero fields: no bound.
	DecisionLog store.DecisionLogLimits
}

// New returns an empty store.
func New() *Store { return NewWithOptions(Options{}) }

// NewWithOptions returns an empty store tuned by opts.
func NewWithOptions(opts Options) *Store {
	s := &Store{seed: maphash.MakeSeed(), added: map[string]struct{}{}, limits: opts.DecisionLog}
	for i := range s.shards {
		s.shards[i].records = map[string][]byte{}
		s.shards[i].logs = map[string][]retired{}
	}
	return s
}

func (s *Store) shard(k string) *shard {
	return &s.shards[maphash.String(s.seed, k)%shardCount]
}

func (s *Store) check(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.closed.Load() {
		return fmt.Errorf("memstore closed: %w", store.ErrUnavailable)
	}
	return nil
}

func decode(key store.Key, b []byte) (*store.Target, error) {
	t, rev, err := codec.Unmarshal(b)
	if err != nil {
		return nil, err
	}
	t.Key, t.Revision = key, rev
	return t, nil
}

// lookup returns the record stored under k, read under its shard's lock. Records are never
// changed in place, so the bytes stay valid after the lock is released.
func (s *Store) lookup(ctx context.Context, k string) ([]byte, bool, error) {
	sh := s.shard(k)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return nil, false, err
	}
	b, ok := sh.records[k]
	return b, ok, nil
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, key store.Key) (*store.Target, error) {
	if err := codec.CheckKey(key); err != nil {
		return nil, err
	}
	b, ok, err := s.lookup(ctx, string(codec.EncodeKey(key)))
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("get %s: %w", key, store.ErrNotFound)
	}
	return decode(key, b)
}

// Update implements store.Store. fn is called exactly once, under the lock of the target's
// shard: it must not call back into the store.
func (s *Store) Update(ctx context.Context, key store.Key, fn store.UpdateFunc) (*store.Target, error) {
	if err := codec.CheckKey(key); err != nil {
		return nil, err
	}
	k := string(codec.EncodeKey(key))
	sh := s.shard(k)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	b, existed := sh.records[k]
	var arg *store.Target
	if existed {
		var err error
		if arg, err = decode(key, b); err != nil { // a copy of its own: fn may change it
			return nil, err
		}
	}
	next, err := fn(arg)
	switch {
	case err != nil:
		return nil, err
	case next == nil && existed:
		return decode(key, b) // not arg, which fn may have changed
	case next == nil:
		return nil, nil
	}
	withKey := *next // fn's result is not changed
	withKey.Key, withKey.Revision = key, s.rev.Add(1)
	log, err := s.writeDecisions(sh.logs[k], &withKey)
	if err != nil {
		return nil, err
	}
	enc, err := codec.Marshal(&withKey, withKey.Revision)
	if err != nil {
		return nil, err
	}
	sh.records[k] = enc
	if len(log) > 0 {
		sh.logs[k] = log
	} else {
		delete(sh.logs, k)
	}
	if !existed {
		s.keysMu.Lock()
		s.added[k] = struct{}{}
		s.keysMu.Unlock()
	}
	return &withKey, nil
}

// Delete implements store.Store.
func (s *Store) Delete(ctx context.Context, key store.Key) error {
	if err := codec.CheckKey(key); err != nil {
		return err
	}
	k := string(codec.EncodeKey(key))
	sh := s.shard(k)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return err
	}
	if _, ok := sh.records[k]; !ok {
		return fmt.Errorf("delete %s: %w", key, store.ErrNotFound)
	}
	delete(sh.records, k)
	delete(sh.logs, k)
	s.forget(map[string]struct{}{k: {}})
	return nil
}

// forget removes keys from the key index; its caller holds the lock of every shard they are in.
func (s *Store) forget(keys map[string]struct{}) {
	s.keysMu.Lock()
	defer s.keysMu.Unlock()
	inSorted := false
	for k := range keys {
		if _, ok := s.added[k]; ok {
			delete(s.added, k)
		} else {
			inSorted = true
		}
	}
	if inSorted {
		s.sorted = slices.DeleteFunc(slices.Clone(s.sorted), func(k string) bool { _, ok := keys[k]; return ok })
	}
}

// keys returns the sorted index of every key, merging the keys added since the last call.
func (s *Store) keys() []string {
	s.keysMu.Lock()
	defer s.keysMu.Unlock()
	if len(s.added) > 0 {
		add := slices.Sorted(maps.Keys(s.added))
		merged := make([]string, 0, len(s.sorted)+len(add))
		i, j := 0, 0
		for i < len(s.sorted) && j < len(add) {
			if s.sorted[i] < add[j] {
				merged = append(merged, s.sorted[i])
				i++
			} else {
				merged = append(merged, add[j])
				j++
			}
		}
		merged = append(append(merged, s.sorted[i:]...), add[j:]...)
		s.sorted = merged
		clear(s.added)
	}
	return s.sorted
}

// List implements store.Store.
func (s *Store) List(ctx context.Context, opts store.ListOptions) ([]store.TargetSummary, string, error) {
	r, err := codec.ListRange(opts)
	if err != nil {
		return nil, "", err
	}
	if err := s.check(ctx); err != nil {
		return nil, "", err
	}
	keys := s.keys()
	var out []store.TargetSummary
	i, _ := slices.BinarySearch(keys, string(r.Seek))
	for ; i < len(keys); i++ {
		k := keys[i]
		if !strings.HasPrefix(k, string(r.Prefix)) {
			break
		}
		if r.Skip != nil && k == string(r.Skip) {
			continue
		}
		key, err := codec.DecodeKey([]byte(k))
		if err != nil {
			return nil, "", err
		}
		if !opts.Matches(key) {
			continue
		}
		b, ok, err := s.lookup(ctx, k)
		if err != nil {
			return nil, "", err
		}
		if !ok {
			continue // deleted since the index was read
		}
		if len(out) == r.PageSize {
			return out, codec.EncodePageToken(out[len(out)-1].Key), nil
		}
		t, err := decode(key, b)
		if err != nil {
			return nil, "", err
		}
		out = append(out, t.Summary())
	}
	return out, "", nil
}

// DeleteUnseenSince implements store.Store. Each shard is swept under its own lock, so a
// target updated while the sweep runs is judged by the time its latest write carries.
func (s *Store) DeleteUnseenSince(ctx context.Context, cutoff time.Time) (int, error) {
	if err := s.check(ctx); err != nil {
		return 0, err
	}
	n := 0
	for i := range s.shards {
		removed, err := s.sweep(ctx, &s.shards[i], cutoff)
		n += removed
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func (s *Store) sweep(ctx context.Context, sh *shard, cutoff time.Time) (int, error) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return 0, err
	}
	doomed := map[string]struct{}{}
	for k, b := range sh.records {
		seen, err := codec.LastSeen(b)
		if err != nil {
			return 0, err
		}
		if seen.Before(cutoff) {
			doomed[k] = struct{}{}
		}
	}
	if len(doomed) == 0 {
		return 0, nil
	}
	for k := range doomed {
		delete(sh.records, k)
		delete(sh.logs, k)
	}
	s.forget(doomed)
	return len(doomed), nil
}

// Ping implements store.Store.
func (s *Store) Ping(ctx context.Context) error { return s.check(ctx) }

// Close implements store.Store.
func (s *Store) Close() error {
	s.closed.Store(true)
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		sh.records, sh.logs = nil, nil
		sh.mu.Unlock()
	}
	s.keysMu.Lock()
	s.sorted, s.added = nil, nil
	s.keysMu.Unlock()
	return nil
}
