package goclient_test

import (
	"bytes"
	"encoding/json"
	"go/doc"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestExamplesRunAsPrograms: each example of example_ext_test.go is also a program of its own,
// as go/doc builds it for a reader (the example's body in main, with only the file's own
// declarations it uses): it compiles outside the test package and prints the example's
// Output when run against the service. A test-only helper in an example fails here.
func TestExamplesRunAsPrograms(t *testing.T) {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "example_ext_test.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	examples := doc.Examples(file)
	if len(examples) == 0 {
		t.Fatal("no examples found")
	}
	// The programs are placed inside this module by a build overlay, so that they import its
	// packages as a reader's program in this module would, without writing to the tree.
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	overlay := map[string]map[string]string{"Replace": {}}
	var pkgs []string
	for _, ex := range examples {
		if ex.Play == nil {
			t.Errorf("Example%s is not a self-contained program (it uses a declaration from outside its file, or is missing its output)", ex.Name)
			continue
		}
		var src bytes.Buffer
		if err := format.Node(&src, fset, ex.Play); err != nil {
			t.Fatal(err)
		}
		name := "example" + strings.ToLower(strings.ReplaceAll(ex.Name, "_", ""))
		real := filepath.Join(tmp, name+".go")
		if err := os.WriteFile(real, src.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		overlay["Replace"][filepath.Join(wd, "internal", "playground", name, "main.go")] = real
		pkgs = append(pkgs, "./internal/playground/"+name)
	}
	if t.Failed() {
		return
	}
	ob, err := json.Marshal(overlay)
	if err != nil {
		t.Fatal(err)
	}
	overlayFile := filepath.Join(tmp, "overlay.json")
	if err := os.WriteFile(overlayFile, ob, 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(tmp, "bin")
	build := exec.Command("go", append([]string{"build", "-overlay", overlayFile, "-o", bin + string(filepath.Separator)}, pkgs...)...)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("the examples do not compile as programs: %v\n%s", err, out)
	}
	// A service of their own: the package's examples run later against $HPACTL_ADDR's, with
	// the same targets.
	addr, stop := startService()
	defer stop()
	for _, ex := range examples {
		name := "example" + strings.ToLower(strings.ReplaceAll(ex.Name, "_", ""))
		t.Run(ex.Name, func(t *testing.T) {
			cmd := exec.Command(filepath.Join(bin, name))
			cmd.Env = append(os.Environ(), "HPACTL_ADDR="+addr)
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("run: %v\n%s", err, out)
			}
			if got, want := strings.TrimSpace(string(out)), strings.TrimSpace(ex.Output); got != want {
				t.Errorf("output:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}
