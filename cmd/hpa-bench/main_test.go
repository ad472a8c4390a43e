package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hpa-recommender/hpa-recommender/cmd/hpa-bench/internal/bench"
)

// TestMain lets this test binary stand in for hpa-bench when --baseline-in process starts
// it (os.Executable) with --serve-noop: it then serves the no-op baseline as the real binary
// would, until SIGTERM.
//
// With HPA_BENCH_TEST_MAIN=1 it is hpa-bench whatever its arguments (TestBaselineDiesWithTheTool).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "--serve-noop" || os.Getenv("HPA_BENCH_TEST_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestBaselineDiesWithTheTool: when hpa-bench is killed (SIGKILL: no chance to stop anything),
// the no-op server process it started goes with it.
func TestBaselineDiesWithTheTool(t *testing.T) {
	cmd := exec.Command(os.Args[0], "--addr", "", "--baseline", "--targets", "10", "--concurrency", "",
		"--rate", "10", "--duration", "1m", "--warmup", "0s", "--repeat", "1")
	cmd.Env = append(os.Environ(), "HPA_BENCH_TEST_MAIN=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// The progress line: "baseline: a no-op server process, pid N, on ADDR".
	sc := bufio.NewScanner(stderr)
	pid := 0
	for pid == 0 && sc.Scan() {
		if _, err := fmt.Sscanf(sc.Text(), "baseline: a no-op server process, pid %d,", &pid); err != nil {
			pid = 0
		}
	}
	if pid == 0 {
		t.Fatalf("hpa-bench never named its baseline process (%v)", sc.Err())
	}
	go io.Copy(io.Discard, stderr)
	if !alive(pid) {
		t.Fatalf("the baseline process %d is not running while the tool runs", pid)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	for deadline := time.Now().Add(10 * time.Second); alive(pid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the baseline process %d still runs 10 s after hpa-bench was killed", pid)
		}
	}
}

// alive reports whether process pid exists and is not a zombie (dead, not yet reaped by
// whichever process inherited it).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command's closing parenthesis.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// TestBaselineIn: by default --baseline's no-op server is a process of its own, whose CPU is
// reported like the service's and which is gone when the tool returns; --baseline-in generator
// runs it in the tool's process (no pid, no server CPU); anything else is refused, naming the
// flag.
func TestBaselineIn(t *testing.T) {
	args := []string{"--addr", "", "--baseline", "--targets", "10", "--concurrency", "2", "--duration", "200ms",
		"--warmup", "0s", "--repeat", "1", "--quiet"}
	for _, tc := range []struct {
		in          []string
		wantProcess bool
	}{{nil, true}, {[]string{"--baseline-in", "process"}, true}, {[]string{"--baseline-in", "generator"}, false}} {
		t.Run(strings.Join(tc.in, "="), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "r.json")
			var table strings.Builder
			if err := run(t.Context(), append(append(slices.Clone(args), tc.in...), "--json-out", out), &table); err != nil {
				t.Fatal(err)
			}
			rep := readReport(t, out)
			if len(rep.Runs) != 1 || rep.Runs[0].Server != "baseline" || rep.Runs[0].Throughput <= 0 || rep.Runs[0].Recommend.Errors != 0 {
				t.Fatalf("runs %+v: want one baseline run with throughput and no errors", rep.Runs)
			}
			usage := rep.Runs[0].ServerUsage
			if !tc.wantProcess {
				if rep.BaselinePID != 0 || usage != nil || len(rep.Config.NoopCommand) != 0 || !strings.Contains(table.String(), "generator's own process") {
					t.Errorf("pid %d, server usage %+v, command %q, table %q: want the baseline in the generator's process", rep.BaselinePID, usage, rep.Config.NoopCommand, table.String())
				}
				return
			}
			if rep.BaselinePID <= 0 || rep.BaselinePID == os.Getpid() || usage == nil || usage.CPUPerCall <= 0 || usage.RSS <= 0 {
				t.Fatalf("baseline pid %d (ours %d), its usage %+v: want a process of its own, with its CPU and RSS", rep.BaselinePID, os.Getpid(), usage)
			}
			if !strings.Contains(table.String(), "a process of its own") {
				t.Errorf("table %q does not say where the baseline ran", table.String())
			}
			if err := syscall.Kill(rep.BaselinePID, 0); err == nil {
				t.Errorf("the no-op server process %d still runs after the tool returned", rep.BaselinePID)
			}
		})
	}
	err := run(t.Context(), append(slices.Clone(args), "--baseline-in", "elsewhere"), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--baseline-in") || !strings.Contains(err.Error(), "elsewhere") {
		t.Errorf("--baseline-in elsewhere: error %v, want one naming the flag and the value", err)
	}
}

// TestRunWritesJSONAndProfile runs the tool against its own no-op baseline only: --json-out
// gets the full report and --cpuprofile a profile, next to the table on stdout.
func TestRunWritesJSONAndProfile(t *testing.T) {
	dir := t.TempDir()
	out, prof := filepath.Join(dir, "report.json"), filepath.Join(dir, "cpu.prof")
	err := run(t.Context(), []string{"--addr", "", "--baseline", "--targets", "10", "--concurrency", "2", "--rate", "200",
		"--duration", "300ms", "--warmup", "0s", "--repeat", "1", "--quiet", "--json-out", out, "--cpuprofile", prof}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	rep := readReport(t, out)
	if len(rep.Summary) != 2 || rep.Summary[0].Throughput <= 0 || rep.Summary[1].Mode != "open" || rep.Summary[1].LagP99 <= 0 {
		t.Errorf("summary %+v: want a closed and an open baseline row with throughput and lag", rep.Summary)
	}
	if fi, err := os.Stat(prof); err != nil || fi.Size() == 0 {
		t.Errorf("--cpuprofile: %v, %v", fi, err)
	}
}

// readReport reads the report --json-out wrote to path.
func readReport(t *testing.T, path string) bench.Report {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rep bench.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("--json-out is not a report: %v", err)
	}
	return rep
}

// TestBadLoadSwing: a load swing outside [0, 1) is refused before any load, naming the flag.
func TestBadLoadSwing(t *testing.T) {
	for _, v := range []string{"-0.1", "1", "NaN"} {
		err := run(t.Context(), []string{"--addr", "", "--baseline", "--concurrency", "1", "--duration", "10ms", "--load-swing", v}, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "--load-swing") {
			t.Errorf("--load-swing %s: error %v, want one naming --load-swing", v, err)
		}
	}
}

// TestSharedAndDistinctSpecsExclude: --shared-spec and --distinct-specs together are refused
// before any load, naming both.
func TestSharedAndDistinctSpecsExclude(t *testing.T) {
	err := run(t.Context(), []string{"--addr", "", "--baseline", "--concurrency", "1", "--duration", "10ms", "--shared-spec", "--distinct-specs"}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--shared-spec") || !strings.Contains(err.Error(), "--distinct-specs") {
		t.Errorf("error %v, want one naming --shared-spec and --distinct-specs", err)
	}
}

// TestCollectorPacing: unless GOGC or GOMEMLIMIT is set, the generator collects on a fixed heap
// size (collector percentage off, a memory limit of gcHeadroom plus a little per target), so
// its cost per call does not depend on --targets; either variable leaves Go's pacing alone.
func TestCollectorPacing(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	args := []string{"--addr", "", "--baseline", "--targets", "1000", "--concurrency", "", "--rate", "100",
		"--duration", "50ms", "--warmup", "0s", "--repeat", "1", "--quiet", "--json-out", filepath.Join(t.TempDir(), "r.json")}
	for _, tc := range []struct {
		env         string
		wantPercent int
		wantLimit   int64
	}{
		{"", -1, gcHeadroom + perTarget*1000},
		{"GOGC", 100, math.MaxInt64},
		{"GOMEMLIMIT", 100, math.MaxInt64},
	} {
		t.Run("set="+tc.env, func(t *testing.T) {
			t.Setenv("GOGC", "")
			t.Setenv("GOMEMLIMIT", "")
			if tc.env != "" {
				t.Setenv(tc.env, "off") // only whether it is set matters here
			}
			debug.SetGCPercent(100)
			debug.SetMemoryLimit(math.MaxInt64)
			if err := run(t.Context(), args, io.Discard); err != nil {
				t.Fatal(err)
			}
			if got := debug.SetGCPercent(100); got != tc.wantPercent {
				t.Errorf("collector percentage %d, want %d", got, tc.wantPercent)
			}
			if got := debug.SetMemoryLimit(math.MaxInt64); got != tc.wantLimit {
				t.Errorf("memory limit %d, want %d", got, tc.wantLimit)
			}
		})
	}
}

// TestServeNoop: --serve-noop serves the baseline as a process of its own would, leaving Go's
// collector pacing alone as hpa-recommender does (no fixed heap as the generator's), until its
// context ends; the tool loads it like any service, without errors.
func TestServeNoop(t *testing.T) {
	t.Setenv("GOGC", "")
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	ctx, cancel := context.WithCancel(t.Context())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"--serve-noop", "127.0.0.1:0"}, pw) }()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "serving the no-op baseline on ")
	if !ok {
		t.Fatalf("first line %q, want the address", line)
	}
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("collector percentage %d while serving, want Go's default 100", got)
	}
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("memory limit %d while serving, want none", got)
	}
	out := filepath.Join(t.TempDir(), "r.json")
	if err := run(t.Context(), []string{"--addr", addr, "--targets", "10", "--concurrency", "2", "--duration", "200ms",
		"--warmup", "0s", "--repeat", "1", "--quiet", "--json-out", out}, io.Discard); err != nil {
		t.Fatal(err)
	}
	rep := readReport(t, out)
	if len(rep.Summary) != 1 || rep.Summary[0].Throughput <= 0 || rep.Summary[0].Errors != 0 {
		t.Errorf("summary %+v: want one row with throughput and no errors", rep.Summary)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("--serve-noop returned %v after its context ended, want nil", err)
	}
}

// TestBoltProbeMode: --bolt-probe measures a bare bbolt file in --bolt-probe-dir instead of
// loading anything, and --json reports counts that add up.
func TestBoltProbeMode(t *testing.T) {
	var out strings.Builder
	err := run(t.Context(), []string{"--bolt-probe", "200ms", "--bolt-probe-dir", t.TempDir(), "--bolt-probe-keys", "50", "--bolt-probe-writers", "4", "--json"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	var c bench.BoltCeiling
	if err := json.Unmarshal([]byte(out.String()), &c); err != nil {
		t.Fatalf("%v:\n%s", err, out.String())
	}
	if c.Writers != 4 || c.Keys != 50 || c.Size != 2200 || c.Writes == 0 || c.Counted != uint64(c.Writes) || c.Latency.Count != c.Writes {
		t.Errorf("report %+v: want 4 writers, 50 keys of 2200 bytes, and as many writes counted as made", c)
	}
}
