package controlplane

import "syscall"

// sysProcAttr kills a child when the test binary dies (e.g. a panic or go test's timeout),
// so no etcd or kube-apiserver outlives its test.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
