package codec

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/hpa-recommender/hpa-recommender/store"
	pb "github.com/hpa-recommender/hpa-recommender/store/internal/recordpb"
)

// Record format 4, what every backend writes: the generated message recordpb.Record
// (store/proto/hparecommender/storage/v1/record.proto) behind a 9-byte header:
//
//	byte 0      formatProto (never '{', nor binaryMagic: a reader tells the formats apart by it)
//	bytes 1-8   the revision, uint64 little-endian (0: none; etcd keeps it as ModRevision)
//	then        the message, as vtprotobuf's MarshalVT writes it (fields in number order)
//
// The header lets a store encode a record before its write transaction assigns the revision
// and then write the revision in place (Unrevised), and check the revision of a stored record
// without decoding it (Revision).
//
// Records of the older formats (JSON 1 and 2, binary 3) are read as they are (legacy_json.go,
// legacy_binary.go) until their target is written again.
const formatProto = 4

// header is the fixed part that opens a record of format 4.
const header = 9

// Marshal encodes t (its Key included, its Revision replaced by rev; 0: none).
func Marshal(t *store.Target, rev int64) ([]byte, error) {
	u, err := MarshalUnrevised(t)
	if err != nil {
		return nil, err
	}
	if rev == 0 {
		return u.Bytes(), nil
	}
	return u.Revise(rev)
}

// Unrevised is a record encoded without a revision, whose revision Revise writes in place
// once the write transaction has assigned it.
type Unrevised struct {
	buf []byte // nil once Revise has used it
}

// MarshalUnrevised encodes t without a revision.
func MarshalUnrevised(t *store.Target) (Unrevised, error) {
	u, err := marshalRecord(toRecord(t))
	if err != nil {
		return Unrevised{}, fmt.Errorf("encode target %s: %w", t.Key, err)
	}
	return u, nil
}

// MarshalNormalized is MarshalUnrevised and Normalize at once, for a store that writes a
// record and keeps it decoded: the normalized target is what decoding the record gives,
// converted from the record message instead (TestNormalizeIsTheRoundTrip holds them equal).
func MarshalNormalized(t *store.Target) (Unrevised, *store.Target, error) {
	u, n, _, err := MarshalNormalizedAfter(t, nil, nil)
	return u, n, err
}

// MarshalNormalizedAfter is MarshalNormalized for a target that replaces base (nil: none),
// whose record held the spec encoding baseSpec (nil: unknown). It also returns t's spec
// encoding, for the write after this one. When t's spec encodes as baseSpec, the normalized
// target takes base's Spec, shared, instead of converting its own: equal encodings decode to
// equal specs, and a request carries its target's unchanged spec on nearly every call.
// (base and what this returns must then be treated as frozen: a store's cache.)
func MarshalNormalizedAfter(t, base *store.Target, baseSpec []byte) (Unrevised, *store.Target, []byte, error) {
	r := toRecord(t)
	spec, err := r.Spec.MarshalVT()
	if err != nil {
		return Unrevised{}, nil, nil, fmt.Errorf("encode target %s: %w", t.Key, err)
	}
	u, err := marshalRecord(r)
	if err != nil {
		return Unrevised{}, nil, nil, fmt.Errorf("encode target %s: %w", t.Key, err)
	}
	same := base != nil && baseSpec != nil && bytes.Equal(spec, baseSpec)
	if same {
		r.Spec = nil // not converted
	}
	n, err := fromRecord(r)
	if err != nil {
		return Unrevised{}, nil, nil, err
	}
	if same {
		n.Spec = base.Spec
	}
	n.Revision = t.Revision
	return u, n, spec, nil
}

// marshalRecord encodes r behind a header without a revision.
func marshalRecord(r *pb.Record) (Unrevised, error) {
	buf := make([]byte, header+r.SizeVT())
	buf[0] = formatProto
	if _, err := r.MarshalToSizedBufferVT(buf[header:]); err != nil {
		return Unrevised{}, err
	}
	return Unrevised{buf: buf}, nil
}

// Bytes is the record without a revision (Marshal(t, 0)); nil once Revise has used it.
func (u *Unrevised) Bytes() []byte { return u.buf }

// Revise returns Marshal(t, rev) by writing rev into u's own buffer: it may be called once,
// and u is empty afterwards. rev must be positive.
func (u *Unrevised) Revise(rev int64) ([]byte, error) {
	if rev <= 0 {
		return nil, fmt.Errorf("revision %d: must be positive", rev)
	}
	b := u.buf
	if len(b) < header || b[0] != formatProto || binary.LittleEndian.Uint64(b[1:9]) != 0 {
		return nil, fmt.Errorf("not a record encoded without a revision: %.20q", b)
	}
	binary.LittleEndian.PutUint64(b[1:9], uint64(rev))
	u.buf = nil
	return b, nil
}

// Unmarshal decodes a record of any format this binary reads and returns it with the revision
// it carries (0: none). It never aliases b.
func Unmarshal(b []byte) (*store.Target, int64, error) {
	switch {
	case isProto(b):
		rev, err := protoRevision(b)
		if err != nil {
			return nil, 0, err
		}
		// One copy of the message's bytes, which the target's strings then share (they are
		// most of its allocations otherwise): b may be a store's memory, valid only for now.
		var r pb.Record
		if err := r.UnmarshalVTUnsafe(bytes.Clone(b[header:])); err != nil {
			return nil, 0, fmt.Errorf("decode target record: %w", err)
		}
		t, err := fromRecord(&r)
		if err != nil {
			return nil, 0, err
		}
		t.Revision = rev
		return t, rev, nil
	case isBinary(b):
		t, err := decodeBinary(b)
		if err != nil {
			return nil, 0, fmt.Errorf("decode target record: %w", err)
		}
		return t, t.Revision, nil
	}
	return unmarshalJSON(b)
}

func isProto(b []byte) bool { return len(b) > 0 && b[0] == formatProto }

func protoRevision(b []byte) (int64, error) {
	if len(b) < header {
		return 0, fmt.Errorf("decode target record: shorter than its header")
	}
	rev := binary.LittleEndian.Uint64(b[1:9])
	if rev > math.MaxInt64 {
		return 0, fmt.Errorf("decode target record: revision %d out of range", rev)
	}
	return int64(rev), nil
}

// Revision returns the revision a stored record carries, reading only its header; ok is false
// when b carries none or is no record. A store that caches decoded records uses it to check,
// in its write transaction, that the record it based an update on is still the one stored.
func Revision(b []byte) (rev int64, ok bool) {
	switch {
	case isProto(b):
		rev, err := protoRevision(b)
		return rev, err == nil && rev > 0
	case isBinary(b):
		rev, _, err := binaryHeaderFields(b)
		return rev, err == nil && rev > 0
	}
	return revisionJSON(b)
}

// LastSeen decodes only a record's LastSeen, for TTL collection.
func LastSeen(b []byte) (time.Time, error) {
	switch {
	case isProto(b):
		// last_seen is the message's first field when set (MarshalVT writes fields in order).
		m := b[header:]
		num, typ, n := protowire.ConsumeTag(m)
		if n > 0 && num == 1 && typ == protowire.BytesType {
			v, m := protowire.ConsumeBytes(m[n:])
			var ts pb.Time
			if m >= 0 && ts.UnmarshalVT(v) == nil {
				return fromTime(&ts), nil
			}
		}
		t, _, err := Unmarshal(b) // unset (the zero time), or not written by MarshalVT
		if err != nil {
			return time.Time{}, err
		}
		return t.LastSeen, nil
	case isBinary(b):
		_, seen, err := binaryHeaderFields(b)
		if err != nil {
			return time.Time{}, fmt.Errorf("decode target record: %w", err)
		}
		return seen, nil
	}
	return lastSeenJSON(b)
}

// Normalize returns what Unmarshal(Marshal(t, t.Revision)) returns: a deep copy of t that
// shares nothing with it, with times in UTC without a monotonic reading, empty slices and maps
// nil, and quantities parsed from their canonical String(). A store that keeps decoded
// records hands out exactly what decoding would.
func Normalize(t *store.Target) (*store.Target, error) {
	_, n, err := MarshalNormalized(t)
	return n, err
}
