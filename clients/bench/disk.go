package bench

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// DiskSync is what ProbeDisk measured: the latency of each write-and-sync, and the CPU time
// each cost.
type DiskSync struct {
	Latency
	// CPU is this process's CPU time (user and system) per write-and-sync, most of it the
	// kernel's work for the sync: a durable commit of the service pays it once more for every
	// sync, on top of the time it waits. 0 where the platform does not report it.
	CPU time.Duration `json:"cpu_per_sync_ns"`
}

// ProbeDisk measures the disk under dir as a durable commit uses it: it rewrites one 4 KiB
// block of a scratch file and fdatasyncs it, back to back, for d, and returns the latency of
// each write-and-sync and the CPU each took. Run before the load (on an idle server), it says
// how much of the service's latency and CPU per call the disk alone can explain: every
// durable commit waits for at least one such sync (the bbolt store's write-ahead log; bbolt
// itself syncs twice per commit).
func ProbeDisk(dir string, d time.Duration) (DiskSync, error) {
	return probeDisk(dir, d, false)
}

// ProbeDiskBusy is ProbeDisk while one goroutine per CPU spins, as the service's handlers and
// the load generator keep every CPU busy under load. Where a sync's completion waits for a CPU
// (on some virtual machines the disk's own latency grows when the guest is busy) its latency
// under load is far above the idle one, and a durable commit waits for it. CPU is not
// reported: the spinning goroutines are this process's too.
func ProbeDiskBusy(dir string, d time.Duration) (DiskSync, error) {
	return probeDisk(dir, d, true)
}

func probeDisk(dir string, d time.Duration, busy bool) (DiskSync, error) {
	f, err := os.CreateTemp(dir, ".hpa-bench-disk-probe-*")
	if err != nil {
		return DiskSync{}, fmt.Errorf("disk probe: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if busy {
		defer spin(runtime.NumCPU())()
	}
	block := make([]byte, 4096)
	var rec Recorder
	cpu0 := ProcessCPU()
	for end := time.Now().Add(d); time.Now().Before(end); {
		start := time.Now()
		if _, err := f.WriteAt(block, 0); err != nil {
			return DiskSync{}, fmt.Errorf("disk probe: %w", err)
		}
		if err := fdatasync(f); err != nil {
			return DiskSync{}, fmt.Errorf("disk probe: %w", err)
		}
		rec.Record(time.Since(start))
	}
	out := DiskSync{Latency: rec.Summary()}
	if cpu := ProcessCPU() - cpu0; !busy && cpu0 > 0 && out.Count > 0 {
		out.CPU = cpu / time.Duration(out.Count)
	}
	return out, nil
}

// spin starts n goroutines that keep a CPU each busy until the returned function is called,
// which waits for them to stop. They yield to the scheduler every few microseconds, so that
// the goroutine whose sync returns gets a P at once and waits only for the kernel to give its
// thread a CPU, as a handler of a busy service does.
func spin(n int) (stop func()) {
	var done atomic.Bool
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			x := uint64(1)
			for !done.Load() {
				for range 1000 {
					x = x*6364136223846793005 + 1442695040888963407
				}
				runtime.Gosched()
			}
			sink.Store(x)
		})
	}
	return func() { done.Store(true); wg.Wait() }
}

// sink keeps the spinning goroutines' arithmetic from being optimized away.
var sink atomic.Uint64

// String is the probe's line in the report: "N write+fdatasync of 4 KiB, p50 … p99 … max …",
// then the CPU per sync when measured.
func (d DiskSync) String() string {
	s := fmt.Sprintf("%d write+fdatasync of 4 KiB, p50 %s p99 %s max %s", d.Count, ms(d.P50), ms(d.P99), ms(d.Max))
	if d.CPU > 0 {
		s += fmt.Sprintf(", %.0fµs CPU each", float64(d.CPU)/1e3)
	}
	return s
}
