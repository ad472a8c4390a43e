//go:build unix

package boltstore

import (
	"syscall"
	"testing"
	"time"
)

// ProcessCPU is the CPU time (user and system) the process has used so far, for benchmarks to
// report the CPU an operation costs apart from the time it waits (for the disk's syncs).
func ProcessCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
