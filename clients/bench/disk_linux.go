package bench

import (
	"os"
	"syscall"
)

// fdatasync is what bbolt calls on Linux to make a commit durable.
func fdatasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
