package codec

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
)

// versionPrefixes open the records of each version Unmarshal reads, the current one (what
// Marshal writes) first: the version comes first, then the revision when there is one
// (encoding/json writes struct fields in declaration order). Records of older versions stay
// stored until they are rewritten, and a store reads their revisions too.
var versionPrefixes = func() (ps [][]byte) {
	for v := RecordVersion; v >= oldestRecordVersion; v-- {
		ps = append(ps, []byte(`{"v":`+strconv.Itoa(v)+`,`))
	}
	return ps
}()

// versionPrefix returns the length of the version prefix b opens with, or 0 when b does not
// open as a record of a version Unmarshal reads.
func versionPrefix(b []byte) int {
	for _, p := range versionPrefixes {
		if bytes.HasPrefix(b, p) {
			return len(p)
		}
	}
	return 0
}

// revRoom is the room an Unrevised record keeps in front of it for the revision Revise adds:
// `"rev":`, up to 19 digits and a comma.
const revRoom = len(`"rev":`) + 19 + 1

// Unrevised is a record encoded without a revision (what Marshal(t, 0) returns) with room in
// front of it (a binary record has its room in its header), so that a store can encode a
// record (the expensive part) before it knows the revision its write transaction assigns, and
// then add the revision without copying the record.
type Unrevised struct {
	buf []byte // buf[revRoom:] is the record; nil once Revise has used it
}

// unrevised copies the record b (encoded without a revision) behind room for one.
func unrevised(b []byte) Unrevised {
	buf := make([]byte, revRoom+len(b))
	copy(buf[revRoom:], b)
	return Unrevised{buf: buf}
}

// Bytes is the record without a revision (Marshal(t, 0)); nil once Revise has used it.
func (u *Unrevised) Bytes() []byte {
	if u.buf == nil {
		return nil
	}
	return u.buf[revRoom:]
}

// Revise returns Marshal(t, rev) by writing the revision into u's own buffer, in front of the
// record: it may be called once, and u is empty afterwards. rev must be positive. The record
// keeps its version: one of an older version Unmarshal reads gets the revision in the same place.
func (u *Unrevised) Revise(rev int64) ([]byte, error) {
	if rev <= 0 {
		return nil, fmt.Errorf("revision %d: must be positive", rev)
	}
	b := u.Bytes()
	if isBinary(b) {
		if len(b) < binaryHeader || binary.LittleEndian.Uint64(b[1:9]) != 0 {
			return nil, fmt.Errorf("not a record encoded without a revision: %.20q", b)
		}
		binary.LittleEndian.PutUint64(b[1:9], uint64(rev))
		u.buf = nil
		return b, nil
	}
	n := versionPrefix(b)
	if n == 0 || bytes.HasPrefix(b[n:], []byte(`"rev":`)) {
		return nil, fmt.Errorf("not a record encoded without a revision: %.20q", b)
	}
	var head [64]byte // more than a version prefix and revRoom
	h := append(head[:0], b[:n]...)
	h = append(h, `"rev":`...)
	h = strconv.AppendInt(h, rev, 10)
	h = append(h, ',')
	// The new head ends where the record's own prefix ends, and replaces it.
	start := revRoom + n - len(h)
	copy(u.buf[start:], h)
	out := u.buf[start:]
	u.buf = nil
	return out, nil
}

// Revision returns the revision a stored record carries, reading only its first bytes; ok is
// false when b does not start as a record with a revision does, of any version Unmarshal reads.
// A store that caches decoded records uses it to check, in its write transaction, that the
// record it based an update on is still the one stored.
func Revision(b []byte) (rev int64, ok bool) {
	if isBinary(b) {
		if len(b) < binaryHeader {
			return 0, false
		}
		v := binary.LittleEndian.Uint64(b[1:9])
		return int64(v), v > 0 && v <= math.MaxInt64
	}
	const revField = `"rev":`
	n := versionPrefix(b)
	if n == 0 || !bytes.HasPrefix(b[n:], []byte(revField)) {
		return 0, false
	}
	rest := b[n+len(revField):]
	end := bytes.IndexByte(rest, ',')
	if end <= 0 || end > 19 {
		return 0, false
	}
	rev, err := strconv.ParseInt(string(rest[:end]), 10, 64)
	if err != nil || rev <= 0 {
		return 0, false
	}
	return rev, true
}
