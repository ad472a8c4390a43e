package memstore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hpa-recommender/hpa-recommender/store"
	"github.com/hpa-recommender/hpa-recommender/store/internal/codec"
)

// Store is an in-memory store.Store. The zero value is not usable; call New.
type Store struct {
	mu      sync.RWMutex
	closed  bool
	rev     int64             // last revision handed out
	records map[string][]byte // encoded key -> encoded record (with its revision)
	keys    []string          // the keys of records, sorted
}

var _ store.Store = (*Store)(nil)

// New returns an empty store.
func New() *Store { return &Store{records: map[string][]byte{}} }

func (s *Store) check(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.closed {
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

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, key store.Key) (*store.Target, error) {
	if err := codec.CheckKey(key); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	b, ok := s.records[string(codec.EncodeKey(key))]
	if !ok {
		return nil, fmt.Errorf("get %s: %w", key, store.ErrNotFound)
	}
	return decode(key, b)
}

// Update implements store.Store. fn is called exactly once, under the store's lock: it must not
// call back into the store.
func (s *Store) Update(ctx context.Context, key store.Key, fn store.UpdateFunc) (*store.Target, error) {
	if err := codec.CheckKey(key); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	k := string(codec.EncodeKey(key))
	var cur *store.Target
	if b, ok := s.records[k]; ok {
		var err error
		if cur, err = decode(key, b); err != nil {
			return nil, err
		}
	}
	var arg *store.Target
	if cur != nil {
		var err error
		if arg, err = codec.Normalize(cur); err != nil {
			return nil, err
		}
		arg.Key = key
	}
	next, err := fn(arg)
	if err != nil {
		return nil, err
	}
	if next == nil {
		return cur, nil
	}
	next = shallowWithKey(next, key)
	b, err := codec.Marshal(next, s.rev+1)
	if err != nil {
		return nil, err
	}
	s.rev++
	if _, ok := s.records[k]; !ok {
		i, _ := slices.BinarySearch(s.keys, k)
		s.keys = slices.Insert(s.keys, i, k)
	}
	s.records[k] = b
	return decode(key, b)
}

// shallowWithKey returns a copy of t's top level with Key set, so fn's result is not mutated.
func shallowWithKey(t *store.Target, key store.Key) *store.Target {
	c := *t
	c.Key = key
	return &c
}

// Delete implements store.Store.
func (s *Store) Delete(ctx context.Context, key store.Key) error {
	if err := codec.CheckKey(key); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return err
	}
	k := string(codec.EncodeKey(key))
	if _, ok := s.records[k]; !ok {
		return fmt.Errorf("delete %s: %w", key, store.ErrNotFound)
	}
	s.remove(k)
	return nil
}

func (s *Store) remove(k string) {
	delete(s.records, k)
	if i, ok := slices.BinarySearch(s.keys, k); ok {
		s.keys = slices.Delete(s.keys, i, i+1)
	}
}

// List implements store.Store.
func (s *Store) List(ctx context.Context, opts store.ListOptions) ([]store.TargetSummary, string, error) {
	r, err := codec.ListRange(opts)
	if err != nil {
		return nil, "", err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.check(ctx); err != nil {
		return nil, "", err
	}
	var out []store.TargetSummary
	i, _ := slices.BinarySearch(s.keys, string(r.Seek))
	for ; i < len(s.keys); i++ {
		k := s.keys[i]
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
		if len(out) == r.PageSize {
			return out, codec.EncodePageToken(out[len(out)-1].Key), nil
		}
		t, err := decode(key, s.records[k])
		if err != nil {
			return nil, "", err
		}
		out = append(out, t.Summary())
	}
	return out, "", nil
}

// DeleteUnseenSince implements store.Store.
func (s *Store) DeleteUnseenSince(ctx context.Context, cutoff time.Time) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return 0, err
	}
	var doomed []string
	for _, k := range s.keys {
		seen, err := codec.LastSeen(s.records[k])
		if err != nil {
			return 0, err
		}
		if seen.Before(cutoff) {
			doomed = append(doomed, k)
		}
	}
	for _, k := range doomed {
		s.remove(k)
	}
	return len(doomed), nil
}

// Ping implements store.Store.
func (s *Store) Ping(ctx context.Context) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.check(ctx)
}

// Close implements store.Store.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.records, s.keys = nil, nil
	return nil
}
