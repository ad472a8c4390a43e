package codec

import (
	"bytes"
	"fmt"
	"strconv"
)

// recordPrefix opens every record Marshal writes: the version comes first, then the revision
// when there is one (encoding/json writes struct fields in declaration order).
var recordPrefix = []byte(`{"v":` + strconv.Itoa(RecordVersion) + `,`)

// WithRevision returns what Marshal(t, rev) returns, given b = Marshal(t, 0): a store can then
// encode a record (the expensive part) before it knows the revision its write transaction
// assigns. rev must be positive. b is not modified.
func WithRevision(b []byte, rev int64) ([]byte, error) {
	if rev <= 0 {
		return nil, fmt.Errorf("revision %d: must be positive", rev)
	}
	if !bytes.HasPrefix(b, recordPrefix) || bytes.HasPrefix(b[len(recordPrefix):], []byte(`"rev":`)) {
		return nil, fmt.Errorf("not a record encoded without a revision: %.20q", b)
	}
	out := make([]byte, 0, len(b)+len(`"rev":,`)+20)
	out = append(out, recordPrefix...)
	out = append(out, `"rev":`...)
	out = strconv.AppendInt(out, rev, 10)
	out = append(out, ',')
	return append(out, b[len(recordPrefix):]...), nil
}

// Revision returns the revision a stored record carries, reading only its first bytes; ok is
// false when b does not start as a record with a revision does. A store that caches decoded
// records uses it to check, in its write transaction, that the record it based an update on is
// still the one stored.
func Revision(b []byte) (rev int64, ok bool) {
	const revField = `"rev":`
	if !bytes.HasPrefix(b, recordPrefix) || !bytes.HasPrefix(b[len(recordPrefix):], []byte(revField)) {
		return 0, false
	}
	rest := b[len(recordPrefix)+len(revField):]
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
