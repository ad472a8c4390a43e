package bounded

import (
	"maps"
	"math/rand/v2"
	"sync"
)

// AdmitOneIn is how seldom Admit lets a key that missed a full map in. A store decides each of
// N targets once per sync period, in turn: with N = 2.5 times the map's size, replacing an entry
// at every miss evicts most entries before their next use (0.14 of the lookups hit), while
// admitting one miss in eight keeps most of them (0.36 hit, of the 0.4 the map can hold;
// TestAdmitKeepsEntriesForTheirNextUse). Admitting fewer also saves building the entries that
// the next misses would evict unused.
const AdmitOneIn = 8

// Map is safe for concurrent use. A Map made with a size of zero or less holds nothing.
type Map[V any] struct {
	max int
	mu  sync.Mutex
	m   map[string]V
}

// New returns a Map of at most max entries (none when max <= 0).
func New[V any](max int) *Map[V] {
	m := &Map[V]{max: max}
	if max > 0 {
		m.m = make(map[string]V, min(max, 4096))
	}
	return m
}

// Get returns k's entry.
func (m *Map[V]) Get(k string) (V, bool) {
	var v V
	if m.max <= 0 {
		return v, false
	}
	m.mu.Lock()
	v, ok := m.m[k]
	m.mu.Unlock()
	return v, ok
}

// GetBytes is Get for a key in bytes, without converting it.
func (m *Map[V]) GetBytes(k []byte) (V, bool) {
	var v V
	if m.max <= 0 {
		return v, false
	}
	m.mu.Lock()
	v, ok := m.m[string(k)]
	m.mu.Unlock()
	return v, ok
}

// Admit reports whether a key that missed should get an entry: always while the map has room,
// then one time in AdmitOneIn. Never when the map holds nothing.
func (m *Map[V]) Admit() bool {
	if m.max <= 0 {
		return false
	}
	m.mu.Lock()
	room := len(m.m) < m.max
	m.mu.Unlock()
	return room || rand.N(AdmitOneIn) == 0
}

// Put sets k's entry; when the map is full it first evicts an arbitrary other entry (Go's map
// iteration order is random).
func (m *Map[V]) Put(k string, v V) {
	if m.max <= 0 {
		return
	}
	m.mu.Lock()
	if _, ok := m.m[k]; !ok && len(m.m) >= m.max {
		for victim := range m.m {
			delete(m.m, victim)
			break
		}
	}
	m.m[k] = v
	m.mu.Unlock()
}

// Delete drops k's entry.
func (m *Map[V]) Delete(k string) {
	if m.max <= 0 {
		return
	}
	m.mu.Lock()
	delete(m.m, k)
	m.mu.Unlock()
}

// DeleteBytes is Delete for a key in bytes, without converting it.
func (m *Map[V]) DeleteBytes(k []byte) {
	if m.max <= 0 {
		return
	}
	m.mu.Lock()
	delete(m.m, string(k))
	m.mu.Unlock()
}

// Clear drops every entry.
func (m *Map[V]) Clear() {
	if m.max <= 0 {
		return
	}
	m.mu.Lock()
	clear(m.m)
	m.mu.Unlock()
}

// Snapshot returns a copy of the entries.
func (m *Map[V]) Snapshot() map[string]V {
	if m.max <= 0 {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.m)
}

// Len is the number of entries.
func (m *Map[V]) Len() int {
	if m.max <= 0 {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.m)
}
