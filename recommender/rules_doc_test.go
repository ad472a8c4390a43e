package recommender_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// citedRule matches a rule id or a section mark of the HPA algorithm spec as the Go code cites
// them. A section mark preceded by the name of another document ("TOOLING.md §5") belongs to
// that document and is skipped.
var citedRule = regexp.MustCompile(`\bR-[A-Z]+(?:-[0-9]+)?\b|(?:([A-Za-z0-9_-]+\.md) )?(§[0-9]+(?:\.[0-9]+)*[a-z]?)`)

// listedRule matches a row of docs/ALGORITHM.md's tables: the id, in backquotes, is the first
// cell.
var listedRule = regexp.MustCompile("(?m)^\\| `([^`]+)` \\|")

// TestEveryCitedRuleIsDocumented walks every .go file of the module and fails, naming them,
// for the rule ids and section marks it cites that docs/ALGORITHM.md does not list.
func TestEveryCitedRuleIsDocumented(t *testing.T) {
	root := moduleRoot(t)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "ALGORITHM.md"))
	if err != nil {
		t.Fatalf("read docs/ALGORITHM.md: %v", err)
	}
	listed := map[string]bool{}
	for _, m := range listedRule.FindAllStringSubmatch(string(doc), -1) {
		listed[m[1]] = true
	}
	if len(listed) == 0 {
		t.Fatal("docs/ALGORITHM.md lists no rule ids")
	}

	cited := map[string][]string{} // id -> files citing it
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (d.Name() == ".git" || d.Name() == "vendor" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		for _, m := range citedRule.FindAllStringSubmatch(string(src), -1) {
			id := m[0]
			if m[2] != "" {
				if m[1] != "" && m[1] != "HPA-ALGORITHM.md" {
					continue
				}
				id = m[2]
			}
			if !slices.Contains(cited[id], rel) {
				cited[id] = append(cited[id], rel)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", root, err)
	}
	if len(cited) == 0 {
		t.Fatal("found no cited rule ids: the walk or the pattern is broken")
	}

	var missing []string
	for id := range cited {
		if !listed[id] {
			missing = append(missing, id)
		}
	}
	sort.Strings(missing)
	for _, id := range missing {
		t.Errorf("%s is cited in %s but docs/ALGORITHM.md does not list it", id, strings.Join(cited[id], ", "))
	}
}

// moduleRoot returns the directory holding go.mod, above the test's working directory.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
}
