// Package slab holds the two steps of recycling a slice of messages through a sync.Pool, which
// the server's codec (wirecodec) and converter (apiconv) share.
package slab

// Fit makes *s n zero elements long, reusing its array when large enough. The array must have
// been cleared (Reset) or be new.
func Fit[T any](s *[]T, n int) {
	if cap(*s) >= n {
		*s = (*s)[:n]
		return
	}
	*s = make([]T, n)
}

// Reset zeroes the whole array of *s (so that it keeps nothing alive and hands nothing of one
// use to the next), empties *s, and reports whether its capacity is at most limit: whether
// it is worth keeping.
func Reset[T any](s *[]T, limit int) bool {
	clear((*s)[:cap(*s)])
	*s = (*s)[:0]
	return cap(*s) <= limit
}
