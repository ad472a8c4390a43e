//go:build !linux

package bench

import (
	"os"
	"time"
)

// fdatasync falls back to fsync where there is no fdatasync.
func fdatasync(f *os.File) error { return f.Sync() }

// ProcessCPU is not measured here (0): the probes report no CPU per round trip or sync.
func ProcessCPU() time.Duration { return 0 }

// sleepThread sleeps for d, as the platform's timers allow.
func sleepThread(d time.Duration) { time.Sleep(d) }
