package main_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// docBlock is one fenced block of a Markdown page: its language ("" for none), its text, and
// the output an `<!-- expect: ... -->` line after it asks for.
type docBlock struct {
	line       int
	lang, text string
	expect     string
}

func docBlocks(t *testing.T, path string) []docBlock {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []docBlock
	var cur *docBlock
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur != nil && line == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.text += line + "\n"
		case strings.HasPrefix(line, "```"):
			cur = &docBlock{line: n, lang: strings.TrimPrefix(line, "```")}
		case strings.HasPrefix(line, "<!-- expect: ") && len(out) > 0:
			out[len(out)-1].expect = strings.TrimSuffix(strings.TrimPrefix(line, "<!-- expect: "), " -->")
		}
	}
	return out
}

// TestManifestsDocExamples runs every ```sh block of docs/MANIFESTS.md, verbatim and in order,
// in one empty directory with the hpactl built from this tree on PATH. Each must succeed, its
// output must hold what its expect line says, and a ```yaml or plain block after it, the
// output the page shows, must appear in that output as written.
func TestManifestsDocExamples(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	if out, err := exec.Command("go", "build", "-o", filepath.Join(bin, "hpactl"), "../hpactl").CombinedOutput(); err != nil {
		t.Fatalf("build hpactl: %v\n%s", err, out)
	}
	work := t.TempDir()
	blocks := docBlocks(t, filepath.Join(root, "docs", "MANIFESTS.md"))
	ran, shown := 0, 0
	var last string // the output of the last sh block
	for _, b := range blocks {
		switch b.lang {
		case "sh":
			ran++
			cmd := exec.Command("bash", "-euo", "pipefail", "-c", b.text)
			cmd.Dir = work
			cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
			out, err := cmd.CombinedOutput()
			last = string(out)
			if err != nil {
				t.Errorf("docs/MANIFESTS.md:%d failed: %v\n%s\n%s", b.line, err, b.text, out)
				continue
			}
			if b.expect != "" && !strings.Contains(last, b.expect) {
				t.Errorf("docs/MANIFESTS.md:%d: output lacks %q:\n%s", b.line, b.expect, out)
			}
		case "yaml", "":
			shown++
			if !strings.Contains(last, b.text) {
				t.Errorf("docs/MANIFESTS.md:%d shows output the example before it does not print:\n%s\nit printed:\n%s", b.line, b.text, last)
			}
		}
	}
	if ran < 3 || shown < 2 {
		t.Fatalf("ran %d examples and checked %d outputs of docs/MANIFESTS.md; the parser or the page is broken", ran, shown)
	}
}
