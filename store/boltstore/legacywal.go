package boltstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
)

// The reader of the write-ahead log that releases up to schema version 4 kept beside the bbolt
// file (<file>.wal/), for the migration alone (migrate.go): nothing on the hot path reads or
// writes a log.
//
// The log is a directory of segment files named by a 16-digit hexadecimal number that only
// grows (<n>.log). A segment is a sequence of frames:
//
//	length  uint32, little endian: the payload's size
//	crc     uint32, little endian: CRC-32C (Castagnoli) of seg's 8 bytes, then the payload
//	seg     uint64, little endian: the number of the segment the frame was written to
//	payload entries, each: key length (uvarint), key, revision (varint),
//	        op (1 byte: 1 put, 0 delete), and for a put: value length (uvarint), value
//
// The meta bucket's "wal_applied" names the newest segment whose entries are all in the file;
// the segments after it are replayed in order. A segment ends in a seal frame (payload: the
// single byte 0xff), except the newest, which may end in a torn frame (a crash during a write,
// never acknowledged), zeros (a preallocated file) or the older frames of a reused file, which
// name another segment. An older segment that does not end in its seal is damaged. Segments of
// the first format (8-byte header, the CRC of the payload alone, no seal, zeros after the
// frames) are read too.

const (
	walSuffix    = ".wal"
	segmentExt   = ".log"
	frameHeader  = 16
	legacyHeader = 8
	opDelete     = 0
	opPut        = 1
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// sealPayload is a seal frame's payload: one byte that cannot start an entry.
var sealPayload = []byte{0xff}

// entry is one logged write: key's record became val (nil: the key was deleted) at revision rev.
type entry struct {
	key string
	val []byte
	rev int64
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

// allZero reports whether b holds only zero bytes: the unused end of a preallocated segment.
func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
