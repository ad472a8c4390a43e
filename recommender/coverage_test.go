package recommender

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// ruleIDPattern is how HPA-ALGORITHM.md spells a rule id. The bare prefix "R-" that the
// document uses for "R-…" is not an id.
var ruleIDPattern = regexp.MustCompile(`R-[A-Z]+(-[0-9]+)?`)

// TestEveryRuleIsCited checks that every rule id of HPA-ALGORITHM.md (copied, sorted, into
// testdata/rule-ids.txt) is cited by this package's tests, as a whole word. When the shared
// spec is present beside the module it also checks the copy is current.
func TestEveryRuleIsCited(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "rule-ids.txt"))
	if err != nil {
		t.Fatal(err)
	}
	ids := strings.Fields(string(raw))
	if len(ids) == 0 {
		t.Fatal("testdata/rule-ids.txt is empty")
	}

	if doc, err := os.ReadFile(filepath.Join("..", "..", "shared", "HPA-ALGORITHM.md")); err == nil {
		fromDoc := ruleIDPattern.FindAllString(string(doc), -1)
		slices.Sort(fromDoc)
		fromDoc = slices.Compact(fromDoc)
		if !slices.Equal(fromDoc, ids) {
			t.Errorf("testdata/rule-ids.txt is stale; HPA-ALGORITHM.md has %v", fromDoc)
		}
	}

	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	cited := map[string]bool{}
	for _, f := range files {
		if f == "coverage_test.go" {
			continue // this file names no rule on purpose
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ruleIDPattern.FindAllString(string(src), -1) {
			cited[id] = true
		}
	}
	for _, id := range ids {
		if !cited[id] {
			t.Errorf("rule %s is cited by no test", id)
		}
	}
}
