//go:build !linux

package bench

import "os/exec"

// dieWithParent does nothing here: only Linux kills a child when its parent dies.
func dieWithParent(*exec.Cmd) {}
