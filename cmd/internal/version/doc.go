// Package version is the --version of every binary under cmd/: the module version and the VCS
// revision the Go toolchain stamps into the build info (runtime/debug.ReadBuildInfo).
//
// It sits beside its users, the mains; it imports the standard library only.
package version
