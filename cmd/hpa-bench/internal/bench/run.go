package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/hpa-recommender/hpa-recommender/internal/workload"
	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

// Config is one benchmark run. DefaultConfig gives every default.
type Config struct {
	// Addr is the service to load (default 127.0.0.1:50051). Empty runs the baseline only.
	// Several replicas of it: comma-separated addresses. Then each target's calls all go to
	// one of them (target i to address i mod N), as a scaler keeps its connection to one
	// replica, unless Spread.
	Addr string
	// Spread, with several addresses, sends each target's successive calls to the addresses
	// in turn, as a load balancer that spreads each call over the replicas does.
	Spread bool `json:",omitempty"`
	// Conns is the number of gRPC connections the callers share (default 1).
	Conns int
	// Targets is how many distinct targets the load spreads over (default 1000).
	Targets int
	// Cluster and Namespace name the targets (default "bench"/"bench"): bench-0 ... bench-<N-1>.
	Cluster, Namespace string
	// Populate makes one Recommend per target before measuring (default true), so the store
	// holds Targets records.
	Populate bool
	// PopulateConcurrency is the callers populating (default 64).
	PopulateConcurrency int
	// Concurrency lists the closed-loop runs: that many callers back to back (default 64).
	Concurrency []int
	// Rates lists the open-loop runs, in Recommend calls per second (default none).
	Rates []float64
	// MaxInflight bounds the calls in flight in open loop (default 512).
	MaxInflight int
	// Warmup precedes each measured run, unrecorded (default 2s).
	Warmup time.Duration
	// Duration is each measured run (default 10s).
	Duration time.Duration
	// Repeat runs each configuration that many times, alternating baseline and service
	// (default 3); the summary gives medians.
	Repeat int
	// Baseline also drives a no-op server (default false): in this process, or, with
	// NoopCommand, in a process of its own.
	Baseline bool
	// NoopCommand, when set, runs the baseline's no-op server as a process of its own: the
	// command must serve it and first write NoopServingPrefix and its address on a line of
	// its standard output (hpa-bench --serve-noop 127.0.0.1:0 does). Its CPU and RSS are then
	// reported as the service's are, and the baseline crosses a process boundary as the
	// service does, so that the ratios compare the two servers' handlers and nothing else.
	// Nil: the no-op server runs in this process, sharing the generator's runtime.
	NoopCommand []string `json:",omitempty"`
	// ServerPIDs are the service's processes, one per address, for their CPU time and RSS,
	// summed (nil: not reported).
	ServerPIDs []int `json:",omitempty"`
	// StorePIDs are the processes of the service's store when it runs apart from the service
	// (etcd's members): their CPU time and RSS, summed, are reported beside the service's for
	// its runs, so that a decision's whole cost is on the page (nil: not reported).
	StorePIDs []int `json:",omitempty"`
	// StoreFile is the service's bbolt file, for its size per target ("": not reported).
	StoreFile string
	// ServerMetrics is the service's Prometheus page (http://host:port/metrics), read before
	// and after each run for what its store did (Result.Store; "": not read).
	ServerMetrics string
	// DiskProbe, with StoreFile, first measures write-and-fdatasync latency in the store
	// file's directory for that long, before any load, then as long again with every CPU kept
	// busy (0: not measured; default 2s).
	DiskProbe time.Duration
	// LoopbackProbe first measures round trips of a small message over loopback TCP for that
	// long, before any load (0: not measured; default 1s): the machine's cost of a wake-up
	// and a system call, which sets every call's floor (see ProbeLoopback).
	LoopbackProbe time.Duration
	// Hostile adds that many callers sending malformed, huge, oversized, abandoned and slow
	// calls to the service during each measured run (default 0); the good calls' latency is
	// what the run reports, and the server's file descriptors and threads are compared
	// before and after.
	Hostile int
	// CallTimeout bounds each call (default 10s).
	CallTimeout time.Duration
	// LoadSwing is the amplitude of each target's CPU demand cycle (default 0.4, ±40 %); 0
	// makes no decision scale (see workload.Workload.SetLoadSwing).
	LoadSwing float64
	// SharedSpec makes every target send the same spec (see workload.Workload.SetSharedSpec); by
	// default each sends its own, as HPAs do.
	SharedSpec bool
	// DistinctSpecs makes every target's spec differ in more than its scaleTargetRef (see
	// workload.Workload.SetDistinctSpecs): no two share a template.
	DistinctSpecs bool
	// Progress receives a line per run (nil: silent).
	Progress io.Writer
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		Addr: "127.0.0.1:50051", Conns: 1, Targets: 1000, Cluster: "bench", Namespace: "bench",
		Populate: true, PopulateConcurrency: 64, Concurrency: []int{64}, MaxInflight: 512,
		Warmup: 2 * time.Second, Duration: 10 * time.Second, Repeat: 3,
		CallTimeout: 10 * time.Second, DiskProbe: 2 * time.Second, LoopbackProbe: time.Second,
		LoadSwing: workload.DefaultLoadSwing,
	}
}

// Validate reports inconsistent settings.
func (c *Config) Validate() error {
	var errs []error
	if c.Addr == "" && !c.Baseline {
		errs = append(errs, errors.New("nothing to measure: set --addr or --baseline"))
	}
	if c.Conns < 1 || c.Targets < 1 || c.PopulateConcurrency < 1 || c.MaxInflight < 1 || c.Repeat < 1 {
		errs = append(errs, errors.New("--conns, --targets, --populate-concurrency, --max-inflight and --repeat must be positive"))
	}
	if len(c.Concurrency) == 0 && len(c.Rates) == 0 {
		errs = append(errs, errors.New("no run: give --concurrency or --rate"))
	}
	for _, n := range c.Concurrency {
		if n < 1 {
			errs = append(errs, fmt.Errorf("--concurrency %d must be positive", n))
		}
	}
	for _, r := range c.Rates {
		if r <= 0 {
			errs = append(errs, fmt.Errorf("--rate %g must be positive", r))
		}
	}
	if c.Duration <= 0 || c.Warmup < 0 || c.CallTimeout <= 0 || c.DiskProbe < 0 || c.LoopbackProbe < 0 {
		errs = append(errs, errors.New("--duration and --call-timeout must be positive, --warmup, --disk-probe and --loopback-probe not negative"))
	}
	for _, pid := range c.StorePIDs {
		if pid < 1 {
			errs = append(errs, fmt.Errorf("--store-pid %d must be a process id", pid))
		}
	}
	for _, pid := range c.ServerPIDs {
		if pid < 1 {
			errs = append(errs, fmt.Errorf("--server-pid %d must be a process id", pid))
		}
	}
	if slices.Contains(c.addrs(), "") {
		errs = append(errs, fmt.Errorf("--addr %q: an empty address in the list", c.Addr))
	}
	if c.Spread && len(c.addrs()) < 2 {
		errs = append(errs, errors.New("--spread needs several addresses in --addr"))
	}
	if len(c.StorePIDs) > 0 && c.Addr == "" {
		errs = append(errs, errors.New("--store-pid needs --addr: the store's processes are the service's"))
	}
	if c.SharedSpec && c.DistinctSpecs {
		errs = append(errs, errors.New("--shared-spec and --distinct-specs exclude each other"))
	}
	if c.LoadSwing < 0 || c.LoadSwing >= 1 || math.IsNaN(c.LoadSwing) {
		errs = append(errs, fmt.Errorf("--load-swing %g must be at least 0 and below 1", c.LoadSwing))
	}
	return errors.Join(errs...)
}

// addrs is Addr's addresses.
func (c *Config) addrs() []string {
	if c.Addr == "" {
		return nil
	}
	as := strings.Split(c.Addr, ",")
	for i := range as {
		as[i] = strings.TrimSpace(as[i])
	}
	return as
}

// Result is one measured run against one server.
type Result struct {
	Server      string        `json:"server"` // "service" or "baseline"
	Mode        string        `json:"mode"`   // "closed" or "open"
	Concurrency int           `json:"concurrency,omitempty"`
	Rate        float64       `json:"rate,omitempty"`
	Repeat      int           `json:"repeat"`
	Elapsed     time.Duration `json:"elapsed_ns"`
	// Throughput is successful Recommends per second.
	Throughput  float64 `json:"throughput"`
	Recommend   Latency `json:"recommend"`
	ReportScale Latency `json:"report_scale"`
	// Lag is, in open loop, how late calls started after they were due (the generator's share
	// of Recommend's latency); empty in closed loop.
	Lag    Latency `json:"lag,omitempty"`
	Scaled int     `json:"scaled"`
	// ServerUsage is the server process's (nil without a pid, and for a baseline in this
	// process); Client is this process's (for a baseline in this process it includes the
	// no-op server).
	ServerUsage *Usage `json:"server_usage,omitempty"`
	// StoreUsage is the store's processes', summed (Config.StorePIDs; service runs only).
	StoreUsage *Usage `json:"store_usage,omitempty"`
	Client     Usage  `json:"client_usage"`
	// Hostile counts the hostile calls made alongside (service runs with Config.Hostile).
	Hostile *HostileStats `json:"hostile,omitempty"`
	// Store is what the service's store did, warm-up included (Config.ServerMetrics).
	Store *StoreRun `json:"store,omitempty"`
	// ServerLatency is the service's own handling time of Recommend, warm-up included
	// (Config.ServerMetrics).
	ServerLatency *ServerLatency `json:"server_latency,omitempty"`
}

// Populated describes the pre-population and the memory it cost.
type Populated struct {
	Targets  int           `json:"targets"`
	Elapsed  time.Duration `json:"elapsed_ns"`
	Errors   int           `json:"errors"`
	RSSStart int64         `json:"rss_before_bytes,omitempty"`
	RSSEnd   int64         `json:"rss_after_bytes,omitempty"`
	// RSSPerTarget is (RSSEnd-RSSStart)/Targets: meaningful on a fresh server only.
	RSSPerTarget float64 `json:"rss_per_target_bytes,omitempty"`
	FileBytes    int64   `json:"file_bytes,omitempty"`
	FilePerTgt   float64 `json:"file_per_target_bytes,omitempty"`
}

// Report is everything one run of the tool measured.
type Report struct {
	Config    Config     `json:"config"`
	Started   time.Time  `json:"started"`
	LoadAvg   string     `json:"loadavg_start"`
	LoadAvgAt string     `json:"loadavg_end"`
	Populated *Populated `json:"populated,omitempty"`
	// Disk is ProbeDisk's measure of the store's disk, taken before the load, and DiskBusy
	// ProbeDiskBusy's, right after it.
	Disk     *DiskSync `json:"disk_sync,omitempty"`
	DiskBusy *DiskSync `json:"disk_sync_busy,omitempty"`
	// Loopback is ProbeLoopback's measure of the machine, taken before the load.
	Loopback *RoundTrip `json:"loopback,omitempty"`
	Runs     []Result   `json:"runs"`
	Summary  []Row      `json:"summary"`
	// BaselinePID is the no-op server process's id, when the baseline ran as one
	// (Config.NoopCommand).
	BaselinePID int `json:"baseline_pid,omitempty"`
}

// Run measures per cfg and returns the report.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	rep := &Report{Config: cfg, Started: time.Now(), LoadAvg: loadAvg()}
	if cfg.StoreFile != "" && cfg.DiskProbe > 0 {
		disk, err := ProbeDisk(filepath.Dir(cfg.StoreFile), cfg.DiskProbe)
		if err != nil {
			return nil, err
		}
		rep.Disk = &disk
		cfg.progress("disk: %s", disk)
		busy, err := ProbeDiskBusy(filepath.Dir(cfg.StoreFile), cfg.DiskProbe)
		if err != nil {
			return nil, err
		}
		rep.DiskBusy = &busy
		cfg.progress("disk, every CPU busy: %s", busy)
	}
	if cfg.LoopbackProbe > 0 {
		rt, err := ProbeLoopback(cfg.LoopbackProbe)
		if err != nil {
			return nil, err
		}
		rep.Loopback = &rt
		cfg.progress("loopback: %s", rt)
	}
	wl := workload.NewWorkload(cfg.Cluster, cfg.Namespace, cfg.Targets)
	wl.SetLoadSwing(cfg.LoadSwing)
	wl.SetSharedSpec(cfg.SharedSpec)
	wl.SetDistinctSpecs(cfg.DistinctSpecs)
	// What a target's calls share is encoded once (requests).
	reqs := newRequests(wl)
	t0 := time.Now()
	if err := reqs.fill(); err != nil {
		return nil, err
	}
	cfg.progress("encoded the requests of %d targets in %s", wl.Targets(), time.Since(t0).Round(time.Millisecond))

	type target struct {
		name    string
		conns   pool
		pids    []int  // the server's processes
		store   []int  // the store's processes (Config.StorePIDs)
		metrics string // the Prometheus page to read the store's metrics from ("": none)
		hostile *hostile
	}
	var targets []target
	if cfg.Baseline {
		var addr string
		var pid int
		if len(cfg.NoopCommand) > 0 {
			p, err := startNoopProcess(ctx, cfg.NoopCommand)
			if err != nil {
				return nil, fmt.Errorf("start baseline: %w", err)
			}
			defer p.stop()
			addr, pid = p.addr, p.pid()
			rep.BaselinePID = pid
			cfg.progress("baseline: a no-op server process, pid %d, on %s", pid, addr)
		} else {
			noop, err := StartNoop()
			if err != nil {
				return nil, fmt.Errorf("start baseline: %w", err)
			}
			defer noop.Stop()
			addr = noop.Addr()
		}
		cl, closeAll, err := dial([]string{addr}, cfg.Conns, false)
		if err != nil {
			return nil, err
		}
		defer closeAll()
		var pids []int
		if pid > 0 {
			pids = []int{pid}
		}
		targets = append(targets, target{name: "baseline", conns: cl, pids: pids})
	}
	if cfg.Addr != "" {
		addrs := cfg.addrs()
		cl, closeAll, err := dial(addrs, cfg.Conns, cfg.Spread)
		if err != nil {
			return nil, err
		}
		defer closeAll()
		svc := target{name: "service", conns: cl, pids: cfg.ServerPIDs, store: cfg.StorePIDs, metrics: cfg.ServerMetrics}
		if cfg.Hostile > 0 {
			svc.hostile = newHostile(addrs[0], cl.conns[0].client, wl)
		}
		targets = append(targets, svc)
		if cfg.Populate {
			p, err := populate(ctx, cfg, reqs, svc.conns, svc.pids)
			if err != nil {
				return nil, err
			}
			rep.Populated = p
			cfg.progress("populated %d targets in %s (%d errors)", p.Targets, p.Elapsed.Round(time.Millisecond), p.Errors)
		}
	}

	type run struct {
		mode string
		conc int
		rate float64
	}
	var runs []run
	for _, c := range cfg.Concurrency {
		runs = append(runs, run{mode: "closed", conc: c})
	}
	for _, r := range cfg.Rates {
		runs = append(runs, run{mode: "open", rate: r})
	}
	for _, r := range runs {
		for i := range cfg.Repeat {
			for _, t := range targets {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				var before map[string]float64
				var read time.Time
				if t.metrics != "" {
					var err error
					if before, err = readServerMetrics(ctx, t.metrics); err != nil {
						return nil, err
					}
					read = time.Now()
				}
				res, err := measureWith(ctx, cfg, reqs, t.conns, t.pids, t.store, t.hostile, r.mode, r.conc, r.rate)
				if err != nil {
					return nil, err
				}
				if t.metrics != "" {
					after, err := readServerMetrics(ctx, t.metrics)
					if err != nil {
						return nil, err
					}
					res.Store = storeRun(before, after, time.Since(read))
					res.ServerLatency = serverLatency(before, after)
				}
				res.Server, res.Repeat = t.name, i
				rep.Runs = append(rep.Runs, res)
				cfg.progress("%-8s %-6s %s rep %d: %.0f/s p50 %s p99 %s max %s errors %d scaled %d",
					t.name, r.mode, param(&res), i, res.Throughput, ms(res.Recommend.P50), ms(res.Recommend.P99),
					ms(res.Recommend.Max), res.Recommend.Errors, res.Scaled)
			}
		}
	}
	rep.LoadAvgAt = loadAvg()
	rep.Summary = summarize(rep.Runs)
	return rep, nil
}

func (c *Config) progress(format string, args ...any) {
	if c.Progress != nil {
		fmt.Fprintf(c.Progress, format+"\n", args...)
	}
}

// conn is one connection to a server: Recommend sends encoded requests on cc (recommend),
// the other calls go through client.
type conn struct {
	cc     *grpc.ClientConn
	client pb.RecommenderServiceClient
}

// pool is the connections the callers share: perAddr to each of several addresses.
type pool struct {
	conns   []conn // perAddr to the first address, then perAddr to the second, ...
	perAddr int
	spread  bool // each target's successive calls go to the addresses in turn
}

// pick returns the worker's connection, for a call to target i in round round (the targets
// are called in turn, round after round), to the target's address (i mod the addresses), or
// with spread to the next address each round.
func (p pool) pick(round int64, i, worker int) conn {
	addrs := len(p.conns) / p.perAddr
	a := i % addrs
	if p.spread {
		a = int((int64(i) + round) % int64(addrs))
	}
	return p.conns[a*p.perAddr+worker%p.perAddr]
}

// dial opens n connections to each of addrs.
func dial(addrs []string, n int, spread bool) (pool, func(), error) {
	p := pool{perAddr: n, spread: spread}
	closeAll := func() {
		for _, c := range p.conns {
			_ = c.cc.Close()
		}
	}
	for _, addr := range addrs {
		for range n {
			cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				closeAll()
				return pool{}, nil, fmt.Errorf("dial %s: %w", addr, err)
			}
			p.conns = append(p.conns, conn{cc: cc, client: pb.NewRecommenderServiceClient(cc)})
		}
	}
	return p, closeAll, nil
}

// caller returns the unit of work: the next target's Recommend and, when it asks for a scale,
// the ReportScale a controller would send after a successful scale write. The Recommend
// request is encoded by reqs.
func caller(cfg Config, reqs *requests, conns pool, next *atomic.Int64) callFunc {
	wl := reqs.wl
	return func(ctx context.Context, worker int, st *stats, start time.Time, record bool) {
		n := next.Add(1) - 1
		i := int(n % int64(wl.Targets()))
		cl := conns.pick(n/int64(wl.Targets()), i, worker)
		ctx, cancel := context.WithTimeout(ctx, cfg.CallTimeout)
		defer cancel()
		resp, err := reqs.recommend(ctx, cl.cc, i, time.Now())
		lat := time.Since(start)
		if err != nil {
			if record {
				st.recommend.Error()
			}
			return
		}
		if record {
			st.recommend.Record(lat)
		}
		if !resp.GetScale() || resp.GetRecommendationId() == "" {
			return
		}
		if record {
			st.scaled++
		}
		// A controller reports after its scale write, under a deadline of its own.
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.CallTimeout)
		defer rcancel()
		t := time.Now()
		_, err = cl.client.ReportScale(rctx, &pb.ReportScaleRequest{Target: wl.Ref(i), RecommendationId: resp.GetRecommendationId(), Succeeded: true})
		if err != nil {
			if record {
				st.report.Error()
			}
			return
		}
		if record {
			st.report.Record(time.Since(t))
		}
		wl.Applied(i, resp.GetDesiredReplicas())
	}
}

func populate(ctx context.Context, cfg Config, reqs *requests, conns pool, pids []int) (*Populated, error) {
	wl := reqs.wl
	p := &Populated{Targets: wl.Targets()}
	var before ProcSample
	if len(pids) > 0 {
		var err error
		if before, err = readProcs(pids); err != nil {
			return nil, err
		}
		p.RSSStart = before.RSS
	}
	var next atomic.Int64
	call := caller(cfg, reqs, conns, &next)
	var errs atomic.Int64
	done := make(chan struct{})
	workers := min(cfg.PopulateConcurrency, wl.Targets())
	var claimed atomic.Int64
	t0 := time.Now()
	for w := range workers {
		go func() {
			defer func() { done <- struct{}{} }()
			var st stats
			for claimed.Add(1) <= int64(wl.Targets()) && ctx.Err() == nil {
				call(ctx, w, &st, time.Now(), true)
			}
			errs.Add(int64(st.recommend.errors + st.report.errors))
		}()
	}
	for range workers {
		<-done
	}
	p.Elapsed = time.Since(t0)
	p.Errors = int(errs.Load())
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if p.Errors == p.Targets {
		return nil, fmt.Errorf("populate: every Recommend failed; is the service at %s?", cfg.Addr)
	}
	if len(pids) > 0 {
		// Let the runtime's background work settle before reading RSS.
		time.Sleep(500 * time.Millisecond)
		after, err := readProcs(pids)
		if err != nil {
			return nil, err
		}
		p.RSSEnd = after.RSS
		p.RSSPerTarget = float64(p.RSSEnd-p.RSSStart) / float64(p.Targets)
	}
	if cfg.StoreFile != "" {
		fi, err := os.Stat(cfg.StoreFile)
		if err != nil {
			return nil, fmt.Errorf("store file: %w", err)
		}
		p.FileBytes = fi.Size()
		p.FilePerTgt = float64(fi.Size()) / float64(p.Targets)
	}
	return p, nil
}

// measureWith is measure with hostile callers alongside, when h is not nil. The hostile
// callers call the first address, whose process is the first of pids.
func measureWith(ctx context.Context, cfg Config, reqs *requests, conns pool, pids []int, store []int, h *hostile, mode string, conc int, rate float64) (Result, error) {
	if h == nil {
		return measure(ctx, cfg, reqs, conns, pids, store, mode, conc, rate)
	}
	pid := 0
	if len(pids) > 0 {
		pid = pids[0]
	}
	var before HostileStats
	var err error
	if pid > 0 {
		if before.FDsBefore, before.ThreadsBefore, err = countFDs(pid); err != nil {
			return Result{}, err
		}
	}
	for i := range h.sent {
		h.sent[i].Store(0)
	}
	h.bad.Store(0)
	h.stats = before
	hctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { h.run(hctx, cfg.Hostile); close(done) }()
	res, err := measure(ctx, cfg, reqs, conns, pids, store, mode, conc, rate)
	stop()
	<-done
	if err != nil {
		return res, err
	}
	hs := h.finish()
	if pid > 0 {
		time.Sleep(2 * time.Second) // let the server notice closed connections
		if hs.FDsAfter, hs.ThreadsAfter, err = countFDs(pid); err != nil {
			return res, err
		}
	}
	res.Hostile = &hs
	return res, nil
}

// measure makes one run; pids are the server's processes (nil: none), store its store's (nil:
// none).
func measure(ctx context.Context, cfg Config, reqs *requests, conns pool, pids []int, store []int, mode string, conc int, rate float64) (Result, error) {
	res := Result{Mode: mode, Concurrency: conc, Rate: rate}
	var next atomic.Int64
	call := caller(cfg, reqs, conns, &next)
	// The warm-up is part of the run, so samples bracket it: usage covers warm-up too, which
	// runs at the same load.
	var srvBefore ProcSample
	var err error
	if len(pids) > 0 {
		if srvBefore, err = readProcs(pids); err != nil {
			return res, err
		}
	}
	var storeBefore ProcSample
	if len(store) > 0 {
		if storeBefore, err = readProcs(store); err != nil {
			return res, fmt.Errorf("store: %w", err)
		}
	}
	cliBefore, err := ReadProc(0)
	if err != nil {
		return res, err
	}
	var st *stats
	if mode == "open" {
		st, res.Elapsed = openLoop(ctx, rate, cfg.MaxInflight, cfg.Warmup, cfg.Duration, call)
	} else {
		st, res.Elapsed = closedLoop(ctx, conc, cfg.Warmup, cfg.Duration, call)
	}
	cliAfter, err := ReadProc(0)
	if err != nil {
		return res, err
	}
	res.Recommend = st.recommend.Summary()
	res.ReportScale = st.report.Summary()
	res.Lag = st.lag.Summary()
	res.Scaled = st.scaled
	calls := int(float64(res.Recommend.Count) * float64(cliAfter.At.Sub(cliBefore.At)) / float64(res.Elapsed))
	res.Client = usage(cliBefore, cliAfter, calls)
	if len(pids) > 0 {
		srvAfter, err := readProcs(pids)
		if err != nil {
			return res, err
		}
		u := usage(srvBefore, srvAfter, calls)
		res.ServerUsage = &u
	}
	if len(store) > 0 {
		storeAfter, err := readProcs(store)
		if err != nil {
			return res, fmt.Errorf("store: %w", err)
		}
		u := usage(storeBefore, storeAfter, calls)
		res.StoreUsage = &u
	}
	if res.Elapsed > 0 {
		res.Throughput = float64(res.Recommend.Count) / res.Elapsed.Seconds()
	}
	return res, nil
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}
