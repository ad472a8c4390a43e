package archtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// module is the module's path; the rules below name folders relative to it.
const module = "github.com/hpa-recommender/hpa-recommender"

// rule forbids the packages under from (a folder of the module) to import anything under the
// forbidden prefixes (folders of the module, or other import paths), except what allowed
// lists for them.
type rule struct {
	text      string
	from      []string // folders of the module, "recommender" for recommender/...
	forbidden []string // folders of the module (no dot in the first element) or import paths
	// allowed are imports the rule lets through: "importer folder -> import path prefix".
	allowed map[string][]string
	// tests: the rule covers test imports too (TestImports, XTestImports), not only the
	// package's own (production) imports.
	tests bool
}

var rules = []rule{
	{
		text:      "recommender/ imports nothing of this module, nor gRPC",
		from:      []string{"recommender"},
		forbidden: []string{"proto", "store", "server", "clients", "cmd", "internal", "google.golang.org/grpc"},
		tests:     true,
	},
	{
		text:      "proto/ imports nothing of this module",
		from:      []string{"proto"},
		forbidden: []string{"recommender", "store", "server", "clients", "cmd", "internal"},
		tests:     true,
	},
	{
		// etcd's client reports its errors as gRPC statuses: reading their codes is reading
		// the driver's errors, not serving or calling gRPC (store/etcdstore's doc.go).
		text:      "store/ imports no server/, proto/, clients/ or gRPC (store/etcdstore may read the etcd client's gRPC status codes)",
		from:      []string{"store"},
		forbidden: []string{"server", "proto", "clients", "cmd", "google.golang.org/grpc"},
		allowed: map[string][]string{
			"store/etcdstore": {"google.golang.org/grpc/codes", "google.golang.org/grpc/status"},
		},
		tests: true,
	},
	{
		text:      "server/ imports no clients/, in tests either (the load tool's payload is internal/workload)",
		from:      []string{"server"},
		forbidden: []string{"clients", "cmd"},
		tests:     true,
	},
	{
		// Production imports only: the clients' tests run the real server and the in-memory
		// store in process (STYLE.md: no mocks where a real server would do).
		text:      "clients/ imports no server/ or store/",
		from:      []string{"clients"},
		forbidden: []string{"server", "store", "cmd"},
	},
	{
		text:      "nothing outside cmd/ imports cmd/",
		from:      []string{"."},
		forbidden: []string{"cmd"},
		allowed:   map[string][]string{"cmd": {module + "/cmd"}},
		tests:     true,
	},
	{
		text:      "internal/workload (the load tool's and the tests' traffic) imports no server/, store/, clients/ or cmd/",
		from:      []string{"internal/workload"},
		forbidden: []string{"server", "store", "clients", "cmd"},
		tests:     true,
	},
	{
		text:      "internal/controlplane (a local Kubernetes control plane) and internal/certgen import no server/, store/, clients/ or cmd/",
		from:      []string{"internal/controlplane", "internal/certgen"},
		forbidden: []string{"server", "store", "clients", "cmd"},
		tests:     true,
	},
	{
		// The harnesses the load tool shares with the tests: its payload (internal/workload) and
		// the control plane of its fleet run (internal/controlplane, which makes its
		// certificates with internal/certgen). No service or client runs on them.
		text:      "only tests, the load tool (cmd/hpa-bench/) and internal/controlplane import internal/workload, internal/controlplane and internal/certgen",
		from:      []string{"."},
		forbidden: []string{"internal/workload", "internal/controlplane", "internal/certgen"},
		allowed: map[string][]string{
			"cmd/hpa-bench":         {module + "/internal/workload", module + "/internal/controlplane"},
			"internal/controlplane": {module + "/internal/certgen"},
		},
	},
	{
		// Test kits are for tests.
		text:      "only tests and test kits import the test kits (server/servertest, store/storetest)",
		from:      []string{"."},
		forbidden: []string{"server/servertest", "store/storetest"},
		allowed: map[string][]string{
			"server/servertest": {module + "/store/storetest"},
			"store/storetest":   {module + "/server/servertest"},
		},
	},
	{
		// internal/testkit is gone (its kits became internal/workload, internal/controlplane and
		// internal/certgen); a test-only kit put there again stays out of production code.
		text:      "no production package imports internal/testkit/",
		from:      []string{"."},
		forbidden: []string{"internal/testkit"},
		allowed:   map[string][]string{"internal/testkit": {module + "/internal/testkit"}},
	},
}

// pkg is what go list -json says of a package, as far as the rules need.
type pkg struct {
	ImportPath   string
	Imports      []string
	TestImports  []string
	XTestImports []string
	Error        *struct{ Err string }
}

func TestImportRules(t *testing.T) {
	for _, tags := range []string{"", "e2e,crashtest"} {
		t.Run("tags="+tags, func(t *testing.T) {
			pkgs := list(t, tags)
			if len(pkgs) < 10 {
				t.Fatalf("go list found %d packages; want the whole module", len(pkgs))
			}
			for _, v := range violations(pkgs) {
				t.Error(v)
			}
		})
	}
}

// TestRulesCatchForbiddenImports: the checker finds each kind of import the rules forbid and
// lets the allowed ones through, so a passing TestImportRules means something.
func TestRulesCatchForbiddenImports(t *testing.T) {
	m := func(p string) string { return module + "/" + p }
	pkgs := []pkg{
		{ImportPath: m("recommender"), XTestImports: []string{m("store/memstore")}},
		{ImportPath: m("server"), XTestImports: []string{m("cmd/hpa-bench/internal/bench"), m("server/servertest"), m("internal/workload")}},
		{ImportPath: m("server/servertest"), Imports: []string{m("internal/certgen")}},
		{ImportPath: m("store/etcdstore"), Imports: []string{"google.golang.org/grpc/status", "google.golang.org/grpc"}},
		{ImportPath: m("clients/scaler"), Imports: []string{m("store/memstore")}, TestImports: []string{m("server"), m("internal/controlplane")}},
		{ImportPath: m("cmd/hpa-bench/internal/bench"), Imports: []string{m("internal/workload"), m("internal/certgen")}},
		{ImportPath: m("cmd/hpa-bench/internal/fleet"), Imports: []string{m("internal/controlplane"), m("internal/testkit/kit")}},
		{ImportPath: m("internal/controlplane"), Imports: []string{m("internal/certgen"), m("clients/goclient")}},
		{ImportPath: m("internal/testkit/kit"), Imports: []string{m("internal/testkit/other")}},
		{ImportPath: m("deploy"), TestImports: []string{m("cmd/hpa-scaler")}},
		{ImportPath: m("cmd/hpactl"), Imports: []string{m("cmd/hpa-scaler"), m("server/servertest")}},
	}
	got := violations(pkgs)
	want := []string{
		m("recommender") + "_test imports forbidden " + m("store/memstore"),
		m("server") + "_test imports forbidden " + m("cmd/hpa-bench/internal/bench") + " (rule: server/",
		m("server") + "_test imports forbidden " + m("cmd/hpa-bench/internal/bench") + " (rule: nothing outside cmd/",
		m("server/servertest") + " imports forbidden " + m("internal/certgen"),
		m("store/etcdstore") + " imports forbidden google.golang.org/grpc ",
		m("clients/scaler") + " imports forbidden " + m("store/memstore"),
		m("cmd/hpa-bench/internal/bench") + " imports forbidden " + m("internal/certgen"),
		m("cmd/hpa-bench/internal/fleet") + " imports forbidden " + m("internal/testkit/kit"),
		m("internal/controlplane") + " imports forbidden " + m("clients/goclient"),
		m("deploy") + " [test] imports forbidden " + m("cmd/hpa-scaler"),
		m("cmd/hpactl") + " imports forbidden " + m("server/servertest"),
	}
	for _, w := range want {
		if !slices.ContainsFunc(got, func(g string) bool { return strings.HasPrefix(g, w) }) {
			t.Errorf("no violation %q in:\n%s", w, strings.Join(got, "\n"))
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d violations, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
}

// list runs go list over the module with tags.
func list(t *testing.T, tags string) []pkg {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command: %v", err)
	}
	root, err := exec.Command(goTool, "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	dir := filepath.Dir(strings.TrimSpace(string(root)))
	statSources(t, dir)
	cmd := exec.Command(goTool, "list", "-e", "-tags", tags, "-json=ImportPath,Imports,TestImports,XTestImports,Error", "./...")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -tags %q ./...: %v\n%s", tags, err, stderr.Bytes())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decode go list's output: %v", err)
		}
		if p.Error != nil {
			t.Errorf("go list -tags %q: %s: %s", tags, p.ImportPath, p.Error.Err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// statSources reads every folder of the module and stats its Go files and go.mod. go test
// caches a passing result keyed by the files the test itself opened or stat-ed, not those go
// list read: without this, a forbidden import added after a pass would be answered from the
// cache.
func statSources(t *testing.T, root string) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") || d.Name() == "go.mod" {
			_, err = os.Stat(path)
		}
		return err
	})
	if err != nil {
		t.Fatalf("read the module's sources: %v", err)
	}
}

// violations is one line per import a rule forbids, in the order of pkgs and the rules.
func violations(pkgs []pkg) []string {
	var out []string
	for _, p := range pkgs {
		rel, ok := folder(p.ImportPath)
		if !ok {
			continue
		}
		for _, r := range rules {
			if !slices.ContainsFunc(r.from, func(f string) bool { return under(rel, f) }) {
				continue
			}
			check := func(who string, imports []string) {
				for _, imp := range imports {
					if forbidden(r, rel, imp) {
						out = append(out, fmt.Sprintf("%s imports forbidden %s (rule: %s)", who, imp, r.text))
					}
				}
			}
			check(p.ImportPath, p.Imports)
			if r.tests {
				check(p.ImportPath+" [test]", p.TestImports)
				check(p.ImportPath+"_test", p.XTestImports)
			}
		}
	}
	return out
}

// forbidden reports whether r forbids the package in folder rel to import imp.
func forbidden(r rule, rel, imp string) bool {
	for from, prefixes := range r.allowed {
		if under(rel, from) && slices.ContainsFunc(prefixes, func(a string) bool { return under(imp, a) }) {
			return false
		}
	}
	for _, f := range r.forbidden {
		if !strings.Contains(strings.SplitN(f, "/", 2)[0], ".") {
			f = module + "/" + f
		}
		if under(imp, f) {
			return true
		}
	}
	return false
}

// folder is path's folder in the module ("." for the module root).
func folder(path string) (string, bool) {
	if path == module {
		return ".", true
	}
	rel, ok := strings.CutPrefix(path, module+"/")
	return rel, ok
}

// under reports whether path is dir or below it; every path is under ".".
func under(path, dir string) bool {
	return dir == "." || path == dir || strings.HasPrefix(path, dir+"/")
}
