package apiconv

import (
	"sync"

	"github.com/hpa-recommender/hpa-recommender/internal/slab"
	"github.com/hpa-recommender/hpa-recommender/recommender"
)

// Buffers are recycled storage for the pods, containers, observations and samples of one
// converted request (RecommendParts): on the server's hot path they were a sixth of the bytes
// allocated per call. What a conversion into Buffers returns refers to them until Release;
// nothing converted from them may be kept past it (the engine's decision and state do not
// refer to their input).
type Buffers struct {
	pods       []recommender.Pod
	containers []recommender.Container
	obs        []recommender.Observation
	samples    []recommender.PodSample
}

// maxBuffered bounds the elements of one kind Buffers keep when released, so that one huge
// request does not pin its memory for good.
const maxBuffered = 1024

var buffers = sync.Pool{New: func() any { return new(Buffers) }}

// GetBuffers returns recycled Buffers; hand them back with Release.
func GetBuffers() *Buffers { return buffers.Get().(*Buffers) }

// Release clears b (so that it holds on to nothing and nothing still reading it sees another
// request's data) and recycles it. b must not be used afterwards, nor anything converted into
// it. Release of nil does nothing.
func (b *Buffers) Release() {
	if b == nil {
		return
	}
	keep := slab.Reset(&b.pods, maxBuffered)
	keep = slab.Reset(&b.containers, maxBuffered) && keep
	keep = slab.Reset(&b.obs, maxBuffered) && keep
	keep = slab.Reset(&b.samples, maxBuffered) && keep
	if keep {
		buffers.Put(b)
	}
}

// The conversion's allocations: from b when b is not nil, else new.
func (b *Buffers) podSlice(n int) []recommender.Pod {
	if b == nil {
		return make([]recommender.Pod, n)
	}
	return grab(&b.pods, n)
}

func (b *Buffers) containerSlice(n int) []recommender.Container {
	if b == nil {
		return make([]recommender.Container, n)
	}
	return grab(&b.containers, n)
}

func (b *Buffers) obsSlice(n int) []recommender.Observation {
	if b == nil {
		return make([]recommender.Observation, n)
	}
	return grab(&b.obs, n)
}

func (b *Buffers) sampleSlice(n int) []recommender.PodSample {
	if b == nil {
		return make([]recommender.PodSample, n)
	}
	return grab(&b.samples, n)
}

// grab returns the next n zero elements of the buffer *s, with no room to grow into the
// ones after them. A full buffer is replaced by a larger one (what was taken before stays
// where it is); a request larger than maxBuffered gets its own slice.
func grab[T any](s *[]T, n int) []T {
	if n > maxBuffered {
		return make([]T, n)
	}
	if cap(*s)-len(*s) < n {
		*s = make([]T, 0, max(2*cap(*s), n, 32))
	}
	l := len(*s)
	*s = (*s)[:l+n]
	return (*s)[l : l+n : l+n]
}
