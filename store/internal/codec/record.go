package codec

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/hpa-recommender/hpa-recommender/store"
	pb "github.com/hpa-recommender/hpa-recommender/store/internal/recordpb"
)

// Record format 4, what every backend writes and the only one Unmarshal reads: the generated
// message recordpb.Record (store/proto/hparecommender/storage/v1/record.proto) behind a
// 9-byte header:
//
//	byte 0      formatProto (never '{', nor binaryMagic: Upgrade tells the formats apart by it)
//	bytes 1-8   the revision, uint64 little-endian (0: none; etcd keeps it as ModRevision)
//	then        the message, as vtprotobuf's MarshalVT writes it (fields in number order)
const formatProto = 4

// header is the fixed part that opens a record of format 4.
const header = 9

// Marshal encodes t (its Key included, its Revision replaced by rev; 0: none, negative is
// refused).
func Marshal(t *store.Target, rev int64) ([]byte, error) {
	if rev < 0 {
		return nil, fmt.Errorf("encode target %s: negative revision %d", t.Key, rev)
	}
	r := toRecord(t)
	buf := make([]byte, header+r.SizeVT())
	buf[0] = formatProto
	binary.LittleEndian.PutUint64(buf[1:header], uint64(rev))
	if _, err := r.MarshalToSizedBufferVT(buf[header:]); err != nil {
		return nil, fmt.Errorf("encode target %s: %w", t.Key, err)
	}
	return buf, nil
}

// Unmarshal decodes a record of format 4 and returns it with the revision it carries (0:
// none). A record of an older format is an error that says so: Upgrade rewrites those, once,
// when a backend opens. The result never aliases b.
func Unmarshal(b []byte) (*store.Target, int64, error) {
	rev, err := protoRevision(b)
	if err != nil {
		return nil, 0, err
	}
	var r pb.Record
	if err := r.UnmarshalVT(b[header:]); err != nil { // copies what it keeps
		return nil, 0, fmt.Errorf("decode target record: %w", err)
	}
	t, err := fromRecord(&r)
	if err != nil {
		return nil, 0, err
	}
	t.Revision = rev
	return t, rev, nil
}

// protoRevision checks that b opens as a record of format 4 and returns its revision.
func protoRevision(b []byte) (int64, error) {
	switch {
	case len(b) == 0:
		return 0, fmt.Errorf("decode target record: empty")
	case b[0] != formatProto:
		return 0, fmt.Errorf("decode target record: format %s, not %d (a record an older release wrote, not upgraded)",
			formatName(b), formatProto)
	case len(b) < header:
		return 0, fmt.Errorf("decode target record: shorter than its header")
	}
	rev := binary.LittleEndian.Uint64(b[1:header])
	if rev > math.MaxInt64 {
		return 0, fmt.Errorf("decode target record: revision %d out of range", rev)
	}
	return int64(rev), nil
}

// LastSeen decodes only the LastSeen of a record of format 4, for TTL collection, which reads
// every record: last_seen is the message's first field when set (MarshalVT writes fields in
// number order), so the rest is not decoded.
func LastSeen(b []byte) (time.Time, error) {
	if _, err := protoRevision(b); err != nil {
		return time.Time{}, err
	}
	m := b[header:]
	num, typ, n := protowire.ConsumeTag(m)
	if n > 0 && num == 1 && typ == protowire.BytesType {
		v, n := protowire.ConsumeBytes(m[n:])
		var ts pb.Time
		if n >= 0 && ts.UnmarshalVT(v) == nil {
			return fromTime(&ts), nil
		}
	}
	t, _, err := Unmarshal(b) // unset (the zero time), or not written by Marshal
	if err != nil {
		return time.Time{}, err
	}
	return t.LastSeen, nil
}
