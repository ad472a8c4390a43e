//go:build !linux

package bench

import (
	"os"
	"time"
)

// fdatasync falls back to fsync where there is no fdatasync.
func fdatasync(f *os.File) error { return f.Sync() }

// processCPU is not measured here: ProbeDisk reports no CPU per sync.
func processCPU() time.Duration { return 0 }
