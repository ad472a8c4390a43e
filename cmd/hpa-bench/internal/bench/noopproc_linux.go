package bench

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel kill the no-op server process if this one dies first (killed,
// crashed), so that a baseline process never outlives the run that started it.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
