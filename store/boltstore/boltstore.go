package boltstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/hpa-recommender/hpa-recommender/store"
	"github.com/hpa-recommender/hpa-recommender/store/internal/codec"
)

// Options tune the bolt store. The zero value gives the defaults.
type Options struct {
	// Timeout is how long Open waits for the file lock another process holds before failing.
	// Default 1s; never infinite (bbolt's own default would hang).
	Timeout time.Duration
	// MaxBatchSize is the most Updates committed in one transaction. Default 64.
	MaxBatchSize int
	// MaxBatchDelay selects the group commit. Zero (the default) commits as soon as the writer
	// is free: one goroutine commits every Update queued while the previous commit was
	// syncing, so a lone caller waits for one commit and never for a timer, and batches grow
	// with the load. Positive uses bbolt's db.Batch, which waits up to this long for
	// MaxBatchSize callers (at 2,000 writes/s and 2ms that adds up to 2ms to every write).
	MaxBatchDelay time.Duration
	// NoSync skips fsync on commit: faster, and loses recent writes on a machine crash. Default
	// false; for tests and throwaway data only.
	NoSync bool
	// CachedTargets is the most decoded records kept in memory to skip reading and decoding a
	// target's record on its next update (each takes a few KB). 0 means DefaultCachedTargets;
	// negative disables the cache. Reads (Get, List) always come from the file.
	CachedTargets int
}

// Defaults for Options.
const (
	DefaultTimeout       = time.Second
	DefaultMaxBatchSize  = 64
	DefaultMaxBatchDelay = 0 // commit when idle
	DefaultCachedTargets = 10000
)

// deleteChunk bounds how many targets one DeleteUnseenSince write transaction removes, so TTL
// collection never holds the writer lock for long.
const deleteChunk = 1000

// queueLength bounds the Updates waiting for the committer; more block their callers.
const queueLength = 1024

// Store is a store.Store on one bbolt file.
type Store struct {
	db   *bolt.DB
	path string
	// batchDelay > 0: writes go through db.Batch. Otherwise through queue to commitLoop.
	batchDelay time.Duration
	maxBatch   int

	hints *hints

	mu        sync.RWMutex // guards closed and sending on queue
	closed    bool
	queue     chan *write
	committed chan struct{} // closed when commitLoop has returned
}

// write is one queued Update: fn runs in the commit's transaction, possibly more than once.
type write struct {
	fn   func(*bolt.Tx) error
	done chan error
}

var _ store.Store = (*Store)(nil)

// Open opens or creates the store file at path, creating its parent directory, and checks its
// schema version: a file written by a newer binary, or not a store at all, is refused with an
// error wrapping ErrUnsupportedSchema. If another process holds the file, Open fails after
// opts.Timeout with an error wrapping bbolt's ErrTimeout.
func Open(path string, opts Options) (*Store, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.MaxBatchSize <= 0 {
		opts.MaxBatchSize = DefaultMaxBatchSize
	}
	if opts.MaxBatchDelay < 0 {
		opts.MaxBatchDelay = DefaultMaxBatchDelay
	}
	if opts.CachedTargets == 0 {
		opts.CachedTargets = DefaultCachedTargets
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, fmt.Errorf("open bolt store: %w", err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{
		Timeout: opts.Timeout,
		NoSync:  opts.NoSync,
		// As etcd runs bbolt: the free-page list is not written on every commit (Open rebuilds
		// it by walking the file, a fraction of a second for a million pages), and is kept as
		// a hash map, whose allocation does not slow down as the file fragments. Every commit
		// then writes and syncs fewer pages.
		NoFreelistSync: true,
		FreelistType:   bolt.FreelistMapType,
	})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("open bolt store %s: file is locked by another process (waited %s): %w", path, opts.Timeout, err)
	}
	if err != nil {
		return nil, fmt.Errorf("open bolt store %s: %w", path, err)
	}
	db.MaxBatchSize = opts.MaxBatchSize
	db.MaxBatchDelay = opts.MaxBatchDelay
	if err := db.Update(initSchema); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("open bolt store %s: %w", path, err)
	}
	s := &Store{db: db, path: path, batchDelay: opts.MaxBatchDelay, maxBatch: opts.MaxBatchSize,
		hints: newHints(opts.CachedTargets), committed: make(chan struct{})}
	if s.batchDelay > 0 {
		close(s.committed)
	} else {
		s.queue = make(chan *write, queueLength)
		go s.commitLoop()
	}
	return s, nil
}

// batch runs fn in a write transaction shared with other writes, as db.Batch does: fn may run
// more than once, and an error from fn fails that write alone.
func (s *Store) batch(fn func(*bolt.Tx) error) error {
	if s.batchDelay > 0 {
		return s.db.Batch(fn)
	}
	w := &write{fn: fn, done: make(chan error, 1)}
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return bolterrors.ErrDatabaseNotOpen
	}
	s.queue <- w
	s.mu.RUnlock()
	return <-w.done
}

// commitLoop is the group commit: it takes every write queued (up to maxBatch) and commits
// them in one transaction, so the writes that arrive while one commit syncs make the next.
func (s *Store) commitLoop() {
	defer close(s.committed)
	batch := make([]*write, 0, s.maxBatch)
	for first := range s.queue {
		batch = append(batch[:0], first)
	fill:
		for len(batch) < s.maxBatch {
			select {
			case w, ok := <-s.queue:
				if !ok {
					break fill
				}
				batch = append(batch, w)
			default:
				break fill
			}
		}
		s.commit(batch)
	}
}

// commit commits batch in one transaction. As in db.Batch, a write whose fn fails is taken out
// and retried alone (its error is its own), and the others are retried together.
func (s *Store) commit(batch []*write) {
	for len(batch) > 0 {
		failed := -1
		err := s.db.Update(func(tx *bolt.Tx) error {
			for i, w := range batch {
				if err := safely(w.fn, tx); err != nil {
					failed = i
					return err
				}
			}
			return nil
		})
		if failed < 0 {
			if err != nil {
				s.hints.clear() // belt and braces: entries are checked anyway
			}
			for _, w := range batch {
				w.done <- err
			}
			return
		}
		w := batch[failed]
		batch = slices.Delete(batch, failed, failed+1)
		w.done <- s.db.Update(func(tx *bolt.Tx) error { return safely(w.fn, tx) })
	}
}

// safely runs fn, turning a panic into an error: fn runs on the committer goroutine, where a
// panic would take the whole process down instead of failing one call.
func safely(fn func(*bolt.Tx) error, tx *bolt.Tx) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic in update: %v", p)
		}
	}()
	return fn(tx)
}

// Path returns the file the store was opened on.
func (s *Store) Path() string { return s.path }

// translate maps bbolt's errors onto the store's sentinels.
func translate(err error) error {
	if errors.Is(err, bolterrors.ErrDatabaseNotOpen) {
		return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
	}
	return err
}

func decode(key store.Key, v []byte) (*store.Target, error) {
	t, rev, err := codec.Unmarshal(v) // copies: the result never aliases bbolt's memory
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
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var t *store.Target
	err := s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketTargets).Get(codec.EncodeKey(key))
		if v == nil {
			return store.ErrNotFound
		}
		var err error
		t, err = decode(key, v)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", key, translate(err))
	}
	return t, nil
}

// Update implements store.Store. It joins a group commit, so fn may run more than once and in
// a transaction shared with other keys' updates; fn must not call the store.
func (s *Store) Update(ctx context.Context, key store.Key, fn store.UpdateFunc) (*store.Target, error) {
	result, err := s.update(ctx, key, fn, false)
	if err != nil || result == nil {
		return nil, err
	}
	return codec.Normalize(result) // result may be a cache entry: never hand it out
}

// Apply is Update without its result and without a private copy for fn, which saves two deep
// copies for callers that ignore the result and only read the current target (the server's
// Recommend and ReportScale). fn runs as in Update, except that its argument is shared with
// the store's cache and other callers: fn MUST NOT MODIFY IT, nor anything it points to. (What
// fn returns may share parts of it: the store copies what fn returns, and Check verifies that
// the cache still encodes to what is stored.)
func (s *Store) Apply(ctx context.Context, key store.Key, fn store.UpdateFunc) error {
	_, err := s.update(ctx, key, fn, true)
	return err
}

// update runs fn and stores its result, returning the target stored afterwards (nil: none),
// which may be shared with the cache and must not be modified.
//
// It is optimistic: it takes the record from the cache (or reads and decodes it in a read
// transaction), runs fn and encodes the result on the caller's goroutine, in parallel with
// other callers. The group commit's write transaction then only checks that the stored record
// still has the revision it started from, and writes. Decoding and encoding are most of an
// update's CPU, and in the write transaction they would run one after another for every write
// of the batch. If the record changed in between (a concurrent update of the same target, or a
// stale cache entry), the whole read-modify-write runs again inside the write transaction on the
// stored record, so fn may run twice; the store contract allows it.
//
// With shared, fn gets base itself instead of a private copy (see Apply).
func (s *Store) update(ctx context.Context, key store.Key, fn store.UpdateFunc, shared bool) (*store.Target, error) {
	if err := codec.CheckKey(key); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	k := codec.EncodeKey(key)
	var (
		base    *store.Target // the record started from (nil: none), frozen
		baseRev int64         // its revision; 0: none
	)
	if h, ok := s.hints.get(k); ok {
		base, baseRev = h.t, h.rev
	} else {
		err := s.db.View(func(tx *bolt.Tx) error {
			v := tx.Bucket(bucketTargets).Get(k)
			if v == nil {
				return nil
			}
			var err error
			if base, err = decode(key, v); err != nil {
				return &decodeError{err}
			}
			baseRev = base.Revision
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("update %s: %w", key, translate(err))
		}
	}
	w, done, err := apply(key, base, fn, shared)
	if err != nil || done {
		// fn failed or wrote nothing: that is the outcome at the moment of the read.
		return base, err
	}

	// Set by the last run of the closure, which is the one whose transaction committed.
	var (
		result *store.Target // the target now stored (nil: none)
		fnErr  error
	)
	err = s.batch(func(tx *bolt.Tx) error {
		result, fnErr = nil, nil
		b := tx.Bucket(bucketTargets)
		v := b.Get(k)
		next := w
		if rev, ok := codec.Revision(v); (v == nil && baseRev != 0) || (v != nil && (!ok || rev != baseRev)) {
			// Changed since the read: run fn again on the stored record, under the lock.
			var cur *store.Target
			if v != nil {
				var err error
				if cur, err = decode(key, v); err != nil {
					return &decodeError{err}
				}
			}
			var done bool
			var err error
			next, done, err = apply(key, cur, fn, shared)
			switch {
			case errors.As(err, new(*decodeError)):
				return err
			case err != nil:
				// Write nothing and let the rest of the batch commit; report fn's error below.
				fnErr = err
				return nil
			case done:
				result = cur
				return nil
			}
		}
		seq, err := b.NextSequence()
		if err != nil {
			return err
		}
		rev := int64(seq)
		out, err := codec.WithRevision(next.enc, rev)
		if err != nil {
			return err
		}
		if err := b.Put(k, out); err != nil {
			return err
		}
		stored := *next.frozen // a new entry: a published one is never modified
		stored.Revision = rev
		s.hints.put(k, rev, &stored)
		result = &stored
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("update %s: %w", key, translate(err))
	}
	if fnErr != nil {
		return nil, fnErr
	}
	return result, nil
}

// decodeError is a stored record that does not decode: a store failure, not fn's error.
type decodeError struct{ err error }

func (e *decodeError) Error() string { return e.err.Error() }
func (e *decodeError) Unwrap() error { return e.err }

// prepared is fn's result ready to write: its encoding without a revision, and its decoded
// form (what decoding that encoding would give) for the cache.
type prepared struct {
	enc    []byte
	frozen *store.Target
}

// apply runs fn on a private copy of base (nil: absent), or on base itself when shared, and
// prepares its result for writing. done is true when fn returned nil: nothing to write.
func apply(key store.Key, base *store.Target, fn store.UpdateFunc, shared bool) (w prepared, done bool, err error) {
	cur := base
	if base != nil && !shared {
		if cur, err = codec.Normalize(base); err != nil {
			return prepared{}, false, &decodeError{err}
		}
	}
	next, err := fn(cur)
	if err != nil {
		return prepared{}, false, err
	}
	if next == nil {
		return prepared{}, true, nil
	}
	withKey := *next
	withKey.Key = key
	if w.enc, w.frozen, err = codec.MarshalNormalized(&withKey); err != nil {
		return prepared{}, false, &decodeError{err}
	}
	return w, false, nil
}

// Delete implements store.Store. It is rare, so it takes its own transaction instead of a batch.
func (s *Store) Delete(ctx context.Context, key store.Key) error {
	if err := codec.CheckKey(key); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketTargets)
		k := codec.EncodeKey(key)
		if b.Get(k) == nil {
			return store.ErrNotFound
		}
		s.hints.drop(k)
		return b.Delete(k)
	})
	if err != nil {
		return fmt.Errorf("delete %s: %w", key, translate(err))
	}
	return nil
}

// List implements store.Store.
func (s *Store) List(ctx context.Context, opts store.ListOptions) ([]store.TargetSummary, string, error) {
	r, err := codec.ListRange(opts)
	if err != nil {
		return nil, "", err
	}
	if err := ctx.Err(); err != nil {
		return nil, "", err
	}
	var (
		out  []store.TargetSummary
		next string
	)
	err = s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketTargets).Cursor()
		for k, v := c.Seek(r.Seek); k != nil && r.InRange(k); k, v = c.Next() {
			if r.Skip != nil && bytes.Equal(k, r.Skip) {
				continue
			}
			key, err := codec.DecodeKey(k)
			if err != nil {
				return fmt.Errorf("stored key %q: %w", k, err)
			}
			if !opts.Matches(key) {
				continue
			}
			if len(out) == r.PageSize {
				next = codec.EncodePageToken(out[len(out)-1].Key)
				return nil
			}
			t, err := decode(key, v)
			if err != nil {
				return err
			}
			out = append(out, t.Summary())
		}
		return nil
	})
	if err != nil {
		return nil, "", fmt.Errorf("list: %w", translate(err))
	}
	return out, next, nil
}

// DeleteUnseenSince implements store.Store: it finds candidates in a read transaction, then
// removes them in bounded write transactions that re-check LastSeen.
func (s *Store) DeleteUnseenSince(ctx context.Context, cutoff time.Time) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	var doomed [][]byte
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketTargets).ForEach(func(k, v []byte) error {
			seen, err := codec.LastSeen(v)
			if err != nil {
				return fmt.Errorf("stored key %q: %w", k, err)
			}
			if seen.Before(cutoff) {
				doomed = append(doomed, bytes.Clone(k))
			}
			return nil
		})
	})
	if err != nil {
		return 0, fmt.Errorf("collect unseen targets: %w", translate(err))
	}
	removed := 0
	for len(doomed) > 0 {
		if err := ctx.Err(); err != nil {
			return removed, err
		}
		chunk := doomed[:min(deleteChunk, len(doomed))]
		doomed = doomed[len(chunk):]
		n := 0
		err := s.db.Update(func(tx *bolt.Tx) error {
			n = 0
			b := tx.Bucket(bucketTargets)
			for _, k := range chunk {
				v := b.Get(k)
				if v == nil {
					continue
				}
				seen, err := codec.LastSeen(v)
				if err != nil {
					return fmt.Errorf("stored key %q: %w", k, err)
				}
				if !seen.Before(cutoff) {
					continue // seen again since the scan
				}
				s.hints.drop(k)
				if err := b.Delete(k); err != nil {
					return err
				}
				n++
			}
			return nil
		})
		if err != nil {
			return removed, fmt.Errorf("delete unseen targets: %w", translate(err))
		}
		removed += n
	}
	return removed, nil
}

// Ping implements store.Store.
func (s *Store) Ping(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	err := s.db.View(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketTargets) == nil {
			return fmt.Errorf("bucket %q missing", bucketTargets)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("ping bolt store: %w", translate(err))
	}
	return nil
}

// Check runs bbolt's consistency check of the whole file and returns the first problem found.
// It also checks that every cached record that claims the stored revision encodes to exactly the
// stored bytes (a cached record modified by a caller would not).
func (s *Store) Check() error {
	var first error
	err := s.db.View(func(tx *bolt.Tx) error {
		// Drain the channel: the checking goroutine blocks until every error is received.
		for err := range tx.Check() {
			if first == nil {
				first = err
			}
		}
		b := tx.Bucket(bucketTargets)
		for k, h := range s.hints.snapshot() {
			v := b.Get([]byte(k))
			if rev, ok := codec.Revision(v); !ok || rev != h.rev {
				continue // stale: never trusted
			}
			enc, err := codec.Marshal(h.t, h.rev)
			if err != nil || !bytes.Equal(enc, v) {
				if first == nil {
					first = fmt.Errorf("cached record of %s (revision %d) differs from the stored one (%v): something modified it", h.t.Key, h.rev, err)
				}
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("check bolt store: %w", translate(err))
	}
	if first != nil {
		return fmt.Errorf("check bolt store %s: %w", s.path, first)
	}
	return nil
}

// Close implements store.Store. Writes already queued commit first. Calling it again does
// nothing.
func (s *Store) Close() error {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		if s.queue != nil {
			close(s.queue)
		}
	}
	s.mu.Unlock()
	<-s.committed
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("close bolt store %s: %w", s.path, err)
	}
	return nil
}
