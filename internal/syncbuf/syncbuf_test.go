package syncbuf

import (
	"strings"
	"sync"
	"testing"
)

// TestConcurrentWritesAndReads: writes from many goroutines all land, whole, while another
// goroutine reads (run with -race).
func TestConcurrentWritesAndReads(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				if n, err := b.Write([]byte("line\n")); n != 5 || err != nil {
					t.Errorf("Write = %d, %v", n, err)
				}
			}
		})
	}
	wg.Go(func() {
		for range 100 {
			_ = b.String()
		}
	})
	wg.Wait()
	if got := b.String(); got != strings.Repeat("line\n", 800) {
		t.Errorf("held %d bytes, want 800 whole lines", len(got))
	}
}

// TestMax: past Max the buffer keeps nothing more, and writes still succeed in full.
func TestMax(t *testing.T) {
	b := Buffer{Max: 8}
	for _, w := range []string{"12345", "6789", "abc"} {
		if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
			t.Errorf("Write(%q) = %d, %v", w, n, err)
		}
	}
	if got := b.String(); got != "12345678" {
		t.Errorf("held %q, want the first 8 bytes", got)
	}
}
