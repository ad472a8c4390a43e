// Command stopprobe runs hpa-bench's busy disk probe with the syncs paced, their writes sized
// and the spinning goroutines counted as asked (bench.ProbeStops), and prints its line: how
// long the machine stood still, every CPU at once, and for how many syncs. The fifteenth pass
// of docs/PERFORMANCE.md measured with it what this VM's stops depend on. From the repository
// root:
//
//	go run ./docs/perf/stopprobe -rate 1000 -size 4096 -spin 2 -d 4s
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/hpa-recommender/hpa-recommender/clients/bench"
)

func main() {
	rate := flag.Int("rate", 1000, "syncs a second (0: none; -1: back to back)")
	size := flag.Int("size", 4096, "bytes written before each sync")
	spin := flag.Int("spin", 0, "goroutines spinning, a thread each (0: one per CPU)")
	d := flag.Duration("d", 4*time.Second, "how long")
	dir := flag.String("dir", ".", "directory of the scratch file")
	flag.Parse()
	st, err := bench.ProbeStops(*dir, *d, *rate, *size, *spin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "stopprobe:", err)
		os.Exit(1)
	}
	fmt.Printf("rate %d, %d B, spin %d: %.0f syncs/s; %s\n", *rate, *size, *spin, float64(st.Count)/d.Seconds(), st)
}
