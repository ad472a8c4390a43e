package version

import (
	"fmt"
	"strings"
	"testing"
)

// HelpProblems checks flag.PrintDefaults output: every flag but a boolean switch names its
// type (not the flag package's "value" of a custom flag), and states at most one default.
func HelpProblems(help string) []string {
	var out []string
	var name, block string
	flush := func() {
		if name == "" {
			return
		}
		if n := strings.Count(block, "(default"); n > 1 {
			out = append(out, fmt.Sprintf("-%s states %d defaults: %s", name, n, strings.Join(strings.Fields(block), " ")))
		}
	}
	for _, line := range strings.Split(help, "\n") {
		switch {
		case strings.HasPrefix(line, "  -"):
			flush()
			f := strings.Fields(line)
			name, block = strings.TrimPrefix(f[0], "-"), line
			if len(f) > 1 && f[1] == "value" {
				out = append(out, fmt.Sprintf("-%s names no type (value)", name))
			}
		case strings.HasPrefix(line, "    "):
			block += "\n" + line
		}
	}
	flush()
	return out
}

func TestHelpProblems(t *testing.T) {
	help := "Usage:\n  -a value\n    \tan a (default: b) (default -1)\n  -b int\n    \ta b (default 3)\n  -dry-run\n    \ta switch\n"
	got := HelpProblems(help)
	if len(got) != 2 || !strings.Contains(got[0], "-a names no type") || !strings.Contains(got[1], "-a states 2 defaults") {
		t.Errorf("got %q, want -a's missing type and two defaults", got)
	}
}
