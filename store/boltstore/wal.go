package boltstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The write-ahead log. A commit of the group commit appends its writes to the log as one frame
// and syncs the log once; bbolt is written later, in the background, by a checkpoint that
// copies many commits' records at once. A bbolt commit syncs twice (its pages, then the meta
// page that makes them visible) and writes every page on the path to each record, so the log
// halves the syncs a decision waits for and lets the checkpoint write a record that changed ten
// times once.
//
// The log is a directory of segment files next to the bbolt file (<file>.wal/), named by a
// 16-digit hexadecimal number that only grows. A segment is a sequence of frames:
//
//	length  uint32, little endian: the payload's size
//	crc     uint32, little endian: CRC-32C (Castagnoli) of seg's 8 bytes, then the payload
//	seg     uint64, little endian: the number of the segment the frame was written to
//	payload entries, each: key length (uvarint), key, revision (varint),
//	        op (1 byte: 1 put, 0 delete), and for a put: value length (uvarint), value
//
// A checkpoint first starts a new segment, so every entry of the older segments is in the
// overlay by then; it writes the overlay to bbolt together with the number of the newest
// segment it covers (key "wal_applied" of the meta bucket), in one bbolt transaction, and only
// then deletes those segments. Open replays the segments after wal_applied in order; the last
// one may end in a torn frame (a machine crash during a write, never acknowledged), which
// replay stops at. Before a segment is left for the next, a seal frame (payload: the single
// byte 0xff, which no entry starts with) is appended and synced, so an older segment that does
// not end in its seal is damaged: Open refuses the file.
//
// Segment files are reused. Frames overwrite blocks the file already owns, so a sync flushes
// data alone; appending would change the file's size and block map on every frame, and each
// sync would wait for a filesystem journal commit too. So a checkpoint keeps the newest segment
// it covers as the spare (spare.tmp) that the next rotation renames into a new segment, and
// frames overwrite the old ones. The old frames name their own segment, which is how replay
// tells them from the new ones: it stops at the first frame that is not intact or names
// another segment. Without a segment to reuse (the first one after Open), the spare is a file
// of zeros written ahead of need, which a zero length ends.
//
// Segments written before seals and segment numbers existed (8-byte header, the CRC of the
// payload alone; an older one ends in zeros) are still replayed; they are never reused.

const (
	walSuffix    = ".wal"
	segmentExt   = ".log"
	frameHeader  = 16
	legacyHeader = 8
	opDelete     = 0
	opPut        = 1
	maxFrameSize = 1 << 30
	spareName    = "spare.tmp"
	minSpare     = 1 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// sealPayload is a seal frame's payload: one byte that cannot start an entry (an unfinished
// uvarint).
var sealPayload = []byte{0xff}

// entry is one logged write: key's record became val (nil: the key was deleted) at revision rev.
type entry struct {
	key string
	val []byte
	rev int64
}

// appendFrame appends one frame of segment seg holding es to b.
func appendFrame(b []byte, seg uint64, es []entry) []byte {
	start := len(b)
	b = append(b, make([]byte, frameHeader)...)
	for _, e := range es {
		b = binary.AppendUvarint(b, uint64(len(e.key)))
		b = append(b, e.key...)
		b = binary.AppendVarint(b, e.rev)
		if e.val == nil {
			b = append(b, opDelete)
			continue
		}
		b = append(b, opPut)
		b = binary.AppendUvarint(b, uint64(len(e.val)))
		b = append(b, e.val...)
	}
	return finishFrame(b, start, seg)
}

// appendSeal appends segment seg's seal frame to b.
func appendSeal(b []byte, seg uint64) []byte {
	start := len(b)
	b = append(b, make([]byte, frameHeader)...)
	b = append(b, sealPayload...)
	return finishFrame(b, start, seg)
}

// finishFrame fills in the header of the frame that starts at b[start].
func finishFrame(b []byte, start int, seg uint64) []byte {
	binary.LittleEndian.PutUint32(b[start:], uint32(len(b)-start-frameHeader))
	binary.LittleEndian.PutUint64(b[start+8:], seg)
	binary.LittleEndian.PutUint32(b[start+4:], crc32.Update(0, castagnoli, b[start+8:]))
	return b
}

// segmentRead is what one segment file holds.
type segmentRead struct {
	es  []entry // the entries of its intact frames, in order
	end int     // where those frames stop
	// complete: the segment ended as only a finished segment does: in its seal, or for a
	// segment of the first format, in nothing but zeros.
	complete bool
}

// readFrames decodes the intact frames of segment seg at the start of data, in order, up to
// its seal, the first frame that is not intact, or one that names another segment. The
// entries copy nothing from data that they do not own (values are fresh slices).
func readFrames(data []byte, seg uint64) segmentRead {
	var r segmentRead
	if _, ok := legacyFrame(data); ok {
		if _, _, ok := frameAt(data, seg); !ok {
			return readLegacyFrames(data)
		}
	}
	for {
		payload, next, ok := frameAt(data[r.end:], seg)
		if !ok {
			return r
		}
		if bytes.Equal(payload, sealPayload) {
			r.end += next
			r.complete = true
			return r
		}
		fes, ok := decodePayload(payload)
		if !ok {
			return r
		}
		r.es = append(r.es, fes...)
		r.end += next
	}
}

// frameAt returns the payload of the frame of segment seg at the start of data, and where the
// frame ends; ok is false if there is no intact frame of seg there.
func frameAt(data []byte, seg uint64) (payload []byte, end int, ok bool) {
	if len(data) < frameHeader {
		return nil, 0, false
	}
	n := uint64(binary.LittleEndian.Uint32(data))
	if n == 0 || n > uint64(len(data)-frameHeader) || binary.LittleEndian.Uint64(data[8:]) != seg {
		return nil, 0, false
	}
	end = frameHeader + int(n)
	if crc32.Update(0, castagnoli, data[8:end]) != binary.LittleEndian.Uint32(data[4:]) {
		return nil, 0, false
	}
	return data[frameHeader:end], end, true
}

// legacyFrame is frameAt for the first format (8-byte header, the CRC of the payload alone).
func legacyFrame(data []byte) (payload []byte, ok bool) {
	if len(data) < legacyHeader {
		return nil, false
	}
	n := uint64(binary.LittleEndian.Uint32(data))
	if n == 0 || n > uint64(len(data)-legacyHeader) {
		return nil, false
	}
	payload = data[legacyHeader : legacyHeader+int(n)]
	if crc32.Checksum(payload, castagnoli) != binary.LittleEndian.Uint32(data[4:]) {
		return nil, false
	}
	return payload, true
}

// readLegacyFrames reads a segment of the first format, which had no seal: it is complete if
// only zeros follow its frames (the rest of a preallocated file).
func readLegacyFrames(data []byte) segmentRead {
	var r segmentRead
	for {
		payload, ok := legacyFrame(data[r.end:])
		if !ok {
			break
		}
		fes, ok := decodePayload(payload)
		if !ok {
			break
		}
		r.es = append(r.es, fes...)
		r.end += legacyHeader + len(payload)
	}
	r.complete = allZero(data[r.end:])
	return r
}

// decodePayload decodes a frame's entries; ok is false if the payload is malformed.
func decodePayload(p []byte) (es []entry, ok bool) {
	for len(p) > 0 {
		klen, n := binary.Uvarint(p)
		if n <= 0 || klen > uint64(len(p)-n) {
			return nil, false
		}
		p = p[n:]
		e := entry{key: string(p[:klen])}
		p = p[klen:]
		rev, n := binary.Varint(p)
		if n <= 0 || len(p) == n {
			return nil, false
		}
		e.rev = rev
		op := p[n]
		p = p[n+1:]
		switch op {
		case opDelete:
		case opPut:
			vlen, n := binary.Uvarint(p)
			if n <= 0 || vlen > uint64(len(p)-n) {
				return nil, false
			}
			e.val = slices.Clone(p[n : n+int(vlen)])
			if e.val == nil {
				e.val = []byte{}
			}
			p = p[n+int(vlen):]
		default:
			return nil, false
		}
		es = append(es, e)
	}
	return es, true
}

func segmentName(n uint64) string { return fmt.Sprintf("%016x%s", n, segmentExt) }

// listSegments returns the numbers of the segments in dir, ascending; none if dir is missing.
func listSegments(dir string) ([]uint64, error) {
	des, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list write-ahead log: %w", err)
	}
	var out []uint64
	for _, de := range des {
		name, ok := strings.CutSuffix(de.Name(), segmentExt)
		if !ok || len(name) != 16 {
			continue
		}
		n, err := strconv.ParseUint(name, 16, 64)
		if err != nil {
			continue
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return out, nil
}

// wal is the segment being appended to. Its mutex is held for a whole append (write, sync and
// the caller's publish step), and by rotate, so a rotation never splits a frame from its
// publication.
type wal struct {
	dir    string
	noSync bool

	mu     sync.Mutex
	f      *os.File
	seg    uint64 // the current segment's number
	first  uint64 // the first segment this log wrote: older ones are never reused
	size   int64  // bytes in the current segment
	buf    []byte // frame buffer, reused
	failed error  // a write or sync failed: the segment's tail is unknown, append no more
	spare  bool   // spare.tmp is ready to become the next segment

	syncNanos atomic.Uint64 // time the commits spent writing and syncing their frames, for Stats

	// spareMu serializes prepareSpare: two preparations writing one file at once could leave
	// a file that a rotation has already renamed into a segment still being written with zeros.
	spareMu sync.Mutex
}

// openWAL starts segment seg in dir, creating dir, on a preallocated file.
func openWAL(dir string, seg uint64, noSync bool) (*wal, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("create write-ahead log directory: %w", err)
	}
	w := &wal{dir: dir, noSync: noSync, first: seg}
	_ = w.prepareSpare(minSpare) // without it the first segment appends: slower, not wrong
	if err := w.start(seg); err != nil {
		return nil, err
	}
	return w, nil
}

// start creates segment seg and makes its directory entry durable, so a sync of its contents
// is never lost with the file's name.
func (w *wal) start(seg uint64) error {
	name := filepath.Join(w.dir, segmentName(seg))
	if w.spare {
		w.spare = false
		if err := os.Rename(filepath.Join(w.dir, spareName), name); err != nil {
			return fmt.Errorf("start write-ahead log segment: %w", err)
		}
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("create write-ahead log segment: %w", err)
	}
	if err := w.syncDir(); err != nil {
		_ = f.Close()
		return err
	}
	w.f, w.seg, w.size = f, seg, 0
	return nil
}

func (w *wal) syncDir() error {
	if w.noSync {
		return nil
	}
	d, err := os.Open(w.dir)
	if err != nil {
		return fmt.Errorf("sync write-ahead log directory: %w", err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync write-ahead log directory: %w", err)
	}
	return nil
}

// append writes es as one frame and syncs it, then calls publish while still holding the
// log, and returns the current segment's size. After a failed write or sync every later
// append fails: what reached the file is unknown.
func (w *wal) append(es []entry, publish func()) (int64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failed != nil {
		return 0, w.failed
	}
	w.buf = appendFrame(w.buf[:0], w.seg, es)
	if len(w.buf)-frameHeader > maxFrameSize {
		return 0, fmt.Errorf("write-ahead log frame of %d bytes exceeds %d", len(w.buf), maxFrameSize)
	}
	start := time.Now()
	err := w.writeBuf()
	w.syncNanos.Add(uint64(time.Since(start)))
	if err != nil {
		return 0, err
	}
	w.size += int64(len(w.buf))
	if cap(w.buf) > 4<<20 {
		w.buf = nil // one huge batch should not pin its buffer
	}
	publish()
	return w.size, nil
}

// rotate seals the current segment and starts a new one, if the current one holds anything,
// and returns the newest segment whose every entry has been appended and published, and how
// many bytes of frames the segment it closed held (0: it did not rotate).
func (w *wal) rotate() (seg uint64, logged int64, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failed != nil {
		return 0, 0, w.failed
	}
	if w.size == 0 {
		return w.seg - 1, 0, nil
	}
	if err := w.seal(); err != nil {
		return 0, 0, err
	}
	old, logged := w.f, w.size
	if err := w.start(w.seg + 1); err != nil {
		return 0, 0, err
	}
	if err := old.Close(); err != nil {
		return 0, 0, fmt.Errorf("close write-ahead log segment: %w", err)
	}
	return w.seg - 1, logged, nil
}

// seal appends the current segment's seal frame and syncs it. A failure stops the log, as a
// failed append does.
func (w *wal) seal() error {
	w.buf = appendSeal(w.buf[:0], w.seg)
	return w.writeBuf()
}

// writeBuf writes the frame in w.buf at the end of the current segment and syncs it. After a
// failure what reached the file is unknown: the log stops, and every later write gets the error.
func (w *wal) writeBuf() error {
	step, err := "write", error(nil)
	if _, err = w.f.WriteAt(w.buf, w.size); err == nil && !w.noSync {
		step, err = "sync", datasync(w.f)
	}
	if err != nil {
		w.failed = fmt.Errorf("write-ahead log %s failed (no write is accepted until a restart): %w", step, err)
	}
	return w.failed
}

// prepareSpare writes the next segment's file ahead of need: size bytes of zeros, synced. It
// runs outside the log's lock (it is slow); a rotation meanwhile does not see the file (spare
// is set only once it is complete and closed), creates an empty segment, and its frames append.
func (w *wal) prepareSpare(size int64) error {
	w.spareMu.Lock()
	defer w.spareMu.Unlock()
	w.mu.Lock()
	ready := w.spare
	w.mu.Unlock()
	if ready {
		return nil
	}
	path := filepath.Join(w.dir, spareName)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("preallocate write-ahead log segment: %w", err)
	}
	zeros := make([]byte, minSpare)
	for off := int64(0); off < size && err == nil; off += int64(len(zeros)) {
		_, err = f.Write(zeros)
	}
	if err == nil && !w.noSync {
		err = datasync(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
		return fmt.Errorf("preallocate write-ahead log segment: %w", err)
	}
	w.mu.Lock()
	w.spare = true
	w.mu.Unlock()
	return nil
}

// removeThrough deletes the segments numbered up to seg. If no spare is ready, the newest of
// them that this log wrote becomes the spare instead: its old frames name it, so the segment
// it becomes reads past none of them.
func (w *wal) removeThrough(seg uint64) error {
	segs, err := listSegments(w.dir)
	if err != nil {
		return err
	}
	for i, n := range segs {
		if n > seg {
			break
		}
		path := filepath.Join(w.dir, segmentName(n))
		last := i == len(segs)-1 || segs[i+1] > seg
		if last && n >= w.first && w.reuse(path) {
			continue
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove write-ahead log segment: %w", err)
		}
	}
	return nil
}

// reuse makes the segment file at path the spare, unless one is ready; it reports whether it
// did.
func (w *wal) reuse(path string) bool {
	w.spareMu.Lock()
	defer w.spareMu.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.spare || os.Rename(path, filepath.Join(w.dir, spareName)) != nil {
		return false
	}
	w.spare = true
	return true
}

// close closes the current segment and, if empty is true and it holds nothing, removes it and
// the directory (a clean shutdown leaves only the bbolt file).
func (w *wal) close(empty bool) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	err := w.f.Close()
	if w.spare {
		_ = os.Remove(filepath.Join(w.dir, spareName))
	}
	if err == nil && empty && w.size == 0 && w.failed == nil {
		if err = os.Remove(filepath.Join(w.dir, segmentName(w.seg))); err == nil {
			_ = os.Remove(w.dir) // fails, harmlessly, if anything else is in it
		}
	}
	if err != nil {
		return fmt.Errorf("close write-ahead log: %w", err)
	}
	return nil
}

// err is the failure that stopped appends, or nil.
func (w *wal) err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.failed
}

// allZero reports whether b holds only zero bytes: the unused end of a preallocated segment.
func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
