package server_test

import (
	"syscall"
	"time"
)

// processCPU is this process's CPU time so far, user and system, at microsecond resolution
// (/proc's ticks are 10 ms); 0 if getrusage fails. The load tool has its own copy
// (cmd/hpa-bench/internal/bench): the server's tests do not import the load tool.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
