package apiconv

import (
	"testing"

	"github.com/hpa-recommender/hpa-recommender/recommender"
)

// TestBuffersHandOutSeparateZeroedSlices: slices taken from Buffers do not overlap, cannot
// grow into one another, survive the buffer being replaced when full, and come back zeroed
// after Release; a nil Buffers allocates.
func TestBuffersHandOutSeparateZeroedSlices(t *testing.T) {
	b := new(Buffers)
	a := b.podSlice(3)
	a[2].Name = "a2"
	c := b.podSlice(40) // past the first buffer's 32: a new buffer, a keeps its pods
	c[0].Name = "c0"
	if len(a) != 3 || cap(a) != 3 || len(c) != 40 || cap(c) != 40 || a[2].Name != "a2" {
		t.Fatalf("a %d/%d %q, c %d/%d", len(a), cap(a), a[2].Name, len(c), cap(c))
	}
	if a2 := append(a, recommender.Pod{Name: "grown"}); &a2[0] == &a[0] {
		t.Fatal("appending to a taken slice wrote into the buffer")
	}
	s := b.sampleSlice(2)
	s[1].Pod = "p"
	b.Release()
	if c[0].Name != "" || s[1].Pod != "" {
		t.Errorf("Release left %q and %q in the buffer", c[0].Name, s[1].Pod)
	}
	if len(b.pods) != 0 || len(b.samples) != 0 {
		t.Error("Release did not empty the buffers")
	}
	var none *Buffers
	if p := none.podSlice(2); len(p) != 2 {
		t.Errorf("nil Buffers gave %d pods, want 2", len(p))
	}
	none.Release()
	if big := b.obsSlice(maxBuffered + 1); len(b.obs) != 0 || len(big) != maxBuffered+1 {
		t.Error("a huge request took its slice from the buffer")
	}
}
