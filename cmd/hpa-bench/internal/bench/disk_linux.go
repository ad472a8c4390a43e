package bench

import (
	"os"
	"syscall"
	"time"
)

// fdatasync is what bbolt calls on Linux to make a commit durable.
func fdatasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }

// ProcessCPU is this process's CPU time so far, user and system, at microsecond resolution
// (/proc's ticks are 10 ms); 0 if getrusage fails. The probes measure their own cost with it,
// and the server's benchmarks their CPU per call.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// sleepThread blocks the calling thread for d (nanosleep: the Go runtime's timers round short
// sleeps up, and the busy probe's spinners need the vCPU idle for d itself).
func sleepThread(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	_ = syscall.Nanosleep(&ts, nil)
}
