package boltstore

import (
	"maps"
	"math/rand/v2"
	"sync"

	"github.com/hpa-recommender/hpa-recommender/store"
)

// hints is a bounded cache of decoded records, so that an update need not read and decode the
// record it starts from (decoding is most of an update's CPU). An entry is a hint, never the
// truth: the write transaction checks that the stored record still carries the entry's
// revision and, if not, starts again from the stored record. So an entry may be stale, or even
// come from a transaction that rolled back, without harm, as long as every write of a key sets
// or drops that key's entry in the same transaction (which the store's writers do). Only this
// process writes the file (bbolt locks it), so entries go stale only by our own writes.
//
// Entries are shared and frozen: nothing modifies a target once it is put, and nothing hands
// one out without copying it (codec.Normalize). An entry's Spec may be the very one of the entry
// it replaced, and its spec encoding the same slice (codec.MarshalNormalizedAfter).
type hints struct {
	mu  sync.Mutex
	max int // <= 0: disabled
	m   map[string]hint
}

// hint is a record as stored under its key: its revision, its decoded form, and the bytes it
// holds as its spec (nil: none to reuse), which the next update reuses when its spec is the same.
type hint struct {
	rev  int64
	t    *store.Target
	spec []byte
}

// admitOneIn is how seldom a record not in a full cache is admitted: an update that missed the
// cache builds the decoded copy an entry needs only if admitted. With more targets than
// entries, called alike, the cache holds a random max of them whether it admits every missed
// record or one in eight (its hit rate is max per target either way), and admitting one in
// eight saves seven of eight decoded copies, which the next misses would evict unused; a target
// called more often than the others still gets in soon.
const admitOneIn = 8

func newHints(max int) *hints {
	h := &hints{max: max}
	if max > 0 {
		h.m = make(map[string]hint, min(max, 4096))
	}
	return h
}

func (h *hints) get(k []byte) (hint, bool) {
	if h.max <= 0 {
		return hint{}, false
	}
	h.mu.Lock()
	e, ok := h.m[string(k)]
	h.mu.Unlock()
	return e, ok
}

// admit reports whether an update of a key that missed the cache should build an entry for it:
// always while the cache has room, then one time in admitOneIn. Never when disabled.
func (h *hints) admit() bool {
	if h.max <= 0 {
		return false
	}
	h.mu.Lock()
	room := len(h.m) < h.max
	h.mu.Unlock()
	return room || rand.N(admitOneIn) == 0
}

// put sets k's entry; when the cache is full it first evicts an arbitrary other entry (Go's map
// iteration order is random, so this is random replacement).
func (h *hints) put(k []byte, rev int64, t *store.Target, spec []byte) {
	if h.max <= 0 {
		return
	}
	h.mu.Lock()
	if _, ok := h.m[string(k)]; !ok && len(h.m) >= h.max {
		for victim := range h.m {
			delete(h.m, victim)
			break
		}
	}
	h.m[string(k)] = hint{rev: rev, t: t, spec: spec}
	h.mu.Unlock()
}

func (h *hints) drop(k []byte) {
	if h.max <= 0 {
		return
	}
	h.mu.Lock()
	delete(h.m, string(k))
	h.mu.Unlock()
}

func (h *hints) clear() {
	if h.max <= 0 {
		return
	}
	h.mu.Lock()
	clear(h.m)
	h.mu.Unlock()
}

// snapshot copies the entries, for Check.
func (h *hints) snapshot() map[string]hint {
	if h.max <= 0 {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return maps.Clone(h.m)
}

func (h *hints) len() int {
	if h.max <= 0 {
		return 0
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.m)
}
