package syncbuf

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer whose Write and String are safe to call concurrently. The zero
// value is empty and keeps everything.
type Buffer struct {
	// Max bounds how many bytes are kept (0: all). Writes past it are dropped, and still
	// reported as written, so that a writer never fails on a full buffer.
	Max int

	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p, or as much of it as Max leaves room for.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	keep := p
	if s.Max > 0 {
		keep = p[:min(len(p), max(s.Max-s.b.Len(), 0))]
	}
	s.b.Write(keep)
	return len(p), nil
}

// String returns what the buffer holds.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
