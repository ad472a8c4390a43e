package bench

import (
	"strings"
	"testing"
)

// TestTableSaysWhichSpecs: a table's first line says whether every target sent its own spec
// or all of them one, since the two payloads cost the server differently at many targets.
func TestTableSaysWhichSpecs(t *testing.T) {
	for _, shared := range []bool{false, true} {
		cfg := DefaultConfig()
		cfg.SharedSpec = shared
		var b strings.Builder
		if err := (&Report{Config: cfg}).WriteTable(&b); err != nil {
			t.Fatal(err)
		}
		first, _, _ := strings.Cut(b.String(), "\n")
		want := "targets 1000 (a spec per target),"
		if shared {
			want = "targets 1000 (one spec shared by all),"
		}
		if !strings.HasPrefix(first, want) {
			t.Errorf("shared spec %t: first line %q, want it to start with %q", shared, first, want)
		}
	}
}
