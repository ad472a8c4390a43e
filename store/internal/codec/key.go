package codec

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/hpa-recommender/hpa-recommender/store"
)

// Key encoding: each part in turn (cluster, namespace, name) as its bytes with every 0x00
// escaped as 0x00 0xFF, followed by the terminator 0x00 0x01. The encoding is unambiguous for
// any bytes, and byte order of encoded keys is the order of (cluster, namespace, name) compared
// part by part, so the keys of one cluster, or of one namespace in it, share a prefix.
const (
	escByte  = 0x00
	escNul   = 0xFF
	termByte = 0x01
)

func appendPart(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if s[i] == escByte {
			b = append(b, escByte, escNul)
		} else {
			b = append(b, s[i])
		}
	}
	return append(b, escByte, termByte)
}

// EncodeKey returns the stored form of k.
func EncodeKey(k store.Key) []byte {
	b := make([]byte, 0, len(k.Cluster)+len(k.Namespace)+len(k.Name)+6)
	return appendPart(appendPart(appendPart(b, k.Cluster), k.Namespace), k.Name)
}

// Prefix returns the prefix shared by the encoded keys of cluster (and namespace when both are
// set); nil when cluster is empty.
func Prefix(cluster, namespace string) []byte {
	if cluster == "" {
		return nil
	}
	b := appendPart(nil, cluster)
	if namespace != "" {
		b = appendPart(b, namespace)
	}
	return b
}

var errBadKey = errors.New("malformed stored key")

// DecodeKey parses an encoded key.
func DecodeKey(b []byte) (store.Key, error) {
	var parts [3]string
	for i := range parts {
		var part []byte
		for {
			j := bytes.IndexByte(b, escByte)
			if j < 0 || j+1 >= len(b) {
				return store.Key{}, errBadKey
			}
			part = append(part, b[:j]...)
			next := b[j+1]
			b = b[j+2:]
			if next == escNul {
				part = append(part, escByte)
				continue
			}
			if next != termByte {
				return store.Key{}, errBadKey
			}
			break
		}
		parts[i] = string(part)
	}
	if len(b) != 0 {
		return store.Key{}, errBadKey
	}
	return store.Key{Cluster: parts[0], Namespace: parts[1], Name: parts[2]}, nil
}

// CheckKey validates k for storage: non-empty parts, valid UTF-8.
func CheckKey(k store.Key) error {
	if err := k.Validate(); err != nil {
		return err
	}
	if !utf8.ValidString(k.Cluster) || !utf8.ValidString(k.Namespace) || !utf8.ValidString(k.Name) {
		return fmt.Errorf("key %q: not valid UTF-8: %w", k, store.ErrInvalidArgument)
	}
	return nil
}

// EncodePageToken returns the token of the page that follows the target with this key.
func EncodePageToken(last store.Key) string {
	return base64.RawURLEncoding.EncodeToString(EncodeKey(last))
}

// Range is where a List scan starts and what it keeps.
type Range struct {
	// Seek is the first encoded key to visit.
	Seek []byte
	// Skip, when non-nil, is an encoded key to pass over (the last key of the previous page).
	Skip []byte
	// Prefix is shared by every matching key; the scan ends at the first key without it.
	Prefix []byte
	// PageSize is the validated page size.
	PageSize int
}

// ListRange validates opts and returns the scan it asks for.
func ListRange(opts store.ListOptions) (Range, error) {
	size, err := opts.EffectivePageSize()
	if err != nil {
		return Range{}, err
	}
	r := Range{Prefix: Prefix(opts.Cluster, opts.Namespace), PageSize: size}
	r.Seek = r.Prefix
	if opts.PageToken == "" {
		return r, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(opts.PageToken)
	if err != nil {
		return Range{}, fmt.Errorf("page token: %w", store.ErrInvalidArgument)
	}
	last, err := DecodeKey(raw)
	if err != nil || !opts.Matches(last) {
		return Range{}, fmt.Errorf("page token does not belong to this listing: %w", store.ErrInvalidArgument)
	}
	r.Seek, r.Skip = raw, raw
	return r, nil
}

// InRange reports whether the encoded key k is still under the prefix.
func (r Range) InRange(k []byte) bool { return bytes.HasPrefix(k, r.Prefix) }
