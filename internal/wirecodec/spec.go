package wirecodec

import (
	"sync"

	"google.golang.org/protobuf/proto"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

// Every Recommend carries its target's whole spec, and a target's spec rarely changes, so the
// decoder keeps the specs it decoded by their bytes and hands out the same message again for
// the same bytes: equal bytes decode to equal messages, so the result is still exactly
// proto.Unmarshal's. That saves decoding the spec, and lets the server key its own cache of
// converted specs by the message (Interned) instead of re-encoding the spec to look it up.
//
// A message handed out this way is shared by every request that sent those bytes: nothing
// may modify it. The server only reads requests; a spec field that occurs twice in one
// request merges into a copy (decoder.spec).
const (
	// maxSpecs bounds the table's entries; when it is full, or holds maxSpecBytes of keys,
	// it starts over. A fleet sends far fewer distinct specs than it has targets.
	maxSpecs     = 4096
	maxSpecBytes = 4 << 20
	// maxSpecSize is the largest spec kept: a typical one is a few hundred bytes, and a huge
	// one is decoded each time rather than held.
	maxSpecSize = 16 << 10
)

// specTable maps the bytes of recently decoded specs to their messages, and those messages
// back to nothing, so that Interned can tell a shared message from any other.
type specTable struct {
	mu      sync.RWMutex
	byBytes map[string]*pb.HorizontalPodAutoscalerSpec
	shared  map[*pb.HorizontalPodAutoscalerSpec]struct{}
	size    int // bytes of the keys of byBytes
}

var specs specTable

// lookup returns the shared message decoded from b, or nil.
func (t *specTable) lookup(b []byte) *pb.HorizontalPodAutoscalerSpec {
	t.mu.RLock()
	s := t.byBytes[string(b)]
	t.mu.RUnlock()
	return s
}

// add shares s, decoded from b, unless b is too big to keep or another goroutine added the
// same bytes first; it returns the message to use, s or the other goroutine's.
func (t *specTable) add(b []byte, s *pb.HorizontalPodAutoscalerSpec) *pb.HorizontalPodAutoscalerSpec {
	if len(b) > maxSpecSize {
		return s
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if prev := t.byBytes[string(b)]; prev != nil {
		return prev
	}
	if t.byBytes == nil || len(t.byBytes) >= maxSpecs || t.size+len(b) > maxSpecBytes {
		t.byBytes = make(map[string]*pb.HorizontalPodAutoscalerSpec)
		t.shared = make(map[*pb.HorizontalPodAutoscalerSpec]struct{})
		t.size = 0
	}
	t.byBytes[string(b)] = s
	t.shared[s] = struct{}{}
	t.size += len(b)
	return s
}

// Interned reports whether s is a spec the codec decoded and shares among requests with the
// same spec bytes: such a message is never modified, so a cache may key on its address. Once
// the table starts over it reports false for the messages it handed out before (which are
// still never modified): the caller then compares contents instead.
func Interned(s *pb.HorizontalPodAutoscalerSpec) bool {
	specs.mu.RLock()
	_, ok := specs.shared[s]
	specs.mu.RUnlock()
	return ok
}

// spec decodes the spec field b of a request whose spec so far is cur (nil when this is the
// first occurrence). The first occurrence takes the shared message for b; a later one (rare)
// merges, as proto.Unmarshal does, into a copy of cur, which may be shared.
func (d *decoder) spec(b []byte, cur *pb.HorizontalPodAutoscalerSpec) (*pb.HorizontalPodAutoscalerSpec, bool) {
	if cur == nil {
		if s := specs.lookup(b); s != nil {
			return s, true
		}
		s := new(pb.HorizontalPodAutoscalerSpec)
		if merge.Unmarshal(b, s) != nil {
			return nil, false
		}
		return specs.add(b, s), true
	}
	cur = proto.CloneOf(cur)
	return cur, merge.Unmarshal(b, cur) == nil
}
