package bench

import (
	"flag"
	"strconv"
	"strings"
)

// RegisterFlags binds every field but Progress to a flag of fs, with the current values as
// defaults.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Addr, "addr", c.Addr, "service to load (empty: baseline only); several replicas of it: comma-separated addresses, each target's calls going to one of them (see --spread)")
	fs.IntVar(&c.Conns, "conns", c.Conns, "gRPC connections shared by the callers")
	fs.IntVar(&c.Targets, "targets", c.Targets, "distinct targets (bench-0 ... bench-<N-1>)")
	fs.StringVar(&c.Cluster, "cluster", c.Cluster, "cluster of the targets")
	fs.StringVar(&c.Namespace, "namespace", c.Namespace, "namespace of the targets")
	fs.BoolVar(&c.Populate, "populate", c.Populate, "make one Recommend per target before measuring")
	fs.IntVar(&c.PopulateConcurrency, "populate-concurrency", c.PopulateConcurrency, "callers populating")
	ints(fs, &c.Concurrency, "concurrency", "closed-loop runs: caller counts, a comma-separated `list` (empty: none)")
	floats(fs, &c.Rates, "rate", "open-loop runs: Recommend rates per second, a comma-separated `list`")
	fs.IntVar(&c.MaxInflight, "max-inflight", c.MaxInflight, "most calls in flight in open loop")
	fs.DurationVar(&c.Warmup, "warmup", c.Warmup, "unrecorded warm-up before each run")
	fs.DurationVar(&c.Duration, "duration", c.Duration, "measured length of each run")
	fs.IntVar(&c.Repeat, "repeat", c.Repeat, "repeats of each run (the summary gives medians)")
	fs.BoolVar(&c.Baseline, "baseline", c.Baseline, "also drive a no-op server (the baseline) and report ratios")
	ints(fs, &c.ServerPIDs, "server-pid", "the service's pid, for its CPU and RSS; with several addresses, the pids of its replicas, summed: a comma-separated `list` (empty: not reported)")
	fs.BoolVar(&c.Spread, "spread", c.Spread, "with several --addr, send each target's successive calls to the addresses in turn, as a load balancer that spreads each call does (default: each target's calls to one address, as a scaler keeps one connection)")
	ints(fs, &c.StorePIDs, "store-pid", "the processes of the service's store when it runs apart (etcd members): their pids, a comma-separated `list`, whose CPU and RSS are summed and reported beside the service's")
	fs.StringVar(&c.StoreFile, "store-file", c.StoreFile, "the service's bbolt file, for its size per target")
	fs.StringVar(&c.ServerMetrics, "server-metrics", c.ServerMetrics, "the service's Prometheus page (http://host:port/metrics), read before and after each run for the server's own handling time of Recommend (p50, p99, share within 5 ms, from its histogram) and, with the bbolt store, its writes per commit, a commit's write and sync time, that time per write and the share of the time spent writing")
	fs.DurationVar(&c.DiskProbe, "disk-probe", c.DiskProbe, "with --store-file, first measure write+fdatasync latency in its directory for this long, then as long again with every CPU busy (0: off)")
	fs.DurationVar(&c.LoopbackProbe, "loopback-probe", c.LoopbackProbe, "first measure round trips of 64 bytes over loopback TCP for this long: the machine's per-call floor, to compare runs of different days (0: off)")
	fs.IntVar(&c.Hostile, "hostile", c.Hostile, "callers sending malformed, huge, oversized, abandoned and slow calls alongside each service run")
	fs.DurationVar(&c.CallTimeout, "call-timeout", c.CallTimeout, "deadline of each call")
	fs.BoolVar(&c.SharedSpec, "shared-spec", c.SharedSpec, "every target sends one and the same spec (the tool's payload before 2026-11-25), instead of a spec naming its own Deployment")
	fs.BoolVar(&c.DistinctSpecs, "distinct-specs", c.DistinctSpecs, "every target's spec also differs in its queue metric's selector, so no two specs differ only in scaleTargetRef (as specs made from one template do)")
	fs.Float64Var(&c.LoadSwing, "load-swing", c.LoadSwing, "amplitude of each target's CPU demand cycle (0.4: ±40%); 0 makes no decision scale, so every Recommend is one write whatever --targets")
}

type intList struct{ v *[]int }

func (l intList) String() string {
	if l.v == nil {
		return ""
	}
	s := make([]string, len(*l.v))
	for i, n := range *l.v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

func (l intList) Set(s string) error {
	*l.v = nil
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		n, err := strconv.Atoi(p)
		if err != nil {
			return err
		}
		*l.v = append(*l.v, n)
	}
	return nil
}

func ints(fs *flag.FlagSet, v *[]int, name, usage string) { fs.Var(intList{v}, name, usage) }

type floatList struct{ v *[]float64 }

func (l floatList) String() string {
	if l.v == nil {
		return ""
	}
	s := make([]string, len(*l.v))
	for i, f := range *l.v {
		s[i] = strconv.FormatFloat(f, 'f', -1, 64)
	}
	return strings.Join(s, ",")
}

func (l floatList) Set(s string) error {
	*l.v = nil
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		f, err := strconv.ParseFloat(p, 64)
		if err != nil {
			return err
		}
		*l.v = append(*l.v, f)
	}
	return nil
}

func floats(fs *flag.FlagSet, v *[]float64, name, usage string) { fs.Var(floatList{v}, name, usage) }
