package version

import (
	"runtime/debug"
	"strings"
)

// Requested reports whether a binary's arguments ask for its version: --version (or
// -version) as the first argument.
func Requested(args []string) bool {
	return len(args) > 0 && (args[0] == "--version" || args[0] == "-version")
}

// String is binary's version line, from this process's build info:
//
//	hpactl v0.3.1 (revision 4f1c2e..., 2026-06-01T12:00:00Z, modified; go1.26.8)
//
// The module version is "(devel)" for a build outside a module version, as `go build` in a
// checkout without VCS stamping gives it; the revision is "unknown" without VCS stamping
// (-buildvcs=false, or no VCS).
func String(binary string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return binary + " (no build information)"
	}
	return format(binary, bi)
}

func format(binary string, bi *debug.BuildInfo) string {
	ver := bi.Main.Version
	if ver == "" {
		ver = "(devel)"
	}
	var revision, when string
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	var b strings.Builder
	b.WriteString(binary + " " + ver + " (revision ")
	if revision == "" {
		b.WriteString("unknown")
	} else {
		b.WriteString(revision)
	}
	if when != "" {
		b.WriteString(", " + when)
	}
	if modified {
		b.WriteString(", modified")
	}
	b.WriteString("; " + bi.GoVersion + ")")
	return b.String()
}
