package main_test

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// example is one ```sh block of the README and what its output must contain.
type example struct {
	line   int
	script string
	expect string
}

// readmeExamples are the ```sh blocks of the page at path (docBlocks, manifestsdoc_test.go).
func readmeExamples(t *testing.T, path string) []example {
	t.Helper()
	var out []example
	for _, b := range docBlocks(t, path) {
		if b.lang == "sh" {
			out = append(out, example{line: b.line, script: b.text, expect: b.expect})
		}
	}
	return out
}

// TestReadmeExamples runs every ```sh block of README.md and then of docs/HPACTL.md (the page
// the README's tour leads on to), verbatim and in order, against the real binary on the
// address they use (make run's), with bin/ (grpcurl) on PATH.
func TestReadmeExamples(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	grpcurl := filepath.Join(root, "bin", "grpcurl")
	if _, err := os.Stat(grpcurl); err != nil {
		t.Fatalf("%s is missing: run `make bin/grpcurl` (make test does it first)", grpcurl)
	}
	pages := []string{"README.md", "docs/HPACTL.md"}
	examples := map[string][]example{}
	for _, page := range pages {
		examples[page] = readmeExamples(t, filepath.Join(root, page))
		if len(examples[page]) < 4 {
			t.Fatalf("found %d examples in %s; the parser or the page is broken", len(examples[page]), page)
		}
	}
	// The pages' address is make run's: refuse to test against a server someone left there.
	if l, err := net.Listen("tcp", "127.0.0.1:50051"); err != nil {
		t.Fatalf("127.0.0.1:50051 is in use (a `make run` still running?): %v", err)
	} else {
		l.Close()
	}
	p := startBinaryAt(t, "127.0.0.1:50051", "--store", "bolt", "--bolt-path", filepath.Join(t.TempDir(), "db"))
	defer p.term(t)
	for _, page := range pages {
		for _, ex := range examples[page] {
			cmd := exec.Command("bash", "-euo", "pipefail", "-c", ex.script)
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "PATH="+filepath.Join(root, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Errorf("%s:%d failed: %v\n%s\n%s", page, ex.line, err, ex.script, out)
				continue
			}
			if ex.expect != "" && !strings.Contains(string(out), ex.expect) {
				t.Errorf("%s:%d: output lacks %q:\n%s", page, ex.line, ex.expect, out)
			}
		}
	}
}
