package boltstore

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/hpa-recommender/hpa-recommender/store"
	"github.com/hpa-recommender/hpa-recommender/store/internal/bounded"
	"github.com/hpa-recommender/hpa-recommender/store/internal/codec"
)

// Options tune the bolt store. The zero value gives the defaults.
type Options struct {
	// Timeout is how long Open waits for the file lock another process holds before failing.
	// Default 1s; never infinite (bbolt's own default would hang).
	Timeout time.Duration
	// MaxBatchSize is the most writes one group commit takes. Default 64.
	MaxBatchSize int
	// NoSync skips fsync on commit: faster, and loses recent writes on a machine crash. Default
	// false; for tests and throwaway data only.
	NoSync bool
	// CachedTargets is the most decoded records kept in memory to skip reading and decoding a
	// target's record on its next update (each takes a few KB). 0 means DefaultCachedTargets;
	// negative disables the cache. Reads (Get, List) always come from the file. A hit saves a
	// decode of ~10 µs, but every cached record is pointer-rich heap that each GC cycle marks:
	// with 10,000 the p99 at 10k and 100k targets was 2-3 times that without any cache
	// (docs/PERFORMANCE-HISTORY.md at 17d0253, "The decoded-record cache").
	CachedTargets int
	// CheckpointRecords, CheckpointBytes and CheckpointInterval say when the records in the
	// write-ahead log are copied into the bbolt file: once this many distinct targets wait, once
	// the log's current segment is this large, or this long after the last checkpoint, whichever
	// comes first. Zero means the default. CheckpointRecords' default follows the fleet:
	// FleetCheckpointRecords while the store holds no more targets than that, so that a fleet
	// that fits waits in the log whole and each target's many writes reach the file once;
	// DefaultCheckpointRecords beyond, where every target is written again only after
	// thousands of others and a larger log only costs memory (docs/PERFORMANCE-HISTORY.md at 17d0253, "eleventh
	// pass"). CheckpointBytes' default is 4 KiB per record of the current CheckpointRecords,
	// at least DefaultCheckpointBytes, so that the log's segment does not end a wait sized by
	// records first.
	CheckpointRecords  int
	CheckpointBytes    int64
	CheckpointInterval time.Duration
	// CheckpointChunk is the most records one checkpoint transaction writes; a checkpoint of
	// more commits in several. A bbolt commit syncs everything it wrote, and the log's syncs
	// queue behind it on the same disk: smaller transactions keep each stall short. Default
	// DefaultCheckpointChunk. The background checkpoint also rests between two transactions
	// as long as the last one took, so that it never holds the disk (nor a core) for more
	// than half the time while writes wait on their log syncs; except when it is behind (more
	// targets wait than CheckpointRecords allows: new targets are written faster than a paced
	// checkpoint copies them), when it writes behindChunks chunks at a time without resting,
	// so that the log and the memory it holds stay bounded.
	CheckpointChunk int

	// fleetRecords replaces FleetCheckpointRecords, for tests.
	fleetRecords int
}

// Defaults for Options.
const (
	DefaultTimeout            = time.Second
	DefaultMaxBatchSize       = 64
	DefaultCachedTargets      = 1000
	DefaultCheckpointRecords  = 4096
	FleetCheckpointRecords    = 16384
	DefaultCheckpointBytes    = 32 << 20
	DefaultCheckpointInterval = 10 * time.Second
	DefaultCheckpointChunk    = 64
)

// deleteChunk bounds how many targets one DeleteUnseenSince write removes, so TTL collection
// never makes one huge log frame.
const deleteChunk = 1000

// Store is a store.Store on one bbolt file and its write-ahead log.
//
// Writes commit in groups. One commit runs at a time, on the goroutine of one of the writes
// (the leader, see batch): it runs every pending write's function against the log's view of
// the data, appends what they wrote to the write-ahead log as one frame, syncs it once, and
// publishes the records into the overlay, an in-memory map of every record logged but not yet
// copied into bbolt. Readers look in the overlay first, then in bbolt. A checkpoint goroutine
// copies the overlay into bbolt and drops the log segments it covers. Only the checkpoint (and
// Open's replay) writes bbolt.
type Store struct {
	db       *bolt.DB
	path     string
	maxBatch int
	opts     Options

	hints *hints
	wal   *wal
	seq   int64 // the last revision handed out; the commit leader's alone after Open

	// omu guards overlay. The leader holds it for reading while a batch's functions run
	// (so no checkpoint removes a record between the overlay lookup and the bbolt read that
	// follows it), and for writing while it publishes a batch.
	omu     sync.RWMutex
	overlay map[string]logged

	ckMu     sync.Mutex    // one checkpoint at a time
	applied  uint64        // the newest log segment in bbolt; guarded by ckMu
	ckPoke   chan struct{} // asks the checkpoint goroutine for one now
	ckStop   chan struct{}
	ckDone   chan struct{}
	ckErr    atomic.Pointer[error] // the last background checkpoint's failure, nil once one succeeds
	mu       sync.RWMutex          // guards closed and adding writes
	closed   bool
	cmu      sync.Mutex     // guards pending and leading
	pending  []*write       // writes waiting for a commit, oldest first
	leading  bool           // a writer leads: it commits the pending writes or hands the lead on
	writes   sync.WaitGroup // writes added and not answered yet: Close waits for them
	tx       *batchTx       // the leader's
	batchBuf []*write       // the leader's
	targets  atomic.Int64   // records stored, in the file or the log: what logRecords follows

	// For Stats.
	commits, commitWrites, commitNanos, checkpoints, checkpointRecords, checkpointNanos atomic.Uint64
}

// logged is a record in the overlay: its encoding (nil: deleted) and revision.
type logged struct {
	val []byte
	rev int64
}

// write is one pending write: fn runs once, in the leader of its commit, against the batch's
// view. done gets its outcome, or errLead first when its writer is to lead the next commit.
type write struct {
	fn   func(*batchTx) error
	done chan error
}

var (
	_ store.Store         = (*Store)(nil)
	_ store.StatsReporter = (*Store)(nil)
)

// Open opens or creates the store file at path, creating its parent directory, checks its
// schema version, and replays the write-ahead log (path + ".wal") a crash left. A file written
// by a newer binary, or not a store at all, is refused with an error wrapping
// ErrUnsupportedSchema. If another process holds the file, Open fails after opts.Timeout with
// an error wrapping bbolt's ErrTimeout.
func Open(path string, opts Options) (*Store, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.MaxBatchSize <= 0 {
		opts.MaxBatchSize = DefaultMaxBatchSize
	}
	if opts.CachedTargets == 0 {
		opts.CachedTargets = DefaultCachedTargets
	}
	opts.CheckpointRecords = max(opts.CheckpointRecords, 0) // 0: logRecords follows the fleet
	opts.CheckpointBytes = max(opts.CheckpointBytes, 0)     // 0: logBytes follows logRecords
	opts.fleetRecords = cmp.Or(max(opts.fleetRecords, 0), FleetCheckpointRecords)
	opts.CheckpointInterval = cmp.Or(max(opts.CheckpointInterval, 0), DefaultCheckpointInterval)
	opts.CheckpointChunk = cmp.Or(max(opts.CheckpointChunk, 0), DefaultCheckpointChunk)
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
	s, err := open(db, path, opts)
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("open bolt store %s: %w", path, err)
	}
	return s, nil
}

// open finishes Open on the opened file: schema, replay, and the two goroutines.
func open(db *bolt.DB, path string, opts Options) (*Store, error) {
	if err := db.Update(initSchema); err != nil {
		return nil, err
	}
	dir := path + walSuffix
	last, err := replay(db, dir)
	if err != nil {
		return nil, err
	}
	var seq uint64
	var stored int
	_ = db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketTargets)
		seq, stored = b.Sequence(), b.Stats().KeyN // KeyN: from the leaves' headers, not each key
		return nil
	})
	_ = os.Remove(filepath.Join(dir, spareName)) // its zeros may not have reached the disk
	w, err := openWAL(dir, last+1, opts.NoSync)
	if err != nil {
		return nil, err
	}
	if err := w.removeThrough(last); err != nil {
		_ = w.close(false)
		return nil, err
	}
	s := &Store{db: db, path: path, maxBatch: opts.MaxBatchSize, opts: opts,
		hints: bounded.New[hint](opts.CachedTargets), wal: w, seq: int64(seq), applied: last, overlay: map[string]logged{},
		ckPoke: make(chan struct{}, 1), ckStop: make(chan struct{}), ckDone: make(chan struct{}),
		tx: &batchTx{idx: map[string]int{}}}
	s.tx.s = s
	s.targets.Store(int64(stored))
	go s.checkpointLoop()
	return s, nil
}

// replay copies into bbolt, in one transaction, every entry of the log segments in dir that no
// checkpoint covered, and records them as covered. It returns the newest segment number seen
// (or covered): the next segment must be numbered above it. The caller deletes the segments.
func replay(db *bolt.DB, dir string) (uint64, error) {
	var applied uint64
	err := db.View(func(tx *bolt.Tx) error {
		var err error
		applied, err = walApplied(tx)
		return err
	})
	if err != nil {
		return 0, err
	}
	segs, err := listSegments(dir)
	if err != nil {
		return 0, err
	}
	last := applied
	var es []entry
	for i, n := range segs {
		last = max(last, n)
		if n <= applied {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, segmentName(n)))
		if err != nil {
			return 0, fmt.Errorf("read write-ahead log: %w", err)
		}
		r := readFrames(data, n)
		if !r.complete && i < len(segs)-1 {
			// Only the newest segment can end in a frame a crash cut short: the older ones
			// were sealed and synced before the next one started.
			return 0, fmt.Errorf("write-ahead log segment %s is corrupt at byte %d of %d; it holds acknowledged writes that are not in the bbolt file. Keep a copy of %s for recovery",
				segmentName(n), r.end, len(data), dir)
		}
		es = append(es, r.es...)
	}
	if last == applied && len(es) == 0 {
		return last, nil
	}
	err = db.Update(func(tx *bolt.Tx) error { return applyEntries(tx, es, last) })
	if err != nil {
		return 0, fmt.Errorf("replay write-ahead log: %w", err)
	}
	return last, nil
}

// applyEntries writes es (in order: the last entry of a key wins) into the targets bucket,
// raises its sequence to the highest revision, and records segment seg as applied.
func applyEntries(tx *bolt.Tx, es []entry, seg uint64) error {
	b := tx.Bucket(bucketTargets)
	top := b.Sequence()
	for _, e := range es {
		var err error
		if e.val == nil {
			err = b.Delete([]byte(e.key))
		} else {
			err = b.Put([]byte(e.key), e.val)
		}
		if err != nil {
			return err
		}
		top = max(top, uint64(max(e.rev, 0)))
	}
	if err := b.SetSequence(top); err != nil {
		return err
	}
	return tx.Bucket(bucketMeta).Put(keyWALApplied, []byte(strconv.FormatUint(seg, 10)))
}

// batch adds fn to the pending writes and waits for its outcome: fn's own error, or the log's.
//
// The group commit has no goroutine of its own. A writer that finds no commit running leads:
// it commits the pending writes, its own first, on its own goroutine (lead). Writes that arrive
// meanwhile wait, and when the commit ends the oldest of them is handed the lead, commits
// them all (up to maxBatch), and so on. So a write that arrives alone, as most do at a fleet's
// rate, commits without waking another goroutine and being woken by it, and under load the
// writes that arrive during one sync share the next.
func (s *Store) batch(fn func(*batchTx) error) error {
	defer trace.StartRegion(context.Background(), CommitRegion).End()
	w := &write{fn: fn, done: make(chan error, 1)}
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return bolterrors.ErrDatabaseNotOpen
	}
	s.writes.Add(1)
	s.cmu.Lock()
	s.pending = append(s.pending, w)
	lead := !s.leading
	s.leading = true
	s.cmu.Unlock()
	s.mu.RUnlock()
	if !lead {
		if err := <-w.done; err != errLead {
			return err
		}
	}
	s.lead()
	return <-w.done
}

// CommitRegion names the runtime/trace region of a write's group commit, from joining it to
// its answer (waiting for the commit in flight, leading its own, the log's sync).
const CommitRegion = "boltstore: group commit"

// errLead, sent on a pending write's done, hands its writer the lead.
var errLead = errors.New("boltstore: lead the next commit")

// lead commits the oldest pending writes (the leader's own is the oldest: writes join at the
// end, and the lead goes to the first), then hands the lead to the oldest write still pending,
// or gives it up when none is.
func (s *Store) lead() {
	defer func() {
		if p := recover(); p != nil {
			// A commit cut short leaves its batch half done (the batch's view, the log's
			// buffer) and its writes unanswered: nothing may commit after it, and gRPC's
			// recovery must not turn this into one failed call. Stop the process, as a panic
			// on a goroutine of its own would.
			go func() { panic(p) }()
			select {}
		}
	}()
	s.cmu.Lock()
	n := min(len(s.pending), s.maxBatch)
	batch := append(s.batchBuf[:0], s.pending[:n]...)
	rest := copy(s.pending, s.pending[n:])
	clear(s.pending[rest:])
	s.pending = s.pending[:rest]
	s.cmu.Unlock()

	start := time.Now()
	s.commit(s.tx, batch)
	s.commitNanos.Add(uint64(time.Since(start)))
	clear(batch)
	s.batchBuf = batch[:0]

	s.cmu.Lock()
	if len(s.pending) == 0 {
		s.leading = false
		s.cmu.Unlock()
		return
	}
	next := s.pending[0]
	s.cmu.Unlock()
	next.done <- errLead
}

// commit runs the batch's functions, each seeing the writes of those before it; a function
// that fails has its own writes undone and gets its error alone. Then the writes go to the log
// in one frame and one sync, and into the overlay.
func (s *Store) commit(tx *batchTx, batch []*write) {
	errs := make([]error, len(batch))
	s.omu.RLock()
	for i, w := range batch {
		mark := len(tx.entries)
		if errs[i] = safely(w.fn, tx); errs[i] != nil {
			tx.undo(mark)
		}
	}
	tx.endReads()
	s.omu.RUnlock()
	var logErr error
	if len(tx.entries) > 0 {
		var size int64
		size, logErr = s.wal.append(tx.entries, func() {
			s.omu.Lock()
			for _, e := range tx.entries {
				s.overlay[e.key] = logged{val: e.val, rev: e.rev}
			}
			n := len(s.overlay)
			s.omu.Unlock()
			s.targets.Add(tx.grown())
			s.commits.Add(1)
			s.commitWrites.Add(uint64(len(tx.entries)))
			if n >= s.logRecords() {
				s.pokeCheckpoint()
			}
		})
		if logErr == nil && size >= s.logBytes() {
			s.pokeCheckpoint()
		}
		if logErr != nil {
			s.hints.Clear() // entries of this batch name revisions that were never stored
		}
	}
	tx.reset()
	for i, w := range batch {
		if errs[i] == nil {
			errs[i] = logErr
		}
		w.done <- errs[i]
		s.writes.Done()
	}
}

// batchTx is a batch's view of the data while its functions run: the batch's own writes so
// far, then the overlay, then bbolt (one read transaction, begun on first need).
type batchTx struct {
	s       *Store
	rtx     *bolt.Tx
	entries []entry        // the batch's writes, in order
	prev    []int          // for each entry, the index of the key's previous entry (-1: none)
	idx     map[string]int // each key's latest entry
	grew    []int8         // for each entry, how it changed the number of records: -1, 0 or 1
}

// get returns key k's current record, or nil. The slice is valid until the batch ends and must
// not be modified.
func (t *batchTx) get(k []byte) ([]byte, error) {
	if i, ok := t.idx[string(k)]; ok {
		return t.entries[i].val, nil
	}
	if e, ok := t.s.overlay[string(k)]; ok {
		return e.val, nil
	}
	if t.rtx == nil {
		rtx, err := t.s.db.Begin(false)
		if err != nil {
			return nil, err
		}
		t.rtx = rtx
	}
	return t.rtx.Bucket(bucketTargets).Get(k), nil
}

// nextRev hands out the next revision.
func (t *batchTx) nextRev() int64 {
	t.s.seq++
	return t.s.seq
}

// put records that k's record becomes val (nil: deleted) at rev; existed says whether k had a
// record before (what get returned).
func (t *batchTx) put(k []byte, val []byte, rev int64, existed bool) {
	key := string(k)
	p, ok := t.idx[key]
	if !ok {
		p = -1
	}
	t.entries = append(t.entries, entry{key: key, val: val, rev: rev})
	t.prev = append(t.prev, p)
	t.grew = append(t.grew, int8(b2i(val != nil)-b2i(existed)))
	t.idx[key] = len(t.entries) - 1
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// grown is how many more records the batch's writes leave than there were before it.
func (t *batchTx) grown() int64 {
	var n int64
	for _, g := range t.grew {
		n += int64(g)
	}
	return n
}

// undo drops the writes made since the batch had mark entries.
func (t *batchTx) undo(mark int) {
	for i := len(t.entries) - 1; i >= mark; i-- {
		if t.prev[i] < 0 {
			delete(t.idx, t.entries[i].key)
		} else {
			t.idx[t.entries[i].key] = t.prev[i]
		}
	}
	clear(t.entries[mark:])
	t.entries, t.prev, t.grew = t.entries[:mark], t.prev[:mark], t.grew[:mark]
}

// endReads ends the batch's read transaction: bbolt's slices are invalid from here on.
func (t *batchTx) endReads() {
	if t.rtx != nil {
		_ = t.rtx.Rollback()
		t.rtx = nil
	}
}

// reset empties the view for the next batch, keeping its allocations.
func (t *batchTx) reset() {
	clear(t.entries)
	t.entries, t.prev, t.grew = t.entries[:0], t.prev[:0], t.grew[:0]
	clear(t.idx)
}

// safely runs fn, turning a panic into an error: fn runs in the middle of a commit, perhaps on
// another write's goroutine, where a panic would stop the whole process (lead) instead of
// failing one write.
func safely(fn func(*batchTx) error, tx *batchTx) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic in update: %v", p)
		}
	}()
	return fn(tx)
}

// logRecords is how many distinct targets may wait in the log before a checkpoint: the
// CheckpointRecords set, else one that follows the fleet (see Options).
func (s *Store) logRecords() int {
	if s.opts.CheckpointRecords > 0 {
		return s.opts.CheckpointRecords
	}
	if s.targets.Load() <= int64(s.opts.fleetRecords) {
		return s.opts.fleetRecords
	}
	return DefaultCheckpointRecords
}

// logBytes is how large the log's segment may grow before a checkpoint: the CheckpointBytes
// set, else 4 KiB per record of logRecords, at least DefaultCheckpointBytes.
func (s *Store) logBytes() int64 {
	if s.opts.CheckpointBytes > 0 {
		return s.opts.CheckpointBytes
	}
	return max(DefaultCheckpointBytes, 4<<10*int64(s.logRecords()))
}

// pokeCheckpoint asks the checkpoint goroutine for a checkpoint, without waiting.
func (s *Store) pokeCheckpoint() {
	select {
	case s.ckPoke <- struct{}{}:
	default:
	}
}

// checkpointLoop checkpoints when poked and on an interval, until Close.
func (s *Store) checkpointLoop() {
	defer close(s.ckDone)
	tick := time.NewTicker(s.opts.CheckpointInterval)
	defer tick.Stop()
	s.spare(0)
	for {
		select {
		case <-s.ckStop:
			return
		case <-s.ckPoke:
		case <-tick.C:
		}
		logged, err := s.checkpointSized(true)
		if err != nil {
			s.ckErr.Store(&err)
		} else {
			s.ckErr.Store(nil)
		}
		s.spare(logged)
	}
}

// spare prepares the next segment, sized for twice what the last one held (bounded by
// CheckpointBytes, past which a checkpoint starts anyway): a slow trickle of writes does not
// pay for a large file of zeros at every checkpoint. A failure only costs speed: the next
// segment appends.
func (s *Store) spare(lastSegment int64) {
	size := min(max(2*lastSegment, minSpare), s.logBytes()+minSpare)
	_ = s.wal.prepareSpare(size)
}

// checkpoint copies every record logged so far into bbolt and deletes the log segments that
// held them. Records logged while it runs stay in the overlay for the next one.
func (s *Store) checkpoint() error {
	_, err := s.checkpointSized(false)
	return err
}

// checkpointSized is checkpoint, also returning how many bytes the segment it closed held.
// paced, it rests after each transaction but the last as long as that transaction took
// (Options.CheckpointChunk): the background checkpoint is paced, one that a caller waits for
// (Close, DeleteUnseenSince, tests) is not.
func (s *Store) checkpointSized(paced bool) (int64, error) {
	s.ckMu.Lock()
	defer s.ckMu.Unlock()
	seg, logged, err := s.wal.rotate()
	if err != nil {
		return 0, fmt.Errorf("checkpoint: %w", err)
	}
	// Every entry of the segments up to seg is in the overlay now (or in bbolt already).
	s.omu.RLock()
	snap := make([]entry, 0, len(s.overlay))
	for k, e := range s.overlay {
		snap = append(snap, entry{key: k, val: e.val, rev: e.rev})
	}
	s.omu.RUnlock()
	if len(snap) == 0 && seg == s.applied {
		return 0, nil // nothing logged since the last checkpoint
	}
	// Sorted keys make bbolt's inserts sequential: fewer page splits and touched pages.
	slices.SortFunc(snap, func(a, b entry) int { return strings.Compare(a.key, b.key) })
	start, records := time.Now(), len(snap)
	// In chunks; only the last records the segments as applied. A crash in between replays
	// them all over the chunks already written, in log order, which ends at the same records.
	for len(snap) > 0 || seg != s.applied {
		// Behind: more targets wait than the log may hold, because writes of new targets
		// come faster than a paced checkpoint copies them. Then it neither rests nor writes
		// small transactions, so that the log, and the memory it holds, stays bounded.
		behind := paced && s.overlayLen() > s.logRecords()
		size := s.opts.CheckpointChunk
		if behind {
			size *= behindChunks
		}
		chunk := snap[:min(len(snap), size)]
		snap = snap[len(chunk):]
		mark := s.applied
		if len(snap) == 0 {
			mark = seg
		}
		began := time.Now()
		if err := s.db.Update(func(tx *bolt.Tx) error { return applyEntries(tx, chunk, mark) }); err != nil {
			return 0, fmt.Errorf("checkpoint: %w", err)
		}
		s.applied = mark
		s.dropCheckpointed(chunk)
		if paced && len(snap) > 0 && !behind {
			// At 2,000 writes/s on 10k-100k targets this took the p99 from 6.9-7.2 ms to
			// 4.3-5.6 ms (docs/PERFORMANCE-HISTORY.md at 17d0253, "fourth pass").
			time.Sleep(time.Since(began))
		}
	}
	s.checkpoints.Add(1)
	s.checkpointRecords.Add(uint64(records))
	s.checkpointNanos.Add(uint64(time.Since(start)))
	if err := s.wal.removeThrough(seg); err != nil {
		return logged, fmt.Errorf("checkpoint: %w", err)
	}
	return logged, nil
}

// Stats implements store.StatsReporter.
func (s *Store) Stats() store.Stats {
	return store.Stats{
		Targets:           s.targets.Load(),
		LogTargets:        int64(s.overlayLen()),
		LogTargetsLimit:   int64(s.logRecords()),
		Commits:           s.commits.Load(),
		CommitWrites:      s.commitWrites.Load(),
		CommitTime:        time.Duration(s.commitNanos.Load()),
		SyncTime:          time.Duration(s.wal.syncNanos.Load()),
		Checkpoints:       s.checkpoints.Load(),
		CheckpointRecords: s.checkpointRecords.Load(),
		CheckpointTime:    time.Duration(s.checkpointNanos.Load()),
	}
}

// overlayLen is how many distinct targets wait in the log.
func (s *Store) overlayLen() int {
	s.omu.RLock()
	defer s.omu.RUnlock()
	return len(s.overlay)
}

// behindChunks is how many CheckpointChunks one transaction of a checkpoint that is behind
// writes: larger transactions cost less CPU per record (BenchmarkCheckpointRecordSize).
const behindChunks = 4

// dropCheckpointed removes from the overlay the records of es that bbolt now holds, unless
// a later write replaced them.
func (s *Store) dropCheckpointed(es []entry) {
	s.omu.Lock()
	defer s.omu.Unlock()
	for _, e := range es {
		if cur, ok := s.overlay[e.key]; ok && cur.rev == e.rev {
			delete(s.overlay, e.key)
		}
	}
}

// lookup returns k's current record as readers see it: the overlay's, else rtx's (nil: none).
// fromLog is true when it came from the overlay (then rtx was not read).
func (s *Store) lookup(rtx *bolt.Tx, k []byte) (v []byte, fromLog bool) {
	if e, ok := s.inLog(k); ok {
		return e.val, true
	}
	return rtx.Bucket(bucketTargets).Get(k), false
}

// inLog returns k's record in the overlay, if it has one.
func (s *Store) inLog(k []byte) (logged, bool) {
	s.omu.RLock()
	defer s.omu.RUnlock()
	e, ok := s.overlay[string(k)]
	return e, ok
}

// read runs fn with k's current record (nil: none), from the overlay or from bbolt. The record
// is valid only during fn. A checkpoint removes a record from the overlay only after bbolt's
// commit, so a read transaction begun after a miss in the overlay sees the record.
func (s *Store) read(k []byte, fn func(v []byte) error) error {
	if e, ok := s.inLog(k); ok {
		return fn(e.val)
	}
	return s.db.View(func(tx *bolt.Tx) error { return fn(tx.Bucket(bucketTargets).Get(k)) })
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
	err := s.read(codec.EncodeKey(key), func(v []byte) error {
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
		base     *store.Target // the record started from (nil: none), frozen
		baseRev  int64         // its revision; 0: none
		baseSpec []byte        // its spec's encoding (nil: unknown), frozen
	)
	h, cached := s.hints.GetBytes(k)
	// keep: build the decoded copy of what is written, for the cache and for Update's result.
	// Apply returns nothing, so its write builds one only for a key the cache holds or admits,
	// or whose ReportScale is due (see apply).
	keep := !shared || cached || s.hints.Admit()
	if cached {
		base, baseRev, baseSpec = h.t, h.rev, h.spec
	} else {
		err := s.read(k, func(v []byte) error {
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
	w, done, err := apply(key, base, baseSpec, fn, shared, keep)
	if err != nil || done {
		// fn failed or wrote nothing: that is the outcome at the moment of the read.
		return base, err
	}

	// Set by the closure, which runs once, in the commit's leader.
	var (
		result *store.Target // the target now stored (nil: none)
		fnErr  error
	)
	err = s.batch(func(tx *batchTx) error {
		result, fnErr = nil, nil
		v, err := tx.get(k)
		if err != nil {
			return err
		}
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
			next, done, err = apply(key, cur, nil, fn, shared, keep)
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
		rev := tx.nextRev()
		out, err := next.enc.Revise(rev)
		if err != nil {
			return err
		}
		tx.put(k, out, rev, v != nil)
		if next.frozen == nil { // not kept (Apply): the entry, if any, is stale now
			s.hints.DeleteBytes(k)
			return nil
		}
		stored := *next.frozen // a new entry: a published one is never modified
		stored.Revision = rev
		s.hints.Put(string(k), hint{rev: rev, t: &stored, spec: next.spec})
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

// awaitsReport reports whether next adds a decision that awaits its ReportScale to base: an
// update of the same target that comes within moments, which then finds the record kept
// decoded instead of reading and decoding it again, whatever the cache admits otherwise.
func awaitsReport(base, next *store.Target) bool {
	n := len(next.Pending)
	if n == 0 {
		return false
	}
	if base == nil || len(base.Pending) == 0 {
		return true
	}
	return base.Pending[len(base.Pending)-1].RecommendationID != next.Pending[n-1].RecommendationID
}

// decodeError is a stored record that does not decode: a store failure, not fn's error.
type decodeError struct{ err error }

func (e *decodeError) Error() string { return e.err.Error() }
func (e *decodeError) Unwrap() error { return e.err }

// prepared is fn's result ready to write: its encoding without a revision, and, when kept, its
// decoded form (what decoding that encoding would give) and its spec's encoding for the cache.
type prepared struct {
	enc    codec.Unrevised
	frozen *store.Target
	spec   []byte
}

// apply runs fn on a private copy of base (nil: absent), or on base itself when shared, and
// prepares its result for writing. done is true when fn returned nil: nothing to write.
// baseSpec is the encoding of base's spec as its cache entry keeps it (nil: unknown); when fn's
// result has the same spec, base's decoded spec is reused (codec.MarshalNormalizedAfter).
// Without keep, only the encoding is prepared (w.frozen and w.spec nil), unless fn's result
// adds a decision awaiting its report (awaitsReport).
func apply(key store.Key, base *store.Target, baseSpec []byte, fn store.UpdateFunc, shared, keep bool) (w prepared, done bool, err error) {
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
	if !keep && !awaitsReport(base, next) {
		if w.enc, err = codec.MarshalUnrevised(&withKey); err != nil {
			return prepared{}, false, &decodeError{err}
		}
		return w, false, nil
	}
	if w.enc, w.frozen, w.spec, err = codec.MarshalNormalizedAfter(&withKey, base, baseSpec); err != nil {
		return prepared{}, false, &decodeError{err}
	}
	return w, false, nil
}

// Delete implements store.Store: a write like an update's, logged as a deletion.
func (s *Store) Delete(ctx context.Context, key store.Key) error {
	if err := codec.CheckKey(key); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	k := codec.EncodeKey(key)
	err := s.batch(func(tx *batchTx) error {
		v, err := tx.get(k)
		if err != nil {
			return err
		}
		if v == nil {
			return store.ErrNotFound
		}
		s.hints.DeleteBytes(k)
		tx.put(k, nil, tx.nextRev(), true)
		return nil
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
	// List reads bbolt alone: first copy in what the log holds, so every write acknowledged
	// before the call is listed.
	if err := s.checkpoint(); err != nil {
		return nil, "", fmt.Errorf("list: %w", translate(err))
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

// DeleteUnseenSince implements store.Store: after a checkpoint, it finds candidates in a bbolt
// read transaction, then removes them in bounded writes that re-check LastSeen.
func (s *Store) DeleteUnseenSince(ctx context.Context, cutoff time.Time) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if err := s.checkpoint(); err != nil {
		return 0, fmt.Errorf("collect unseen targets: %w", translate(err))
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
		err := s.batch(func(tx *batchTx) error {
			n = 0
			for _, k := range chunk {
				v, err := tx.get(k)
				if err != nil {
					return err
				}
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
				s.hints.DeleteBytes(k)
				tx.put(k, nil, tx.nextRev(), true)
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
	if err == nil {
		err = s.wal.err()
	}
	if p := s.ckErr.Load(); err == nil && p != nil {
		err = *p
	}
	if err != nil {
		return fmt.Errorf("ping bolt store: %w", translate(err))
	}
	return nil
}

// Check runs bbolt's consistency check of the whole file and returns the first problem found.
// It also checks that every cached record that claims the stored revision encodes as the stored
// record does once decoded (a cached record modified by a caller would not). The cached record
// is compared with the decoded stored one, not with the stored bytes: a quantity whose text
// does not read back as itself ("62.5Ki" is written "64000", which reads back as "64k")
// encodes differently once decoded, in the cache as in any decoded copy.
func (s *Store) Check() error {
	// bbolt's check reads the free-page list, which a concurrent write transaction changes:
	// hold off checkpoints, the file's only writer.
	s.ckMu.Lock()
	defer s.ckMu.Unlock()
	var first error
	err := s.db.View(func(tx *bolt.Tx) error {
		// Drain the channel: the checking goroutine blocks until every error is received.
		for err := range tx.Check() {
			if first == nil {
				first = err
			}
		}
		for k, h := range s.hints.Snapshot() {
			v, _ := s.lookup(tx, []byte(k))
			if rev, ok := codec.Revision(v); !ok || rev != h.rev {
				continue // stale: never trusted
			}
			enc, err := codec.Marshal(h.t, h.rev)
			want := v
			if err == nil && !bytes.Equal(enc, v) {
				var stored *store.Target
				if stored, err = decode(h.t.Key, v); err == nil {
					want, err = codec.Marshal(stored, h.rev)
				}
			}
			if (err != nil || !bytes.Equal(enc, want)) && first == nil {
				first = fmt.Errorf("cached record of %s (revision %d) differs from the stored one (%v): something modified it", h.t.Key, h.rev, err)
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

// Close implements store.Store. Writes already pending commit first, then a last checkpoint
// copies the log into bbolt and removes it (if that fails, the log stays for the next Open to
// replay). Calling it again does nothing.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.writes.Wait()
	close(s.ckStop)
	<-s.ckDone
	err := s.checkpoint()
	if cerr := s.wal.close(err == nil); err == nil {
		err = cerr
	}
	if cerr := s.db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("close bolt store %s: %w", s.path, err)
	}
	return nil
}
