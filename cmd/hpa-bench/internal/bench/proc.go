package bench

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times: 100 on every Linux architecture
// Go supports.
const clockTicks = 100

// ProcSample is a process's cumulative CPU time and its memory at one moment.
type ProcSample struct {
	At  time.Time
	CPU time.Duration // user + system
	RSS int64         // bytes (VmRSS)
	HWM int64         // bytes (VmHWM, peak RSS)
}

// ReadProc samples process pid (0: this process) from /proc.
func ReadProc(pid int) (ProcSample, error) {
	dir := "/proc/self"
	if pid > 0 {
		dir = "/proc/" + strconv.Itoa(pid)
	}
	s := ProcSample{At: time.Now()}
	stat, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return s, fmt.Errorf("read process stat: %w", err)
	}
	// The command name (field 2) may hold spaces and parentheses: fields start after the last ')'.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return s, fmt.Errorf("parse %s/stat: no command name", dir)
	}
	f := strings.Fields(string(stat[i+1:]))
	// After the name: state(3) ... utime(14) stime(15), so utime is f[11].
	if len(f) < 13 {
		return s, fmt.Errorf("parse %s/stat: %d fields", dir, len(f))
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return s, fmt.Errorf("parse %s/stat: bad utime/stime %q %q", dir, f[11], f[12])
	}
	s.CPU = time.Duration(utime+stime) * time.Second / clockTicks
	status, err := os.ReadFile(dir + "/status")
	if err != nil {
		return s, fmt.Errorf("read process status: %w", err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		name, rest, ok := strings.Cut(line, ":")
		if !ok || (name != "VmRSS" && name != "VmHWM") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			return s, fmt.Errorf("parse %s/status %s: %w", dir, name, err)
		}
		if name == "VmRSS" {
			s.RSS = kb << 10
		} else {
			s.HWM = kb << 10
		}
	}
	return s, nil
}

// readProcs samples every process of pids and sums their CPU time and memory: one sample for a
// group of processes that serve together, as an etcd cluster's members do.
func readProcs(pids []int) (ProcSample, error) {
	sum := ProcSample{At: time.Now()}
	for _, pid := range pids {
		s, err := ReadProc(pid)
		if err != nil {
			return sum, fmt.Errorf("process %d: %w", pid, err)
		}
		sum.CPU += s.CPU
		sum.RSS += s.RSS
		sum.HWM += s.HWM
	}
	return sum, nil
}

// Usage is what a process spent between two samples.
type Usage struct {
	// Cores is CPU time over wall time (2.0 = both cores of this machine busy).
	Cores float64 `json:"cores"`
	// CPUPerCall is CPU time per successful Recommend.
	CPUPerCall time.Duration `json:"cpu_per_call_ns"`
	// RSS is the resident set at the end, in bytes; HWM the peak so far.
	RSS int64 `json:"rss_bytes"`
	HWM int64 `json:"hwm_bytes"`
}

func usage(before, after ProcSample, calls int) Usage {
	u := Usage{RSS: after.RSS, HWM: after.HWM}
	if wall := after.At.Sub(before.At); wall > 0 {
		u.Cores = float64(after.CPU-before.CPU) / float64(wall)
	}
	if calls > 0 {
		u.CPUPerCall = (after.CPU - before.CPU) / time.Duration(calls)
	}
	return u
}
