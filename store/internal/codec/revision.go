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
