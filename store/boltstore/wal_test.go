package boltstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/hpa-recommender/hpa-recommender/recommender"
	"github.com/hpa-recommender/hpa-recommender/store"
	"github.com/hpa-recommender/hpa-recommender/store/internal/codec"
)

// noCheckpoints keeps every write in the log for the length of a test.
var noCheckpoints = Options{CheckpointInterval: time.Hour, CheckpointRecords: 1 << 30, CheckpointBytes: 1 << 40}

func openT(t *testing.T, path string, opts Options) *Store {
	t.Helper()
	s, err := Open(path, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func wkey(name string) store.Key { return store.Key{Cluster: "c", Namespace: "ns", Name: name} }

// setMax stores a target whose MaxReplicas is n under name.
func setMax(t *testing.T, s *Store, name string, n int32) {
	t.Helper()
	if _, err := s.Update(t.Context(), wkey(name), func(*store.Target) (*store.Target, error) {
		return &store.Target{Spec: recommender.Spec{MaxReplicas: n}}, nil
	}); err != nil {
		t.Fatal(err)
	}
}

func maxOf(t *testing.T, s *Store, name string) int32 {
	t.Helper()
	got, err := s.Get(t.Context(), wkey(name))
	if err != nil {
		t.Fatalf("Get %s: %v", name, err)
	}
	return got.Spec.MaxReplicas
}

// crashCopy copies the store's file and log into a new directory as a kill -9 would leave them
// (no checkpoint runs during the copy, and the file is only written by checkpoints), and
// returns the copy's file path.
func crashCopy(t *testing.T, s *Store) string {
	t.Helper()
	s.ckMu.Lock()
	defer s.ckMu.Unlock()
	dst := filepath.Join(t.TempDir(), "copy.db")
	copyFile(t, s.path, dst)
	segs, err := listSegments(s.path + walSuffix)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range segs {
		copyFile(t, filepath.Join(s.path+walSuffix, segmentName(n)), filepath.Join(dst+walSuffix, segmentName(n)))
	}
	return dst
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// onlySegment returns the path of the copy's single log segment.
func onlySegment(t *testing.T, db string) string {
	t.Helper()
	segs, err := listSegments(db + walSuffix)
	if err != nil || len(segs) != 1 {
		t.Fatalf("segments %v, %v; want exactly one", segs, err)
	}
	return filepath.Join(db+walSuffix, segmentName(segs[0]))
}

// TestReplayAfterCrash: writes acknowledged but never checkpointed (they are only in the log)
// are all there after a crash, deletions included, and revisions keep growing.
func TestReplayAfterCrash(t *testing.T) {
	s := openT(t, filepath.Join(t.TempDir(), "hpa.db"), noCheckpoints)
	for i := range 50 {
		setMax(t, s, fmt.Sprintf("t%d", i%5), int32(i))
	}
	if err := s.Delete(t.Context(), wkey("t0")); err != nil {
		t.Fatal(err)
	}
	last, err := s.Get(t.Context(), wkey("t4"))
	if err != nil {
		t.Fatal(err)
	}
	db := crashCopy(t, s)

	r := openT(t, db, noCheckpoints)
	for i := 1; i < 5; i++ {
		if got, want := maxOf(t, r, fmt.Sprintf("t%d", i)), int32(45+i); got != want {
			t.Errorf("t%d: MaxReplicas %d after replay, want %d", i, got, want)
		}
	}
	if _, err := r.Get(t.Context(), wkey("t0")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("deleted t0 after replay: %v, want ErrNotFound", err)
	}
	next, err := r.Update(t.Context(), wkey("t4"), func(cur *store.Target) (*store.Target, error) { return cur, nil })
	if err != nil {
		t.Fatal(err)
	}
	if next.Revision <= last.Revision+1 { // the delete of t0 took last.Revision+1
		t.Errorf("revision %d after replay, want above %d: revisions must never repeat", next.Revision, last.Revision+1)
	}
	if err := r.Check(); err != nil {
		t.Error(err)
	}
	segs, _ := listSegments(db + walSuffix)
	if len(segs) != 1 {
		t.Errorf("segments after replay %v: replayed ones must be gone, one new one open", segs)
	}
}

// TestReplayStopsAtTornFrame: a frame a machine crash cut short, or whose bytes did not all
// reach the disk, is the last write and was never acknowledged: replay keeps every frame before
// it and drops it.
func TestReplayStopsAtTornFrame(t *testing.T) {
	s := openT(t, filepath.Join(t.TempDir(), "hpa.db"), noCheckpoints)
	for i := range 10 {
		setMax(t, s, "web", int32(i+1)) // one frame each: every Update waits for its commit
	}
	end := s.wal.size           // where the frames end (the segment is preallocated: zeros follow)
	lastFrame := len(s.wal.buf) // the buffer holds the last frame written
	for name, damage := range map[string]func(t *testing.T, seg string){
		"cut in the header": func(t *testing.T, seg string) { truncate(t, seg, end-int64(lastFrame)+3) },
		"cut in the payload": func(t *testing.T, seg string) {
			truncate(t, seg, end-int64(lastFrame/2))
		},
		"a flipped byte": func(t *testing.T, seg string) { flip(t, seg, end-10) },
		"garbage after it": func(t *testing.T, seg string) {
			f, err := os.OpenFile(seg, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteAt([]byte("\xff\xff\xff\x7fjunk"), end); err != nil {
				t.Fatal(err)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			db := crashCopy(t, s)
			damage(t, onlySegment(t, db))
			r := openT(t, db, noCheckpoints)
			want := int32(9)
			if name == "garbage after it" {
				want = 10 // every frame intact; only what follows is junk
			}
			if got := maxOf(t, r, "web"); got != want {
				t.Errorf("MaxReplicas %d after replay, want %d", got, want)
			}
			if err := r.Check(); err != nil {
				t.Error(err)
			}
		})
	}
}

func truncate(t *testing.T, path string, size int64) {
	t.Helper()
	if err := os.Truncate(path, size); err != nil {
		t.Fatal(err)
	}
}

func flip(t *testing.T, path string, at int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[at] ^= 0x40
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestCorruptOlderSegmentIsRefused: a bad frame in a segment followed by another cannot be a
// torn write (a segment is complete and synced before the next starts), so acknowledged writes
// would be lost: Open refuses, names the damage, and deletes nothing.
func TestCorruptOlderSegmentIsRefused(t *testing.T) {
	s := openT(t, filepath.Join(t.TempDir(), "hpa.db"), noCheckpoints)
	setMax(t, s, "web", 1)
	setMax(t, s, "api", 1)
	if _, _, err := s.wal.rotate(); err != nil {
		t.Fatal(err)
	}
	setMax(t, s, "web", 2)
	db := crashCopy(t, s)
	segs, err := listSegments(db + walSuffix)
	if err != nil || len(segs) != 2 {
		t.Fatalf("segments %v, %v; want two", segs, err)
	}
	older := filepath.Join(db+walSuffix, segmentName(segs[0]))
	flip(t, older, frameHeader+2)

	r, err := Open(db, noCheckpoints)
	if err == nil {
		_ = r.Close()
		t.Fatal("Open succeeded on a log with a corrupt older segment")
	}
	for _, want := range []string{"corrupt", segmentName(segs[0]), "acknowledged"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if after, _ := listSegments(db + walSuffix); !reflect.DeepEqual(after, segs) {
		t.Errorf("segments %v after the refused Open, want %v untouched", after, segs)
	}
}

// TestCheckpointedSegmentsAreNotReplayed: a checkpoint records which segments it covers in the
// same bbolt transaction, so a covered segment whose deletion did not survive a crash is not
// replayed over newer records.
func TestCheckpointedSegmentsAreNotReplayed(t *testing.T) {
	s := openT(t, filepath.Join(t.TempDir(), "hpa.db"), noCheckpoints)
	for i := range 5 {
		setMax(t, s, "web", int32(i+1))
	}
	stale := crashCopy(t, s) // its log holds web=1..5
	if err := s.checkpoint(); err != nil {
		t.Fatal(err)
	}
	for i := 5; i < 8; i++ {
		setMax(t, s, "web", int32(i+1))
	}
	if err := s.checkpoint(); err != nil {
		t.Fatal(err)
	}
	if s.overlayLen() != 0 {
		t.Errorf("%d records left in the overlay after a checkpoint of an idle store", s.overlayLen())
	}
	db := crashCopy(t, s)
	segs, _ := listSegments(stale + walSuffix)
	for _, n := range segs {
		copyFile(t, filepath.Join(stale+walSuffix, segmentName(n)), filepath.Join(db+walSuffix, segmentName(n)))
	}
	r := openT(t, db, noCheckpoints)
	if got := maxOf(t, r, "web"); got != 8 {
		t.Errorf("MaxReplicas %d after reopening with a covered segment left behind, want 8", got)
	}
}

// TestLogFailureStopsWritesNotReads: once a log write fails, what reached the log is unknown,
// so every later write fails (and Ping reports it) while reads go on serving what was
// acknowledged; a reopen finds it all.
func TestLogFailureStopsWritesNotReads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hpa.db")
	s, err := Open(path, noCheckpoints)
	if err != nil {
		t.Fatal(err)
	}
	setMax(t, s, "web", 3)
	_ = s.wal.f.Close() // the next write fails as a full or failed disk would fail it
	put := func(n int32) error {
		_, err := s.Update(t.Context(), wkey("web"), func(*store.Target) (*store.Target, error) {
			return &store.Target{Spec: recommender.Spec{MaxReplicas: n}}, nil
		})
		return err
	}
	if err := put(4); err == nil || !strings.Contains(err.Error(), "write-ahead log") {
		t.Fatalf("update with a failed log: %v, want a write-ahead log error", err)
	}
	if err := put(5); err == nil {
		t.Fatal("an update after a log failure succeeded")
	}
	if err := s.Ping(t.Context()); err == nil {
		t.Error("Ping is healthy after a log failure")
	}
	if got := maxOf(t, s, "web"); got != 3 {
		t.Errorf("MaxReplicas %d after failed updates, want the acknowledged 3", got)
	}
	_ = s.Close()
	r := openT(t, path, noCheckpoints)
	if got := maxOf(t, r, "web"); got != 3 {
		t.Errorf("MaxReplicas %d after reopening, want the acknowledged 3", got)
	}
}

// TestCleanCloseLeavesNoLog: Close checkpoints, so a stopped store is one bbolt file that any
// bbolt tool reads in full.
func TestCleanCloseLeavesNoLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hpa.db")
	s, err := Open(path, noCheckpoints)
	if err != nil {
		t.Fatal(err)
	}
	setMax(t, s, "web", 3)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + walSuffix); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("log directory after a clean Close: %v, want it gone", err)
	}
}

// TestFramesRoundTrip: frames decode to what was written, and a log cut at any byte decodes
// to exactly the frames wholly before the cut; reading stops at a seal, and frames of another
// segment are not read.
func TestFramesRoundTrip(t *testing.T) {
	const seg = 7
	batches := [][]entry{
		{{key: "a", val: []byte("1"), rev: 1}},
		{{key: "b", val: nil, rev: 2}, {key: "a", val: []byte{}, rev: 3}},
		{{key: strings.Repeat("k", 300), val: []byte(strings.Repeat("v", 70000)), rev: 1 << 40}},
	}
	var log []byte
	var ends []int
	for _, b := range batches {
		log = appendFrame(log, seg, b)
		ends = append(ends, len(log))
	}
	sealed := appendSeal(slices.Clone(log), seg)
	for cut := 0; cut <= len(sealed); cut++ {
		r := readFrames(sealed[:cut], seg)
		var want []entry
		wantEnd := 0
		for i, e := range ends {
			if e <= cut {
				want = append(want, batches[i]...)
				wantEnd = e
			}
		}
		if cut == len(sealed) {
			wantEnd = cut
		}
		if r.end != wantEnd || !reflect.DeepEqual(r.es, want) || r.complete != (cut == len(sealed)) {
			t.Fatalf("cut at %d: %d entries ending at %d (complete %v), want %d ending at %d", cut, len(r.es), r.end, r.complete, len(want), wantEnd)
		}
	}

	// What follows a seal is not read, and a frame naming another segment ends the frames.
	stale := appendFrame(nil, seg-1, batches[0])
	if r := readFrames(append(slices.Clone(sealed), appendFrame(nil, seg, batches[0])...), seg); r.end != len(sealed) || len(r.es) != 4 {
		t.Errorf("a frame after the seal was read: %d entries ending at %d", len(r.es), r.end)
	}
	if r := readFrames(append(slices.Clone(log), stale...), seg); r.end != len(log) || r.complete {
		t.Errorf("a frame of segment %d was read as one of %d: end %d, complete %v", seg-1, seg, r.end, r.complete)
	}
	if r := readFrames(stale, seg); r.end != 0 || len(r.es) != 0 {
		t.Errorf("a file of another segment's frames read as %d entries", len(r.es))
	}
}

// TestOlderSegmentEndsInItsSeal: a segment made from a preallocated spare of zeros ends in its
// seal and the zeros its frames did not overwrite, which is no damage: replay reads it and the
// segments after it.
func TestOlderSegmentEndsInItsSeal(t *testing.T) {
	s := openT(t, filepath.Join(t.TempDir(), "hpa.db"), noCheckpoints)
	setMax(t, s, "web", 1)
	if err := s.wal.prepareSpare(minSpare); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.wal.rotate(); err != nil {
		t.Fatal(err)
	}
	setMax(t, s, "web", 2)
	setMax(t, s, "api", 7)
	if _, _, err := s.wal.rotate(); err != nil {
		t.Fatal(err)
	}
	setMax(t, s, "web", 3)
	db := crashCopy(t, s)
	segs, _ := listSegments(db + walSuffix)
	if len(segs) != 3 {
		t.Fatalf("segments %v, want three", segs)
	}
	middle, err := os.ReadFile(filepath.Join(db+walSuffix, segmentName(segs[1])))
	if err != nil {
		t.Fatal(err)
	}
	if r := readFrames(middle, segs[1]); !r.complete || r.end >= len(middle) || !allZero(middle[r.end:]) {
		t.Fatalf("the middle segment (%d bytes, frames end at %d, sealed %v) is not a sealed preallocated one", len(middle), r.end, r.complete)
	}
	r := openT(t, db, noCheckpoints)
	if got := maxOf(t, r, "web"); got != 3 {
		t.Errorf("web: MaxReplicas %d after replay, want 3", got)
	}
	if got := maxOf(t, r, "api"); got != 7 {
		t.Errorf("api: MaxReplicas %d after replay, want 7", got)
	}
}

// TestReusedSegmentIsNotReplayedPastItsFrames: a checkpoint keeps the segment it covered as
// the next segment's file, whose new frames overwrite only the start of the old ones. After a
// crash, replay reads the new frames and none of the old, which here start exactly where the
// new ones end (same key, values and revisions of the same width) and would set web back to 39.
func TestReusedSegmentIsNotReplayedPastItsFrames(t *testing.T) {
	s := openT(t, filepath.Join(t.TempDir(), "hpa.db"), noCheckpoints)
	for i := range 10 {
		setMax(t, s, "pad", int32(i+1)) // revisions 1-10: the rest have two digits
	}
	if err := s.checkpoint(); err != nil {
		t.Fatal(err)
	}
	old := s.wal.seg
	for i := range 20 {
		setMax(t, s, "web", int32(20+i)) // revisions 11-30, MaxReplicas 20-39
	}
	if err := s.checkpoint(); err != nil {
		t.Fatal(err)
	}
	if !s.wal.spare {
		t.Fatal("the checkpoint did not keep its segment as the spare")
	}
	setMax(t, s, "api", 30)
	if err := s.checkpoint(); err != nil { // the rotation takes the spare: old's file
		t.Fatal(err)
	}
	if s.wal.seg != old+2 {
		t.Fatalf("writing segment %d, want %d", s.wal.seg, old+2)
	}
	setMax(t, s, "web", 40) // revisions 32 and 33
	setMax(t, s, "web", 41)
	db := crashCopy(t, s)
	seg := onlySegment(t, db)
	data, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	r := readFrames(data, s.wal.seg)
	if len(r.es) != 2 {
		t.Fatalf("segment %s: %d entries, want 2", seg, len(r.es))
	}
	payload, _, ok := frameAt(data[r.end:], old)
	if !ok {
		t.Fatalf("segment %s: the new frames do not end where an old one of segment %d starts", seg, old)
	}
	if es, _ := decodePayload(payload); len(es) != 1 || es[0].key != r.es[0].key {
		t.Fatalf("the old frame after the new ones holds %v, want a record of %s", es, r.es[0].key)
	}
	rs := openT(t, db, noCheckpoints)
	for name, want := range map[string]int32{"web": 41, "api": 30, "pad": 10} {
		if got := maxOf(t, rs, name); got != want {
			t.Errorf("%s: MaxReplicas %d after replay, want %d", name, got, want)
		}
	}
}

// TestFirstFormatSegmentReplays: a segment of the log's first format (8-byte frame headers,
// no segment numbers, no seal; the older ones end in zeros) that a crash left is replayed.
func TestFirstFormatSegmentReplays(t *testing.T) {
	db, segs, path, r := crashedWithOneSegment(t, 1, 1)
	// Rewrite the one segment in the first format, followed by zeros, and add a second.
	first := append(legacyFrameOf(r.es), make([]byte, 100)...)
	second := legacyFrameOf([]entry{r.es[len(r.es)-1]}) // api's record again
	second = append(second, legacyFrameOf([]entry{{key: r.es[0].key, val: nil, rev: 1 << 20}})...)
	if err := os.WriteFile(path, first, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(db+walSuffix, segmentName(segs[0]+1)), second, 0o600); err != nil {
		t.Fatal(err)
	}
	// A copy whose older first-format segment is damaged (a byte where zeros should be).
	damaged := filepath.Join(t.TempDir(), "copy.db")
	copyFile(t, db, damaged)
	copyFile(t, filepath.Join(db+walSuffix, segmentName(segs[0]+1)), filepath.Join(damaged+walSuffix, segmentName(segs[0]+1)))
	if err := os.WriteFile(filepath.Join(damaged+walSuffix, segmentName(segs[0])), append(first[:len(first)-100], 1), 0o600); err != nil {
		t.Fatal(err)
	}

	rs := openT(t, db, noCheckpoints)
	if got := maxOf(t, rs, "api"); got != 1 {
		t.Errorf("api: MaxReplicas %d after replay, want 1", got)
	}
	if _, err := rs.Get(t.Context(), wkey("web")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("web: %v after replaying its deletion, want not found", err)
	}
	if r, err := Open(damaged, noCheckpoints); err == nil || !strings.Contains(err.Error(), "corrupt") {
		if r != nil {
			_ = r.Close()
		}
		t.Errorf("Open of a damaged older first-format segment: %v, want it refused", err)
	}
}

// crashedWithOneSegment writes web's and api's MaxReplicas (no checkpoint) and returns a crash
// copy of the store: its file, its log's one segment number and path, and what that holds.
func crashedWithOneSegment(t *testing.T, web, api int32) (db string, segs []uint64, path string, r segmentRead) {
	t.Helper()
	s := openT(t, filepath.Join(t.TempDir(), "hpa.db"), noCheckpoints)
	setMax(t, s, "web", web)
	setMax(t, s, "api", api)
	db = crashCopy(t, s)
	segs, _ = listSegments(db + walSuffix)
	if len(segs) != 1 {
		t.Fatalf("segments %v, want one", segs)
	}
	path = filepath.Join(db+walSuffix, segmentName(segs[0]))
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return db, segs, path, readFrames(data, segs[0])
}

// legacyFrameOf encodes es as one frame of the log's first format.
func legacyFrameOf(es []entry) []byte {
	b := appendFrame(nil, 0, es)
	payload := b[frameHeader:]
	out := binary.LittleEndian.AppendUint32(nil, uint32(len(payload)))
	out = binary.LittleEndian.AppendUint32(out, crc32.Checksum(payload, castagnoli))
	return append(out, payload...)
}

// TestChunkedCheckpoint: a checkpoint larger than a chunk commits in several transactions and
// still copies every record, empties the overlay and drops the log it covers.
func TestChunkedCheckpoint(t *testing.T) {
	opts := noCheckpoints
	opts.CheckpointChunk = 3
	s := openT(t, filepath.Join(t.TempDir(), "hpa.db"), opts)
	for i := range 10 {
		setMax(t, s, fmt.Sprintf("t%d", i), int32(i+1))
	}
	if err := s.Delete(t.Context(), wkey("t4")); err != nil {
		t.Fatal(err)
	}
	if err := s.checkpoint(); err != nil {
		t.Fatal(err)
	}
	if n := s.overlayLen(); n != 0 {
		t.Errorf("%d records left in the overlay", n)
	}
	if segs, _ := listSegments(s.path + walSuffix); len(segs) != 1 {
		t.Errorf("segments %v after the checkpoint, want only the open one", segs)
	}
	var applied uint64
	if err := s.db.View(func(tx *bbolt.Tx) error {
		var err error
		applied, err = walApplied(tx)
		if n := tx.Bucket(bucketTargets).Stats().KeyN; n != 9 {
			t.Errorf("%d records in the file, want 9", n)
		}
		return err
	}); err != nil || applied != s.wal.seg-1 {
		t.Errorf("wal_applied %d (%v), want %d", applied, err, s.wal.seg-1)
	}
	for i := range 10 {
		if i == 4 {
			continue
		}
		if got := maxOf(t, s, fmt.Sprintf("t%d", i)); got != int32(i+1) {
			t.Errorf("t%d: MaxReplicas %d, want %d", i, got, i+1)
		}
	}
}

// overlayLen is how many records wait in the log for a checkpoint.

// TestJSONLogReplaysAfterUpgrade: a file of schema version 2 whose log holds JSON records (an
// older binary crashed) opens with this binary: the log replays, the records read, the file
// becomes schema version 4, and the next update writes the record in format 4.
func TestJSONLogReplaysAfterUpgrade(t *testing.T) {
	db, segs, path, r := crashedWithOneSegment(t, 4, 7)
	if len(r.es) != 2 {
		t.Fatalf("%d logged records, want 2", len(r.es))
	}
	for i, e := range r.es {
		tgt, rev, err := codec.Unmarshal(e.val)
		if err != nil || e.val[0] == '{' {
			t.Fatalf("logged record %d: %v, or not binary: %.10q", i, err, e.val)
		}
		// The JSON record of version 1 an older binary wrote for it (MaxReplicas is what the
		// test reads back).
		k := tgt.Key
		r.es[i].val = fmt.Appendf(nil, `{"v":1,"rev":%d,"key":{"cluster":%q,"namespace":%q,"name":%q},`+
			`"spec":{"scaleTargetRef":{},"maxReplicas":%d},"state":{"history":{}},"lastSeen":"2026-01-01T00:00:00Z"}`,
			rev, k.Cluster, k.Namespace, k.Name, tgt.Spec.MaxReplicas)
	}
	if err := os.WriteFile(path, append(appendFrame(nil, segs[0], r.es), make([]byte, 100)...), 0o600); err != nil {
		t.Fatal(err)
	}
	bdb, err := bbolt.Open(db, 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := bdb.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketMeta).Put(keySchemaVersion, []byte("2"))
	}); err != nil {
		t.Fatal(err)
	}
	if err := bdb.Close(); err != nil {
		t.Fatal(err)
	}

	rs := openT(t, db, noCheckpoints)
	if got, want := maxOf(t, rs, "web"), int32(4); got != want {
		t.Errorf("web: MaxReplicas %d after replaying JSON records, want %d", got, want)
	}
	if got, want := maxOf(t, rs, "api"), int32(7); got != want {
		t.Errorf("api: MaxReplicas %d after replaying JSON records, want %d", got, want)
	}
	setMax(t, rs, "api", 8)
	if err := rs.checkpoint(); err != nil {
		t.Fatal(err)
	}
	if err := rs.Check(); err != nil {
		t.Error(err)
	}
	err = rs.db.View(func(tx *bbolt.Tx) error {
		if v := string(tx.Bucket(bucketMeta).Get(keySchemaVersion)); v != "4" {
			t.Errorf("schema version %q after Open, want 4", v)
		}
		web := tx.Bucket(bucketTargets).Get(codec.EncodeKey(wkey("web")))
		api := tx.Bucket(bucketTargets).Get(codec.EncodeKey(wkey("api")))
		if len(web) == 0 || web[0] != '{' || len(api) == 0 || api[0] != 4 {
			t.Errorf("web's record %.10q should still be JSON, api's %.10q format 4 after its update", web, api)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestCheckpointRecordsSizesTheLog: with CheckpointRecords n and no other trigger near, n-1
// distinct targets wait in the log, however often each is written, and the file holds none of
// them; the n-th starts a checkpoint that copies all n. A CheckpointRecords above the default
// raises the default CheckpointBytes to 4 KiB per record (--bolt-log-targets sets it).
func TestCheckpointRecordsSizesTheLog(t *testing.T) {
	const n = 6
	s := openT(t, filepath.Join(t.TempDir(), "x.db"), Options{CheckpointRecords: n, CheckpointInterval: time.Hour})
	inFile := func() int {
		var keys int
		if err := s.db.View(func(tx *bbolt.Tx) error {
			keys = tx.Bucket(bucketTargets).Stats().KeyN
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return keys
	}
	for round := range 3 {
		for i := range n - 1 {
			setMax(t, s, fmt.Sprintf("t%d", i), int32(10*round+i+1))
		}
	}
	if got, file := s.overlayLen(), inFile(); got != n-1 || file != 0 {
		t.Fatalf("after %d distinct targets written three times: %d in the log, %d in the file; want %d and 0", n-1, got, file, n-1)
	}
	setMax(t, s, "last", 1)
	deadline := time.Now().Add(10 * time.Second)
	for inFile() != n {
		if time.Now().After(deadline) {
			t.Fatalf("the %d-th target started no checkpoint: %d records in the file, %d in the log", n, inFile(), s.overlayLen())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := maxOf(t, s, "t2"); got != 23 {
		t.Errorf("t2 after the checkpoint: MaxReplicas %d, want 23 (its last write)", got)
	}

	for _, c := range []struct {
		records int
		want    int64
	}{
		{0, 64 << 20}, // an empty store: FleetCheckpointRecords
		{DefaultCheckpointRecords, DefaultCheckpointBytes},
		{1000, DefaultCheckpointBytes},
		{16384, 64 << 20},
	} {
		big := openT(t, filepath.Join(t.TempDir(), "y.db"), Options{CheckpointRecords: c.records})
		if got := big.logBytes(); got != c.want {
			t.Errorf("CheckpointRecords %d: log bytes %d, want %d", c.records, got, c.want)
		}
		if err := big.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLogFollowsTheFleet: with CheckpointRecords left at zero, the log holds fleetRecords
// targets while the store holds no more than that many, and DefaultCheckpointRecords once it
// holds more. The count it follows is kept through creations, rewrites, deletions, updates
// whose function fails, batches that create and delete one key, and a reopen.
func TestLogFollowsTheFleet(t *testing.T) {
	const fleet = 5
	path := filepath.Join(t.TempDir(), "x.db")
	opts := Options{fleetRecords: fleet, CheckpointInterval: time.Hour, CheckpointChunk: 2}
	s := openT(t, path, opts)
	model := map[string]bool{}
	check := func(s *Store, what string) {
		t.Helper()
		if got := s.targets.Load(); got != int64(len(model)) {
			t.Fatalf("after %s: %d targets counted, want %d", what, got, len(model))
		}
		want := DefaultCheckpointRecords
		if len(model) <= fleet {
			want = fleet
		}
		if got := s.logRecords(); got != want {
			t.Fatalf("after %s, %d targets: the log holds %d, want %d", what, len(model), got, want)
		}
	}
	check(s, "open")
	// A fleet that fits: every write waits in the log, however often each target is written.
	for round := range 3 {
		for i := range fleet - 1 {
			setMax(t, s, fmt.Sprintf("t%d", i), int32(10*round+i+1))
			model[fmt.Sprintf("t%d", i)] = true
			check(s, fmt.Sprintf("round %d, write %d", round, i))
		}
	}
	if got := s.overlayLen(); got != fleet-1 {
		t.Fatalf("%d of a fleet of %d waiting in the log, want %d", got, fleet-1, fleet-1)
	}
	boom := errors.New("boom")
	if _, err := s.Update(t.Context(), wkey("failed"), func(*store.Target) (*store.Target, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("failing update: %v", err)
	}
	check(s, "an update whose function failed")
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 300 {
		name := fmt.Sprintf("t%d", rng.IntN(3*fleet))
		switch op := rng.IntN(10); {
		case op < 6:
			setMax(t, s, name, int32(i+1))
			model[name] = true
		case op < 9:
			err := s.Delete(t.Context(), wkey(name))
			if model[name] != (err == nil) {
				t.Fatalf("Delete %s: %v, stored %v", name, err, model[name])
			}
			delete(model, name)
		default:
			// Written and deleted in one batch, as concurrent callers' writes are: the batch
			// leaves the count as it found it.
			var wg sync.WaitGroup
			wg.Add(2)
			go func() { defer wg.Done(); setMax(t, s, "pair", 1) }()
			go func() { defer wg.Done(); _ = s.Delete(t.Context(), wkey("pair")) }()
			wg.Wait()
			_, err := s.Get(t.Context(), wkey("pair"))
			model["pair"] = err == nil
			if !model["pair"] {
				delete(model, "pair")
			}
		}
		check(s, fmt.Sprintf("step %d", i))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openT(t, path, opts)
	check(s, "reopen")
	n, err := s.DeleteUnseenSince(t.Context(), time.Now().Add(time.Hour))
	if err != nil || n != len(model) {
		t.Fatalf("DeleteUnseenSince: %d, %v; want %d", n, err, len(model))
	}
	clear(model)
	check(s, "DeleteUnseenSince")
}

// TestStats: Stats counts the targets stored and waiting in the log, the log's limit, every
// write the group commits carry (sequential writes one commit each, concurrent ones sharing
// commits), the time the commits and the log's syncs took, and what a checkpoint copies.
func TestStats(t *testing.T) {
	s := openT(t, filepath.Join(t.TempDir(), "x.db"), Options{CheckpointInterval: time.Hour})
	if got := s.Stats(); got != (store.Stats{LogTargetsLimit: FleetCheckpointRecords}) {
		t.Fatalf("an empty store's stats: %+v", got)
	}
	for i := range 3 {
		setMax(t, s, "a", int32(i+1))
	}
	setMax(t, s, "b", 1)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() { defer wg.Done(); setMax(t, s, fmt.Sprintf("c%d", i%5), int32(i+1)) }()
	}
	wg.Wait()
	got := s.Stats()
	if got.Targets != 7 || got.LogTargets != 7 || got.CommitWrites != 24 || got.Commits < 5 || got.Commits > 24 {
		t.Fatalf("after 24 writes of 7 targets, 4 of them one at a time: %+v", got)
	}
	// Every commit synced the log once, inside the commit's time; nothing else has synced yet.
	if got.SyncTime <= 0 || got.CommitTime < got.SyncTime {
		t.Fatalf("commit time %v, of it in the log's syncs %v", got.CommitTime, got.SyncTime)
	}
	if got.Checkpoints != 0 || got.CheckpointRecords != 0 || got.CheckpointTime != 0 {
		t.Fatalf("no checkpoint ran, yet %+v", got)
	}
	if err := s.checkpoint(); err != nil {
		t.Fatal(err)
	}
	got = s.Stats()
	if got.Targets != 7 || got.LogTargets != 0 || got.Checkpoints != 1 || got.CheckpointRecords != 7 || got.CheckpointTime <= 0 {
		t.Fatalf("after a checkpoint of 7 targets: %+v", got)
	}
	if err := s.Delete(t.Context(), wkey("a")); err != nil {
		t.Fatal(err)
	}
	if got := s.Stats(); got.Targets != 6 || got.LogTargets != 1 || got.CommitWrites != 25 {
		t.Fatalf("after a deletion: %+v", got)
	}
}

// TestCheckpointBehindDoesNotPace: a background checkpoint that finds more targets waiting
// than the log may hold (writes of new targets came faster than it copied them) writes them in
// transactions of behindChunks chunks and without rests, until the log is within its limit
// again; one that is not behind writes chunk by chunk. Counted in bbolt transactions (each
// write transaction takes the next id).
func TestCheckpointBehindDoesNotPace(t *testing.T) {
	const targets, chunk = 40, 2
	for _, tc := range []struct {
		limit, wantTx int
	}{
		// 40 > 4 waiting: behind until at most 4 wait: 8, 8, 8, 8, then 8 with 8 > 4 still.
		{4, 5},
		// Not behind: every chunk its own transaction.
		{100, targets / chunk},
	} {
		t.Run(fmt.Sprintf("limit=%d", tc.limit), func(t *testing.T) {
			s := openT(t, filepath.Join(t.TempDir(), "x.db"), Options{CheckpointRecords: 1 << 30, CheckpointInterval: time.Hour, CheckpointChunk: chunk})
			for i := range targets {
				setMax(t, s, fmt.Sprintf("t%d", i), 1)
			}
			// Every write has returned, each after its own commit: no commit, which reads the
			// limit, runs.
			s.opts.CheckpointRecords = tc.limit
			txid := func() int {
				var id int
				if err := s.db.View(func(tx *bbolt.Tx) error { id = tx.ID(); return nil }); err != nil {
					t.Fatal(err)
				}
				return id
			}
			before := txid()
			if _, err := s.checkpointSized(true); err != nil {
				t.Fatal(err)
			}
			if got := txid() - before; got != tc.wantTx {
				t.Errorf("%d targets waiting, limit %d: %d transactions, want %d", targets, tc.limit, got, tc.wantTx)
			}
			if got := s.overlayLen(); got != 0 {
				t.Errorf("%d targets still in the log", got)
			}
			if got := maxOf(t, s, "t39"); got != 1 {
				t.Errorf("t39: MaxReplicas %d, want 1", got)
			}
		})
	}
}
