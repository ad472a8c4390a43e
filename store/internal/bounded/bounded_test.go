package bounded

import (
	"fmt"
	"testing"
)

// TestAdmitKeepsEntriesForTheirNextUse: keys looked up in turn, 2.5 times as many as the map
// holds, each admitted on a miss when Admit says so. Most lookups the map can serve (0.4) hit,
// not the ~0.14 that replacing an entry at every miss gives; the map never exceeds its size.
func TestAdmitKeepsEntriesForTheirNextUse(t *testing.T) {
	const size, keys, rounds, warm = 400, 1000, 30, 10
	m := New[int](size)
	hits, lookups := 0, 0
	for round := range rounds {
		for i := range keys {
			k := fmt.Sprintf("k%d", i)
			_, ok := m.Get(k)
			if round >= warm {
				lookups++
				if ok {
					hits++
				}
			}
			if !ok && m.Admit() {
				m.Put(k, i)
			}
		}
		if n := m.Len(); n > size {
			t.Fatalf("%d entries, want at most %d", n, size)
		}
	}
	share := float64(hits) / float64(lookups)
	t.Logf("%.2f of the lookups hit", share)
	if share < 0.3 {
		t.Errorf("%.2f of the lookups hit, want at least 0.3 (the map holds 0.4 of the keys)", share)
	}
}

func TestMap(t *testing.T) {
	m := New[string](2)
	m.Put("a", "1")
	m.Put("b", "2")
	if v, ok := m.GetBytes([]byte("a")); !ok || v != "1" {
		t.Errorf("GetBytes(a) = %q, %v", v, ok)
	}
	m.Put("a", "3") // replaces, evicts nothing
	if v, _ := m.Get("a"); v != "3" || m.Len() != 2 {
		t.Errorf("after replacing a: Get(a) = %q, %d entries", v, m.Len())
	}
	m.Put("c", "4") // full: evicts a or b
	if _, ok := m.Get("c"); !ok || m.Len() != 2 {
		t.Errorf("after adding c to a full map: c kept %v, %d entries, want true, 2", ok, m.Len())
	}
	if s := m.Snapshot(); len(s) != 2 || s["c"] != "4" {
		t.Errorf("Snapshot = %v", s)
	}
	m.Delete("c")
	m.DeleteBytes([]byte("a"))
	m.DeleteBytes([]byte("b"))
	if m.Len() != 0 {
		t.Errorf("%d entries after deleting every key", m.Len())
	}
	m.Put("d", "5")
	m.Clear()
	if m.Len() != 0 {
		t.Errorf("%d entries after Clear", m.Len())
	}
	off := New[string](0)
	off.Put("a", "1")
	if _, ok := off.Get("a"); ok || off.Admit() || off.Len() != 0 || off.Snapshot() != nil {
		t.Error("a map of size 0 holds something")
	}
}
