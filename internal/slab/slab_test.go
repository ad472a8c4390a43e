package slab

import "testing"

func TestFitAndReset(t *testing.T) {
	s := []string{"a", "b", "c"}
	if Reset(&s, 2) {
		t.Error("Reset kept a slice over the limit")
	}
	if len(s) != 0 || s[:3][0] != "" || s[:3][2] != "" {
		t.Errorf("Reset left %q", s[:3])
	}
	arr := &s[:1][0]
	Fit(&s, 2)
	if len(s) != 2 || &s[0] != arr {
		t.Error("Fit did not reuse a large enough array")
	}
	Fit(&s, 5)
	if len(s) != 5 || &s[0] == arr {
		t.Error("Fit did not allocate for a larger size")
	}
	if !Reset(&s, 5) {
		t.Error("Reset dropped a slice within the limit")
	}
}
