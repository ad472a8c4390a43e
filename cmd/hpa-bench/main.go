package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"runtime/pprof"
	"syscall"

	"github.com/hpa-recommender/hpa-recommender/cmd/hpa-bench/internal/bench"
	"github.com/hpa-recommender/hpa-recommender/cmd/internal/version"
)

func main() {
	if version.Requested(os.Args[1:]) {
		fmt.Println(version.String("hpa-bench"))
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "hpa-bench:", err)
		os.Exit(1)
	}
}

// gcHeadroom is how much the generator's heap may grow past its live data before a collection.
const gcHeadroom = 256 << 20

// setGC paces the generator's collector on a fixed heap size instead of Go's default of twice
// the live heap (GOGC=100). The live heap grows with --targets (the encoding of what each target's
// calls share, about 2 KB, and a few dozen bytes more), so by default the generator collected several times
// more often at 1k targets than at 100k, and the no-op baseline ran faster at 100k: a ratio that
// measured the generator, not the service. GOGC or GOMEMLIMIT, if set, win.
func setGC(targets int) {
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(gcHeadroom + perTarget*int64(targets))
}

// perTarget is the generator's live heap per target: its requests' shared encoding and its
// state.
const perTarget = 2560 + 128

// The places --baseline-in names.
const (
	baselineProcess   = "process"
	baselineGenerator = "generator"
)

// serveNoop serves the no-op baseline on addr, as a process of its own, until ctx ends. It
// writes the address it listens on to stdout first. Its collector keeps Go's pacing (GOGC,
// GOMEMLIMIT), as hpa-recommender's does, so that it differs from the service only in its
// handler.
func serveNoop(ctx context.Context, addr string, stdout io.Writer) error {
	s, err := bench.ListenNoop(addr)
	if err != nil {
		return fmt.Errorf("--serve-noop: %w", err)
	}
	defer s.Stop()
	if _, err := fmt.Fprintf(stdout, "%s%s\n", bench.NoopServingPrefix, s.Addr()); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	cfg := bench.DefaultConfig()
	fs := flag.NewFlagSet("hpa-bench", flag.ContinueOnError)
	cfg.RegisterFlags(fs)
	asJSON := fs.Bool("json", false, "write the full report as JSON instead of the table")
	jsonOut := fs.String("json-out", "", "also write the full report as JSON to this file")
	quiet := fs.Bool("quiet", false, "no progress lines on stderr")
	cpuProfile := fs.String("cpuprofile", "", "write the load generator's own CPU profile to this file")
	noopAddr := fs.String("serve-noop", "", "instead of loading anything, serve the no-op baseline on this address (host:port) as a process of its own, with Go's collector pacing as hpa-recommender has, until interrupted; load it with --addr and --server-pid")
	boltProbe := bench.DefaultBoltProbe()
	fs.DurationVar(&boltProbe.Duration, "bolt-probe", 0, "instead of loading anything, measure the ceiling of a bare bbolt file on this disk for this long (e.g. 10s): --bolt-probe-writers goroutines each read-modify-write a random record of --bolt-probe-size bytes in DB.Batch, fsync on, MaxBatchSize the writers; prints writes/s and latency (0: off)")
	boltProbe.RegisterFlags(fs)
	baselineIn := fs.String("baseline-in", baselineProcess, "where --baseline's no-op server runs: "+baselineProcess+" (a process of its own, started from this binary with --serve-noop, as the service is one) or "+baselineGenerator+" (in this process, sharing the generator's runtime; the only baseline before 2026-11-27)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *noopAddr != "" {
		if fs.NArg() > 0 {
			return fmt.Errorf("unexpected arguments %q", fs.Args())
		}
		return serveNoop(ctx, *noopAddr, stdout)
	}
	if boltProbe.Duration > 0 {
		if fs.NArg() > 0 {
			return fmt.Errorf("unexpected arguments %q", fs.Args())
		}
		c, err := bench.ProbeBolt(ctx, boltProbe)
		if err != nil {
			return err
		}
		if *asJSON {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(c)
		}
		return c.WriteText(stdout)
	}
	switch *baselineIn {
	case baselineProcess:
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("--baseline-in %s: find this binary to start the no-op server with: %w", baselineProcess, err)
		}
		cfg.NoopCommand = []string{exe, "--serve-noop", "127.0.0.1:0"}
	case baselineGenerator:
	default:
		return fmt.Errorf("--baseline-in %q: want %s or %s", *baselineIn, baselineProcess, baselineGenerator)
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if !*quiet {
		cfg.Progress = os.Stderr
	}
	if os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == "" {
		setGC(cfg.Targets)
	}
	rep, err := bench.Run(ctx, cfg)
	if err != nil {
		return err
	}
	if *jsonOut != "" {
		f, err := os.Create(*jsonOut)
		if err != nil {
			return err
		}
		if err := rep.WriteJSON(f); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	if *asJSON {
		return rep.WriteJSON(stdout)
	}
	return rep.WriteTable(stdout)
}
