package boltstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/trace"
	"sync/atomic"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/hpa-recommender/hpa-recommender/store"
	"github.com/hpa-recommender/hpa-recommender/store/internal/codec"
)

// Options tune the bolt store. The zero value gives the defaults.
type Options struct {
	// Timeout is how long Open waits for the file lock another process holds before failing.
	// Default DefaultTimeout; never infinite (bbolt's own default would hang).
	Timeout time.Duration
	// NoSync skips fsync on commit: faster, and loses recent writes on a machine crash. For
	// tests and throwaway data only.
	NoSync bool
	// MaxBatchSize is the most writes one transaction commits (commit.go); 1 commits each
	// write alone. Zero means DefaultMaxBatchSize.
	MaxBatchSize int
	// DecisionLog bounds each target's decision log (store/decisions.go). Zero fields: no
	// bound.
	DecisionLog store.DecisionLogLimits
}

// Defaults for Options; the package doc says why.
const (
	DefaultTimeout      = time.Second
	DefaultMaxBatchSize = 256
)

// deleteChunk bounds how many targets one DeleteUnseenSince transaction removes.
const deleteChunk = 1000

// Store is a store.Store on one bbolt file.
type Store struct {
	db      *bolt.DB
	path    string
	commits *committer // every Update and Delete
	limits  store.DecisionLogLimits
	// failed is the storage failure of the last write that failed: Ping reports it until its
	// own probe commits (a write that commits does not clear it).
	failed atomic.Pointer[error]
	// For CommitStats: the file's last transaction id at Open (bbolt gives each committed
	// write transaction the next id), and the writes committed since.
	openTxID int
	writes   atomic.Uint64
}

var (
	_ store.Store          = (*Store)(nil)
	_ store.CommitReporter = (*Store)(nil)
	_ store.Backuper       = (*Store)(nil)
)

// Open opens or creates the store file at path, creating its parent directory, checks its
// schema version and upgrades a file an older release left (migrate.go). A file written by a
// newer binary, or not a store at all, is refused with an error wrapping ErrUnsupportedSchema.
// If another process holds the file, Open fails after opts.Timeout with an error wrapping
// bbolt's ErrTimeout.
func Open(path string, opts Options) (*Store, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.MaxBatchSize <= 0 {
		opts.MaxBatchSize = DefaultMaxBatchSize
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, fmt.Errorf("open bolt store: %w", err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{
		Timeout: opts.Timeout,
		NoSync:  opts.NoSync,
		// As etcd runs bbolt: the free-page list is not written on every commit (Open rebuilds
		// it by walking the file), and is kept as a hash map.
		NoFreelistSync: true,
		FreelistType:   bolt.FreelistMapType,
	})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("open bolt store %s: file is locked by another process (waited %s): %w", path, opts.Timeout, err)
	}
	if err != nil {
		return nil, fmt.Errorf("open bolt store %s: %w", path, translate(err, path))
	}
	if err := migrate(db, path); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("open bolt store %s: %w", path, translate(err, path))
	}
	s := &Store{db: db, path: path, commits: newCommitter(db, opts.MaxBatchSize), limits: opts.DecisionLog}
	s.openTxID = s.txID()
	return s, nil
}

// txID is the id of the file's last committed write transaction.
func (s *Store) txID() int {
	id := 0
	_ = s.db.View(func(tx *bolt.Tx) error { id = tx.ID(); return nil })
	return id
}

// CommitStats implements store.CommitReporter.
func (s *Store) CommitStats() store.CommitStats {
	return store.CommitStats{
		Commits:   uint64(max(s.txID()-s.openTxID, 0)),
		Writes:    s.writes.Load(),
		WriteTime: s.writeTime(),
	}
}

// Path returns the file the store was opened on.
func (s *Store) Path() string { return s.path }

// translate maps bbolt's and the file system's errors onto the store's sentinels.
func translate(err error, path string) error {
	switch {
	case errors.Is(err, bolterrors.ErrDatabaseNotOpen):
		return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return &store.NoSpaceError{Where: path, Err: err}
	}
	return err
}

// wrote records the failure of a write transaction for Ping (nothing when err is nil: only
// Ping's probe clears a failure).
func (s *Store) wrote(err error) {
	if err != nil {
		s.failed.Store(&err)
	}
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
		return nil, fmt.Errorf("get %s: %w", key, translate(err, s.path))
	}
	return t, nil
}

// Update implements store.Store: one read-modify-write in a bbolt write transaction, which
// other targets' writes share (commit.go). fn runs, in the caller's goroutine, while the
// transaction is open; a transaction that fails is retried with each write on its own, so fn
// may run more than once. The revision is the targets bucket's next sequence, taken in the
// same transaction.
func (s *Store) Update(ctx context.Context, key store.Key, fn store.UpdateFunc) (*store.Target, error) {
	if err := codec.CheckKey(key); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	k := codec.EncodeKey(key)
	// Set by modify, which may run more than once (each run starts afresh), and finish.
	var (
		next    *store.Target // fn's result, to write
		result  *store.Target // what Update returns
		written bool
		fnErr   error
	)
	modify := func(v []byte) error {
		next, result, written, fnErr = nil, nil, false, nil
		var cur *store.Target
		if v != nil {
			var err error
			if cur, err = decode(key, v); err != nil {
				return err
			}
		}
		n, err := fn(cur)
		switch {
		case err != nil:
			// Nothing written; the rest of the batch commits. fn's error is returned below.
			fnErr = err
		case n == nil && v != nil:
			result, err = decode(key, v) // afresh: fn may have changed cur
			return err
		case n != nil:
			withKey := *n // fn's result is not changed
			withKey.Key = key
			next = &withKey
		}
		return nil
	}
	finish := func(tx *bolt.Tx) error {
		if next == nil {
			return nil
		}
		b := tx.Bucket(bucketTargets)
		rev, err := b.NextSequence()
		if err != nil {
			return err
		}
		next.Revision = int64(rev)
		if err := s.writeDecisions(tx, k, next); err != nil {
			return err
		}
		enc, err := codec.Marshal(next, int64(rev))
		if err != nil {
			return err
		}
		if err := b.Put(k, enc); err != nil {
			return err
		}
		result, written = next, true
		return nil
	}
	region := trace.StartRegion(ctx, CommitRegion)
	err := s.commits.write(bucketTargets, k, modify, finish)
	region.End()
	s.wrote(err)
	switch {
	case err != nil:
		return nil, fmt.Errorf("update %s: %w", key, translate(err, s.path))
	case fnErr != nil:
		return nil, fnErr
	}
	if written {
		s.writes.Add(1)
	}
	return result, nil
}

// CommitRegion names the runtime/trace region of an Update's write, from handing it to the
// committer to its commit (waiting for the commit before it, the transaction, the syncs).
const CommitRegion = "boltstore: commit"

// Delete implements store.Store.
func (s *Store) Delete(ctx context.Context, key store.Key) error {
	if err := codec.CheckKey(key); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	k := codec.EncodeKey(key)
	found := false
	err := s.commits.write(bucketTargets, k, func(v []byte) error { found = v != nil; return nil }, func(tx *bolt.Tx) error {
		if !found {
			return nil
		}
		if err := deleteDecisions(tx, k); err != nil {
			return err
		}
		return tx.Bucket(bucketTargets).Delete(k)
	})
	s.wrote(err)
	switch {
	case err != nil:
		return fmt.Errorf("delete %s: %w", key, translate(err, s.path))
	case !found:
		return fmt.Errorf("delete %s: %w", key, store.ErrNotFound)
	}
	s.writes.Add(1)
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
			key, err := codec.DecodeKey(k) // copies
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
		return nil, "", fmt.Errorf("list: %w", translate(err, s.path))
	}
	return out, next, nil
}

// DeleteUnseenSince implements store.Store: it finds candidates in a read transaction, then
// removes them in write transactions of at most deleteChunk targets that check LastSeen again.
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
		return 0, fmt.Errorf("collect unseen targets: %w", translate(err, s.path))
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
				if err := b.Delete(k); err != nil {
					return err
				}
				if err := deleteDecisions(tx, k); err != nil {
					return err
				}
				n++
			}
			return nil
		})
		s.wrote(err)
		if err != nil {
			return removed, fmt.Errorf("delete unseen targets: %w", translate(err, s.path))
		}
		s.writes.Add(uint64(n))
		removed += n
	}
	return removed, nil
}

// Ping implements store.Store: the file answers a read. After a write failed (a full disk),
// Ping reports that failure until a write of its own commits: it commits probeSize bytes under
// a key of the meta bucket and removes them again, so that health comes back once the disk has
// that much room, not at the first small write that fits into pages a failed one freed.
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
	if err == nil && s.failed.Load() != nil {
		err = s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keyProbe, make([]byte, probeSize)) })
		if err == nil {
			err = s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Delete(keyProbe) })
		}
		if err == nil {
			s.failed.Store(nil)
		} else {
			s.failed.Store(&err)
		}
	}
	if err != nil {
		return fmt.Errorf("ping bolt store: %w", translate(err, s.path))
	}
	return nil
}

// probeSize is the room Ping's probe asks of a disk that was full: several full batches of
// records (64 of ~2 KB each).
const probeSize = 1 << 20

// Check runs bbolt's consistency check of the whole file, decodes every record and decision
// log entry (each belonging to a stored target), and returns the first problem found.
func (s *Store) Check() error {
	var first error
	err := s.db.View(func(tx *bolt.Tx) error {
		// Drain the channel: the checking goroutine blocks until every error is received.
		for err := range tx.Check() {
			if first == nil {
				first = err
			}
		}
		if first != nil {
			return nil
		}
		err := tx.Bucket(bucketTargets).ForEach(func(k, v []byte) error {
			key, err := codec.DecodeKey(k)
			if err == nil {
				_, err = decode(key, v)
			}
			if err != nil && first == nil {
				first = fmt.Errorf("stored key %q: %w", k, err)
			}
			return nil
		})
		if err != nil || first != nil {
			return err
		}
		targets := tx.Bucket(bucketTargets)
		return tx.Bucket(bucketDecisions).ForEach(func(k, v []byte) error {
			seq, err := codec.DecisionSeq(k)
			var e store.DecisionEntry
			switch {
			case err != nil:
			case targets.Get(k[:len(k)-8]) == nil:
				err = errors.New("belongs to no stored target")
			default:
				if e, err = codec.UnmarshalDecision(v); err == nil && e.Seq != seq {
					err = fmt.Errorf("holds seq %d", e.Seq)
				}
			}
			if err != nil && first == nil {
				first = fmt.Errorf("stored decision %q: %w", k, err)
			}
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("check bolt store: %w", translate(err, s.path))
	}
	if first != nil {
		return fmt.Errorf("check bolt store %s: %w", s.path, first)
	}
	return nil
}

// Close implements store.Store; bbolt waits for the transactions in flight. Calling it again
// does nothing.
func (s *Store) Close() error {
	s.commits.close()
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("close bolt store %s: %w", s.path, err)
	}
	return nil
}

// writeTime is bbolt's time spent writing and syncing the pages of committed transactions.
func (s *Store) writeTime() time.Duration {
	st := s.db.Stats()
	return st.TxStats.GetWriteTime()
}

// Backup implements store.Backuper with bbolt's own hot backup: Tx.WriteTo in one read
// transaction, which copies the pages that transaction sees while write transactions go on.
// A read transaction held open blocks bbolt from remapping a growing file, so a write that
// needs the file to grow past its mapping waits for the backup to end.
func (s *Store) Backup(ctx context.Context, w io.Writer) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	var n int64
	err := s.db.View(func(tx *bolt.Tx) error {
		var err error
		n, err = tx.WriteTo(ctxWriter{ctx, w})
		return err
	})
	if err != nil {
		return n, fmt.Errorf("backup %s: %w", s.path, translate(err, s.path))
	}
	return n, nil
}

// ctxWriter fails its writes once ctx ends, so a backup to a gone caller stops.
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}
