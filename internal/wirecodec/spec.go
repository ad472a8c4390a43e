package wirecodec

import (
	"hash/maphash"
	"sync"

	"google.golang.org/protobuf/proto"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

// Every Recommend carries its target's whole spec, and a target's spec rarely changes, so the
// decoder keeps the specs it decoded by their bytes and hands out the same message again for
// the same bytes: equal bytes decode to equal messages, so the result is still exactly
// proto.Unmarshal's. That saves decoding the spec, and lets the server keep what it derives
// from a spec (its conversion and validation) with the message itself (Attach) instead of
// re-encoding the spec to look it up.
//
// A message handed out this way is shared by every request that sent those bytes: nothing
// may modify it. The server only reads requests; a spec field that occurs twice in one
// request merges into a copy (decoder.spec).
//
// Every target of a fleet has a spec of its own (an HPA's scaleTargetRef names its own
// workload), so the table holds up to DefaultSpecTableSize of them (SetSpecTableSize changes
// it) and, when full, makes room by dropping one at random: with more targets than that, a
// share of the specs stays found (its size per number of specs in use) instead of the table
// emptying every time it fills.
//
// Most fleets are made from a few templates: their specs differ in scaleTargetRef and in
// nothing else. So a spec the table does not hold is not decoded whole when the rest of it,
// its bytes without scaleTargetRef, is a spec the table holds (or, decoded once, then
// holds): its template. The request then gets a new message composed of the template's
// fields and its own scaleTargetRef, which the table keeps like any other under the spec's
// bytes, and Template names the template it came from, so the server converts the template
// once and only adds each target's reference to it. A composed message equals what
// proto.Unmarshal gives for its bytes; it shares its fields' messages with the template and
// its other compositions, which nothing modifies.
const (
	// DefaultSpecTableSize bounds the table's entries unless SetSpecTableSize says otherwise;
	// the bytes of their keys are bounded at specKeyBytes per entry.
	DefaultSpecTableSize = 4096
	specKeyBytes         = 1 << 10
	// maxSpecSize is the largest spec kept: a typical one is a few hundred bytes, and a huge
	// one is decoded each time rather than held.
	maxSpecSize = 16 << 10
)

// specTable maps the bytes of recently decoded specs to their messages, and those messages to
// their entries, so that Attachment can tell a shared message from any other.
type specTable struct {
	mu      sync.RWMutex
	byBytes map[string]*pb.HorizontalPodAutoscalerSpec
	shared  map[*pb.HorizontalPodAutoscalerSpec]*sharedSpec
	seen    map[uint64]uint64 // hashes of templates asked for, to that of their first reference (shares)
	size    int               // bytes of the keys of byBytes
	max     int               // most entries (0: none kept), and specKeyBytes per entry of keys
}

// sharedSpec is a shared message's entry: what the server attached to it, and the template it
// was composed from (nil: decoded whole).
type sharedSpec struct {
	attached any
	template *pb.HorizontalPodAutoscalerSpec
}

var specs = specTable{max: DefaultSpecTableSize}

// SetSpecTableSize bounds the table at n specs (0: DefaultSpecTableSize; negative: none, so
// every request's spec is decoded and nothing can be attached to it), dropping specs at random
// to fit. The table is the process's: it serves every server using this codec. Each spec
// kept costs a few kilobytes (its message, and what the server attaches).
func SetSpecTableSize(n int) {
	switch {
	case n == 0:
		n = DefaultSpecTableSize
	case n < 0:
		n = 0
	}
	specs.mu.Lock()
	defer specs.mu.Unlock()
	specs.max = n
	specs.shrink(0)
}

// maxBytes bounds the bytes of the keys; t.mu is held.
func (t *specTable) maxBytes() int { return t.max * specKeyBytes }

// shrink drops random entries until one of extra bytes fits; t.mu is held.
func (t *specTable) shrink(extra int) {
	// Go's map iteration starts at a random place: this drops random entries.
	for victim, m := range t.byBytes {
		if len(t.byBytes) < t.max && t.size+extra <= t.maxBytes() || len(t.byBytes) == 0 {
			break
		}
		delete(t.byBytes, victim)
		delete(t.shared, m)
		t.size -= len(victim)
	}
}

// shares reports whether the template with the bytes b was asked for before with a
// scaleTargetRef other than ref, that is by two different specs, and remembers the first
// reference it was asked for with. Only a template that two specs share takes an entry of its
// own: where every spec differs in more than its scaleTargetRef, templates would take half the
// table and save nothing. It remembers hashes, up to four templates per entry of the table,
// then starts over; two templates or references with one hash only change which spec is the
// first to be composed.
func (t *specTable) shares(b, ref []byte) bool {
	h, r := maphash.Bytes(templateSeed, b), maphash.Bytes(templateSeed, ref)
	t.mu.RLock()
	first, ok := t.seen[h]
	t.mu.RUnlock()
	if ok { // most often a spec the table dropped, asking again: no write lock
		return first != r
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if first, ok := t.seen[h]; ok {
		return first != r
	}
	if t.seen == nil || len(t.seen) >= 4*t.max {
		t.seen = make(map[uint64]uint64)
	}
	t.seen[h] = r
	return false
}

var templateSeed = maphash.MakeSeed()

// keeps reports whether the table keeps any spec.
func (t *specTable) keeps() bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.max > 0
}

// lookup returns the shared message decoded from b, or nil.
func (t *specTable) lookup(b []byte) *pb.HorizontalPodAutoscalerSpec {
	t.mu.RLock()
	s := t.byBytes[string(b)]
	t.mu.RUnlock()
	return s
}

// add shares s, decoded from b (composed from template, when not nil), unless b is too big to
// keep or another goroutine added the same bytes first; it returns the message to use, s or
// the other goroutine's.
func (t *specTable) add(b []byte, s, template *pb.HorizontalPodAutoscalerSpec) *pb.HorizontalPodAutoscalerSpec {
	if len(b) > maxSpecSize {
		return s
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if prev := t.byBytes[string(b)]; prev != nil {
		return prev
	}
	if t.max <= 0 || len(b) > t.maxBytes() {
		return s
	}
	if t.byBytes == nil {
		t.byBytes = make(map[string]*pb.HorizontalPodAutoscalerSpec)
		t.shared = make(map[*pb.HorizontalPodAutoscalerSpec]*sharedSpec)
	}
	t.shrink(len(b))
	key := string(b)
	t.byBytes[key] = s
	t.shared[s] = &sharedSpec{template: template}
	t.size += len(key)
	return s
}

// Interned reports whether s is a spec the codec decoded and shares among requests with the
// same spec bytes: such a message is never modified. Once the table has dropped s it reports
// false for it (s is still never modified).
func Interned(s *pb.HorizontalPodAutoscalerSpec) bool {
	_, shared := Attachment(s)
	return shared
}

// Attachment returns what was attached to s (nil: nothing yet), and whether s is a spec the
// codec shares (see Interned); when it is not, nothing can be attached to it.
func Attachment(s *pb.HorizontalPodAutoscalerSpec) (v any, shared bool) {
	specs.mu.RLock()
	e := specs.shared[s]
	if e != nil {
		v = e.attached
	}
	specs.mu.RUnlock()
	return v, e != nil
}

// Template returns the shared message s was composed from, when s is a shared message that
// the codec composed of a template's fields and its own scaleTargetRef; else nil. A template
// is a spec without scaleTargetRef that the codec shares too (while the table keeps it: see
// Attachment); everything of s but scaleTargetRef is the template's.
func Template(s *pb.HorizontalPodAutoscalerSpec) *pb.HorizontalPodAutoscalerSpec {
	specs.mu.RLock()
	defer specs.mu.RUnlock()
	if e := specs.shared[s]; e != nil {
		return e.template
	}
	return nil
}

// Attach keeps v with s, a spec the codec shares, for as long as the table keeps s, and
// reports whether it did (false: s is not, or no longer, shared). v must depend on nothing
// but s's contents: every request with the same spec bytes gets s, and Attachment returns v.
func Attach(s *pb.HorizontalPodAutoscalerSpec, v any) bool {
	specs.mu.Lock()
	defer specs.mu.Unlock()
	e := specs.shared[s]
	if e != nil {
		e.attached = v
	}
	return e != nil
}

// spec decodes the spec field b of a request whose spec so far is cur (nil when this is the
// first occurrence). The first occurrence takes the shared message for b; a later one (rare)
// merges, as proto.Unmarshal does, into a copy of cur, which may be shared.
func (d *decoder) spec(b []byte, cur *pb.HorizontalPodAutoscalerSpec) (*pb.HorizontalPodAutoscalerSpec, bool) {
	if cur == nil {
		if s := specs.lookup(b); s != nil {
			return s, true
		}
		if s, tmpl := d.compose(b); s != nil {
			return specs.add(b, s, tmpl), true
		}
		s := new(pb.HorizontalPodAutoscalerSpec)
		if merge.Unmarshal(b, s) != nil {
			return nil, false
		}
		return specs.add(b, s, nil), true
	}
	cur = proto.CloneOf(cur)
	return cur, merge.Unmarshal(b, cur) == nil
}

// compose returns the spec decoded from b composed of its template and its scaleTargetRef
// (see the package's spec table), and the template; nil when b has no scaleTargetRef, has it
// more than once or in a form the fast path leaves to protobuf-go, or when its template does
// not decode or has fields protobuf-go does not know (which a composed message could not
// carry).
func (d *decoder) compose(b []byte) (s, template *pb.HorizontalPodAutoscalerSpec) {
	if !specs.keeps() {
		return nil, nil // nothing to share the template with
	}
	var ref []byte // the scaleTargetRef field's value
	start, end := -1, -1
	for i := 0; i < len(b); {
		tag, _, v, rest, ok := next(b[i:])
		if !ok {
			return nil, nil
		}
		if tag>>3 == 1 { // scale_target_ref
			if tag != 1<<3|bytesType || start >= 0 {
				return nil, nil
			}
			ref, start, end = v, i, len(b)-len(rest)
		}
		i = len(b) - len(rest)
	}
	if start < 0 {
		return nil, nil
	}
	rest := b[end:]
	if start > 0 {
		rest = append(b[:start:start], rest...) // a copy: the ref is not the spec's first field
	}
	template = specs.lookup(rest)
	if template == nil {
		if !specs.shares(rest, ref) {
			return nil, nil // a template of one spec so far: decode the spec whole
		}
		t := new(pb.HorizontalPodAutoscalerSpec)
		if merge.Unmarshal(rest, t) != nil {
			return nil, nil
		}
		template = specs.add(rest, t, nil)
	}
	if len(template.ProtoReflect().GetUnknown()) > 0 {
		return nil, nil
	}
	r, ok := d.objectRef(ref)
	if !ok {
		return nil, nil
	}
	return &pb.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: r,
		MinReplicas:    template.MinReplicas,
		MaxReplicas:    template.MaxReplicas,
		Metrics:        template.Metrics,
		Behavior:       template.Behavior,
	}, template
}

// objectRef decodes a CrossVersionObjectReference as proto.Unmarshal does, or reports false for
// anything but its three string fields.
func (d *decoder) objectRef(b []byte) (*pb.CrossVersionObjectReference, bool) {
	r := new(pb.CrossVersionObjectReference)
	for len(b) > 0 {
		tag, _, v, rest, ok := next(b)
		if !ok {
			return nil, false
		}
		var dst *string
		switch tag {
		case 1<<3 | bytesType:
			dst = &r.ApiVersion
		case 2<<3 | bytesType:
			dst = &r.Kind
		case 3<<3 | bytesType:
			dst = &r.Name
		default:
			return nil, false
		}
		if *dst, ok = d.str(v); !ok {
			return nil, false
		}
		b = rest
	}
	return r, true
}
