package bench

import (
	"fmt"
	"os"
	"runtime"
	"slices"
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
	// Stalls, in the busy probe only, are the moments when none of the spinning goroutines ran:
	// every CPU taken from this process at once (nil in the idle probe).
	Stalls *Stalls `json:"machine_stalls,omitempty"`
	// Size is the bytes written before each sync.
	Size int `json:"write_bytes"`
}

// Stalls are the intervals, of at least minStall each, during which every CPU stood still
// for this process: no spinning goroutine advanced. On a quiet machine there are none. The
// 2-vCPU VM of docs/PERFORMANCE.md stopped whole once every 100 ms in some hours while every
// vCPU was busy and the guest wrote to its disk (most likely its host capping the VM's CPU
// time, disk emulation included, by period), and everything in flight waited for the stop's
// end.
type Stalls struct {
	// Share is the stalls' total over the probe's duration.
	Share   float64       `json:"share"`
	Count   int           `json:"count"`
	Longest time.Duration `json:"longest_ns"`
	// Every is the median interval between two stalls' starts (0: fewer than three stalls).
	Every time.Duration `json:"every_ns"`
	// Total is the stalls' summed length; PerSync is Total over the probe's syncs: what each
	// sync cost in time the whole machine stood still. On the VM of docs/PERFORMANCE.md it
	// was 27-65 µs from 100 to 2,000 syncs of 4 to 256 KiB a second while every vCPU was
	// busy (measured 2026-11-26), and the stops grew with the syncs a second, so a service's
	// syncs a second times PerSync is about the share of that machine it loses when saturated.
	Total   time.Duration `json:"total_ns"`
	PerSync time.Duration `json:"per_sync_ns"`
}

// minStall is the shortest interval counted as a stall; gapMin the shortest pause of one
// spinning goroutine recorded (a stall is where every goroutine's pauses overlap).
const (
	minStall = time.Millisecond
	gapMin   = 200 * time.Microsecond
)

// ProbeDisk measures the disk under dir as a durable commit uses it: it rewrites one 4 KiB
// block of a scratch file and fdatasyncs it, back to back, for d, and returns the latency of
// each write-and-sync and the CPU each took. Run before the load (on an idle server), it says
// how much of the service's latency and CPU per call the disk alone can explain: every
// durable commit waits for at least one such sync (a bbolt commit syncs twice; ProbeBolt
// measures bbolt's own ceiling).
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

// StopProbe says how ProbeStops loads the machine.
type StopProbe struct {
	// Rate is the syncs a second (0: none; negative: back to back).
	Rate int
	// Size is the bytes written before each sync.
	Size int
	// Spinners is how many goroutines spin, a thread each (0: one per CPU). With fewer than
	// CPUs a stall is only the spinners' (the syncing thread may take their CPU), not the
	// whole machine's.
	Spinners int
	// Duty is the share of every Period each spinner is busy, its thread asleep for the rest
	// (0 or 1: always busy).
	Duty   float64
	Period time.Duration
}

// ProbeStops is ProbeDiskBusy with the syncs paced, their writes sized, and the spinners
// counted and paced as sp says. Varying them says what the machine's stops depend on: on the
// VM of docs/PERFORMANCE.md the time it stood still grew with the syncs a second, at 27-65 µs
// per sync, and spinners busy 75 % of the time stopped it as often as always-busy ones when
// they slept less than about 100 µs at a time, and not at all when they slept longer
// (cmd/hpa-bench/stopprobe runs it).
func ProbeStops(dir string, d time.Duration, sp StopProbe) (DiskSync, error) {
	if sp.Spinners <= 0 {
		sp.Spinners = runtime.NumCPU()
	}
	if sp.Size <= 0 {
		return DiskSync{}, fmt.Errorf("disk probe: a write of %d bytes", sp.Size)
	}
	if sp.Duty <= 0 || sp.Duty >= 1 {
		sp.Duty = 1
	} else if sp.Period <= 0 {
		return DiskSync{}, fmt.Errorf("disk probe: a duty of %g needs a period, not %s", sp.Duty, sp.Period)
	}
	return probeDiskWith(dir, d, sp)
}

func probeDisk(dir string, d time.Duration, busy bool) (DiskSync, error) {
	p := StopProbe{Rate: -1, Size: probeBlock, Duty: 1}
	if busy {
		p.Spinners = runtime.NumCPU()
	}
	return probeDiskWith(dir, d, p)
}

// probeBlock is the size of the disk probes' writes: a page, as a small commit writes.
const probeBlock = 4096

// probeDiskWith runs a disk probe as p says, with p normalized (a positive Size and Duty) and
// its Spinners taken as they are: 0 is none, the idle probe.
func probeDiskWith(dir string, d time.Duration, p StopProbe) (DiskSync, error) {
	f, err := os.CreateTemp(dir, ".hpa-bench-disk-probe-*")
	if err != nil {
		return DiskSync{}, fmt.Errorf("disk probe: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	var stop func() [][]span
	began := time.Now()
	if p.Spinners > 0 {
		// One P more than the spinning goroutines, as the service's bbolt store runs with one
		// more than CPUs: the spinning goroutines hold a P each, and the one whose sync
		// returns finds its own at once.
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(p.Spinners + 1))
		stop = spin(p.Spinners, p.Duty, p.Period)
		defer stop() // on an error return; stopping twice is harmless
	}
	block := make([]byte, p.Size)
	var every time.Duration
	if p.Rate > 0 {
		every = time.Second / time.Duration(p.Rate)
	}
	var rec Recorder
	cpu0 := ProcessCPU()
	next := time.Now()
	if p.Rate == 0 {
		time.Sleep(d) // the spinners alone
	}
	for end := next.Add(d); p.Rate != 0 && time.Now().Before(end); {
		start := time.Now()
		if _, err := f.WriteAt(block, 0); err != nil {
			return DiskSync{}, fmt.Errorf("disk probe: %w", err)
		}
		if err := fdatasync(f); err != nil {
			return DiskSync{}, fmt.Errorf("disk probe: %w", err)
		}
		rec.Record(time.Since(start))
		if every > 0 {
			next = next.Add(every)
			time.Sleep(time.Until(next))
		}
	}
	out := DiskSync{Latency: rec.Summary(), Size: p.Size}
	if cpu := ProcessCPU() - cpu0; p.Spinners == 0 && cpu0 > 0 && out.Count > 0 {
		out.CPU = cpu / time.Duration(out.Count)
	}
	if p.Spinners > 0 {
		st := stallsOf(stop(), time.Since(began), out.Count)
		out.Stalls = &st
	}
	return out, nil
}

// span is an interval of time, as offsets from the probe's start.
type span struct{ from, to time.Duration }

// stallsOf summarizes the intervals, of at least minStall, that every list of pauses covers
// (each list sorted, one per spinning goroutine), over a probe of length total that synced
// syncs times.
func stallsOf(gaps [][]span, total time.Duration, syncs int) Stalls {
	if len(gaps) == 0 || total <= 0 {
		return Stalls{}
	}
	common := gaps[0]
	for _, g := range gaps[1:] {
		common = intersect(common, g)
	}
	var st Stalls
	var starts []time.Duration
	for _, c := range common {
		if d := c.to - c.from; d >= minStall {
			st.Count++
			st.Total += d
			st.Longest = max(st.Longest, d)
			starts = append(starts, c.from)
		}
	}
	st.Share = float64(st.Total) / float64(total)
	if syncs > 0 {
		st.PerSync = st.Total / time.Duration(syncs)
	}
	if len(starts) >= 3 {
		iv := make([]time.Duration, len(starts)-1)
		for i := range iv {
			iv[i] = starts[i+1] - starts[i]
		}
		slices.Sort(iv)
		st.Every = iv[len(iv)/2]
	}
	return st
}

// intersect returns the intervals both sorted, non-overlapping lists cover.
func intersect(a, b []span) []span {
	var out []span
	for i, j := 0, 0; i < len(a) && j < len(b); {
		from, to := max(a[i].from, b[j].from), min(a[i].to, b[j].to)
		if from < to {
			out = append(out, span{from, to})
		}
		if a[i].to < b[j].to {
			i++
		} else {
			j++
		}
	}
	return out
}

// spin starts n goroutines that keep a CPU each busy until the returned function is called
// (once or more), which waits for them to stop and returns each one's pauses: the intervals (from spin's
// call) of gapMin or more between two of its reads of the clock, every microsecond or so.
// Each runs on a thread of its own (locked), so that a pause is the kernel's, or the
// machine's, never the Go scheduler's; give the process a P more than n, so that the
// goroutine whose sync returns waits only for the kernel to give its thread a CPU, as the
// service's commit does. A duty below 1 makes each goroutine busy for that share of every
// period only, its thread asleep for the rest (a pause then counts from when it was due to
// wake).
func spin(n int, duty float64, period time.Duration) (stop func() [][]span) {
	var done atomic.Bool
	var wg sync.WaitGroup
	start := time.Now()
	gaps := make([][]span, n)
	busy := time.Duration(duty * float64(period))
	for i := range n {
		wg.Go(func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			x := uint64(1)
			last := time.Since(start)
			from := last // the current period's start
			for !done.Load() {
				for range 1000 {
					x = x*6364136223846793005 + 1442695040888963407
				}
				now := time.Since(start)
				if now-last >= gapMin {
					gaps[i] = append(gaps[i], span{last, now})
				}
				last = now
				if duty < 1 && now-from >= busy {
					sleepThread(period - busy)
					due := now + period - busy
					if last = time.Since(start); last-due >= gapMin {
						gaps[i] = append(gaps[i], span{due, last})
					}
					from = last
				}
			}
			sink.Store(x)
		})
	}
	return func() [][]span { done.Store(true); wg.Wait(); return gaps }
}

// sink keeps the spinning goroutines' arithmetic from being optimized away.
var sink atomic.Uint64

// String is the probe's line in the report: "N write+fdatasync of 4 KiB, p50 … p99 … max …",
// then the CPU per sync when measured, and the busy probe's stalls.
func (d DiskSync) String() string {
	n := d.Size
	if n == 0 {
		n = probeBlock // a report written before the size was
	}
	size := fmt.Sprintf("%d B", n)
	if n%1024 == 0 {
		size = fmt.Sprintf("%d KiB", n/1024)
	}
	s := fmt.Sprintf("%d write+fdatasync of %s, p50 %s p99 %s max %s", d.Count, size, ms(d.P50), ms(d.P99), ms(d.Max))
	if d.CPU > 0 {
		s += fmt.Sprintf(", %.0fµs CPU each", float64(d.CPU)/1e3)
	}
	if st := d.Stalls; st != nil {
		s += fmt.Sprintf("; every CPU stood still %.1f%% of the time: %d stalls of %s or more", 100*st.Share, st.Count, ms(minStall))
		if st.Count > 0 {
			s += ", longest " + ms(st.Longest)
		}
		if st.Every > 0 {
			s += ", one every " + ms(st.Every) + " (median)"
		}
		if st.Count > 0 {
			s += fmt.Sprintf(", %.0fµs per sync", float64(st.PerSync)/1e3)
		}
	}
	return s
}
