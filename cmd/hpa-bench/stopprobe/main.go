// Command stopprobe runs hpa-bench's busy disk probe with the syncs paced, their writes sized
// and the spinning goroutines counted and paced as asked (bench.ProbeStops), and prints its
// line: how long the machine stood still, every CPU at once, and for how many syncs: what a
// VM's stops depend on (docs/PERFORMANCE.md, "Noise, and how to read these numbers"). From the
// repository root:
//
//	go run ./cmd/hpa-bench/stopprobe -rate 1000 -size 4096 -d 4s
//	go run ./cmd/hpa-bench/stopprobe -rate 1000 -duty 0.75 -period 200us -d 4s
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/hpa-recommender/hpa-recommender/cmd/hpa-bench/internal/bench"
)

func main() {
	var sp bench.StopProbe
	flag.IntVar(&sp.Rate, "rate", 1000, "syncs a second (0: none; -1: back to back)")
	flag.IntVar(&sp.Size, "size", 4096, "bytes written before each sync")
	flag.IntVar(&sp.Spinners, "spin", 0, "goroutines spinning, a thread each (0: one per CPU)")
	flag.Float64Var(&sp.Duty, "duty", 1, "share of every -period each spinner is busy (1: always)")
	flag.DurationVar(&sp.Period, "period", time.Millisecond, "the spinners' period, with -duty")
	d := flag.Duration("d", 4*time.Second, "how long")
	dir := flag.String("dir", ".", "directory of the scratch file")
	flag.Parse()
	st, err := bench.ProbeStops(*dir, *d, sp)
	if err != nil {
		fmt.Fprintln(os.Stderr, "stopprobe:", err)
		os.Exit(1)
	}
	fmt.Printf("rate %d, %d B, spin %d, duty %g of %s: %.0f syncs/s; %s\n", sp.Rate, sp.Size, sp.Spinners, sp.Duty, sp.Period, float64(st.Count)/d.Seconds(), st)
}
