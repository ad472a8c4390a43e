package codec

import (
	"fmt"
	"strconv"

	"github.com/hpa-recommender/hpa-recommender/store"
)

// Upgrade is the one way to read a record of a format older releases wrote (JSON 1 and 2 in
// legacy_json.go, binary 3 in legacy_binary.go): a backend's migration calls it on every
// stored record once, when it opens a store an older release left, and writes back what it
// returns when upgraded is true.
//
// A record of format 4 comes back as it is (upgraded false; it is not decoded, Unmarshal checks
// it when it is read). A record of an older format comes back in format 4 with the same
// content and the revision it carried (0 when it carried none, as etcd's never do). A record
// no reader knows is an error; raw is never modified.
func Upgrade(raw []byte) (current []byte, upgraded bool, err error) {
	if len(raw) > 0 && raw[0] == formatProto {
		return raw, false, nil
	}
	var t *store.Target
	var rev int64
	switch {
	case isBinary(raw):
		if t, err = decodeBinary(raw); err != nil {
			return nil, false, fmt.Errorf("upgrade record of format 3: %w", err)
		}
		rev = t.Revision
	case len(raw) > 0 && raw[0] == '{':
		if t, rev, err = unmarshalJSON(raw); err != nil {
			return nil, false, fmt.Errorf("upgrade JSON record: %w", err)
		}
	default:
		return nil, false, fmt.Errorf("upgrade record: unknown format %s", formatName(raw))
	}
	if rev < 0 {
		rev = 0
	}
	current, err = Marshal(t, rev)
	if err != nil {
		return nil, false, err
	}
	return current, true, nil
}

// formatName names the format a record's first byte announces, for errors.
func formatName(b []byte) string {
	switch {
	case len(b) == 0:
		return "(empty)"
	case b[0] == formatProto:
		return "4"
	case b[0] == binaryMagic:
		return "3 (binary)"
	case b[0] == '{':
		return "1 or 2 (JSON)"
	}
	return "byte " + strconv.Quote(string(b[:1]))
}
