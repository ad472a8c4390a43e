package bench

import (
	"strings"
	"testing"
)

// TestTableSaysWhichSpecs: a table's first line says whether every target sent its own spec
// (from one template, or distinct) or all of them one, since the payloads cost the server
// differently at many targets.
func TestTableSaysWhichSpecs(t *testing.T) {
	for _, c := range []struct {
		shared, distinct bool
		want             string
	}{
		{false, false, "targets 1000 (a spec per target),"},
		{true, false, "targets 1000 (one spec shared by all),"},
		{false, true, "targets 1000 (a distinct spec per target),"},
	} {
		cfg := DefaultConfig()
		cfg.SharedSpec, cfg.DistinctSpecs = c.shared, c.distinct
		var b strings.Builder
		if err := (&Report{Config: cfg}).WriteTable(&b); err != nil {
			t.Fatal(err)
		}
		if first, _, _ := strings.Cut(b.String(), "\n"); !strings.HasPrefix(first, c.want) {
			t.Errorf("shared %t distinct %t: first line %q, want it to start with %q", c.shared, c.distinct, first, c.want)
		}
	}
}
