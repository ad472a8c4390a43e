package bench

import (
	"fmt"
	"os"
	"time"
)

// ProbeDisk measures the disk under dir as a bbolt commit uses it: it rewrites one 4 KiB block
// of a scratch file and fdatasyncs it, back to back, for d, and returns the latency of each
// write-and-sync. Run before the load (on an idle server), it says how much of the service's
// latency the disk alone can explain: every durable commit waits for at least two such syncs.
func ProbeDisk(dir string, d time.Duration) (Latency, error) {
	f, err := os.CreateTemp(dir, ".hpa-bench-disk-probe-*")
	if err != nil {
		return Latency{}, fmt.Errorf("disk probe: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	block := make([]byte, 4096)
	var rec Recorder
	for end := time.Now().Add(d); time.Now().Before(end); {
		start := time.Now()
		if _, err := f.WriteAt(block, 0); err != nil {
			return Latency{}, fmt.Errorf("disk probe: %w", err)
		}
		if err := fdatasync(f); err != nil {
			return Latency{}, fmt.Errorf("disk probe: %w", err)
		}
		rec.Record(time.Since(start))
	}
	return rec.Summary(), nil
}
