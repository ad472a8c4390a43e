package version

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

func TestFormat(t *testing.T) {
	tests := []struct {
		name string
		bi   debug.BuildInfo
		want string
	}{
		{
			name: "stamped",
			bi: debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.3.1"}, Settings: []debug.BuildSetting{
				{Key: "vcs.revision", Value: "4f1c2e"}, {Key: "vcs.time", Value: "2026-06-01T12:00:00Z"}, {Key: "vcs.modified", Value: "true"},
			}},
			want: "hpactl v0.3.1 (revision 4f1c2e, 2026-06-01T12:00:00Z, modified; go1.26.8)",
		},
		{
			name: "not stamped",
			bi:   debug.BuildInfo{GoVersion: "go1.26.8"},
			want: "hpactl (devel) (revision unknown; go1.26.8)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := format("hpactl", &tt.bi); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestEveryBinary builds each binary of cmd/ from this checkout, then checks its --version and
// its flag help.
func TestEveryBinary(t *testing.T) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+string(os.PathSeparator), "./cmd/...")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, name := range []string{"hpa-recommender", "hpa-scaler", "hpactl", "hpa-bench"} {
		exe := filepath.Join(bin, name)
		t.Run(name+"/version", func(t *testing.T) { checkVersion(t, name, exe) })
		if name == "hpactl" {
			continue // its help is per command: clients/hpactl's TestFlagHelp
		}
		t.Run(name+"/help", func(t *testing.T) {
			out, err := exec.Command(exe, "-h").CombinedOutput()
			if err != nil {
				t.Fatalf("%s -h: %v\n%s", name, err, out)
			}
			for _, p := range HelpProblems(string(out)) {
				t.Error(p)
			}
		})
	}
}

// checkVersion: --version prints the binary's name and the module version and VCS revision
// that `go version -m` reads from the same binary. (A git worktree gets no VCS stamping from
// the go command, so there the revision is "unknown"; TestFormat covers a stamped build.)
func checkVersion(t *testing.T, name, exe string) {
	info, err := exec.Command("go", "version", "-m", exe).Output()
	if err != nil {
		t.Fatalf("go version -m: %v", err)
	}
	ver, rev := "", "unknown"
	for _, line := range strings.Split(string(info), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 3 && f[0] == "mod":
			ver = f[2]
		case len(f) == 2 && f[0] == "build" && strings.HasPrefix(f[1], "vcs.revision="):
			rev = strings.TrimPrefix(f[1], "vcs.revision=")
		}
	}
	if ver == "" {
		t.Fatalf("go version -m names no module version:\n%s", info)
	}
	out, err := exec.Command(exe, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s --version: %v\n%s", name, err, out)
	}
	want := name + " " + ver + " (revision " + rev
	if got := string(out); !strings.HasPrefix(got, want) || strings.Count(got, "\n") != 1 {
		t.Errorf("%s --version printed %q; want one line starting %q", name, got, want)
	}
}
