package fleet

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"

	"github.com/hpa-recommender/hpa-recommender/cmd/hpa-bench/internal/bench"
	"github.com/hpa-recommender/hpa-recommender/internal/controlplane"
)

// measurement watches a running fleet: the scaler's per-autoscaler last-sync gauges, its
// counters, the API server's request counters and every process's CPU and memory.
type measurement struct {
	cfg       Config
	scalerURL string
	kcmURL    string // the in-tree peer's /metrics
	api       rest.Interface
	pids      map[string]int
	children  []*child
	adapter   *controlplane.MetricsAdapter
	progress  io.Writer
	client    *http.Client

	syncs map[string][]float64 // autoscaler -> last-sync timestamps seen, in order
}

// counters are the scaler's totals at one moment.
type counters struct {
	decisions, syncsOK, syncErrors, statusWritten float64
	syncSeconds, syncCount                        float64             // hpa_scaler_sync_duration_seconds' sum and count
	syncBuckets                                   map[float64]float64 // and its buckets: upper bound -> cumulative count
	autoscalers                                   int
}

// readScaler scrapes the scaler once, recording new sync timestamps.
func (m *measurement) readScaler(ctx context.Context) (counters, error) {
	c := counters{syncBuckets: map[float64]float64{}}
	err := scrape(ctx, m.client, m.scalerURL, func(name, labels string, v float64) {
		switch name {
		case "hpa_scaler_last_sync_timestamp_seconds":
			c.autoscalers++
			ts := m.syncs[labels]
			if len(ts) == 0 || ts[len(ts)-1] != v {
				m.syncs[labels] = append(ts, v)
			}
		case "hpa_scaler_decisions_total":
			c.decisions += v
		case "hpa_scaler_syncs_total":
			if strings.Contains(labels, `result="ok"`) {
				c.syncsOK += v
			} else {
				c.syncErrors += v
			}
		case "hpa_scaler_sync_duration_seconds_sum":
			c.syncSeconds = v
		case "hpa_scaler_sync_duration_seconds_count":
			c.syncCount = v
		case "hpa_scaler_sync_duration_seconds_bucket":
			if i := strings.Index(labels, `le="`); i >= 0 {
				if le, err := strconv.ParseFloat(strings.TrimSuffix(labels[i+4:], `"`), 64); err == nil {
					c.syncBuckets[le] = v
				}
			}
		case "hpa_scaler_status_writes_total":
			if strings.Contains(labels, `result="written"`) {
				c.statusWritten += v
			}
		}
	})
	if err != nil {
		return c, fmt.Errorf("scrape hpa-scaler: %w", err)
	}
	return c, nil
}

var labelRE = regexp.MustCompile(`(\w+)="([^"]*)"`)

// readAPIServer reads apiserver_request_total, summed by verb and resource.
func (m *measurement) readAPIServer(ctx context.Context) (map[string]float64, error) {
	b, err := m.api.Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("read kube-apiserver /metrics: %w", err)
	}
	out := map[string]float64{}
	err = ParseMetrics(strings.NewReader(string(b)), func(name, labels string, v float64) {
		if name != "apiserver_request_total" {
			return
		}
		l := map[string]string{}
		for _, kv := range labelRE.FindAllStringSubmatch(labels, -1) {
			l[kv[1]] = kv[2]
		}
		res := l["resource"]
		if l["group"] != "" {
			res = l["group"] + "/" + res
		}
		if l["subresource"] != "" {
			res += "/" + l["subresource"]
		}
		out[l["verb"]+" "+res] += v
	})
	return out, err
}

func (m *measurement) readProcs() (map[string]bench.ProcSample, error) {
	out := map[string]bench.ProcSample{}
	for name, pid := range m.pids {
		s, err := bench.ReadProc(pid)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out[name] = s
	}
	return out, nil
}

func (m *measurement) alive() error {
	for _, c := range m.children {
		if err := c.exited(); err != nil {
			return err
		}
	}
	return nil
}

// run waits for every autoscaler's first sync, then measures cfg.Periods periods.
func (m *measurement) run(ctx, setupCtx context.Context) (*Report, error) {
	m.syncs = map[string][]float64{}
	n := m.cfg.HPAs
	warm := time.Now()
	lastNote := warm
	for {
		if err := m.alive(); err != nil {
			return nil, err
		}
		c, err := m.readScaler(setupCtx)
		if err == nil && c.autoscalers >= n {
			break
		}
		if time.Since(lastNote) > 5*time.Second {
			fmt.Fprintf(m.progress, "fleet: %d of %d autoscalers synced once (%s; sync errors %g)\n", c.autoscalers, n, time.Since(warm).Round(time.Second), c.syncErrors)
			lastNote = time.Now()
		}
		select {
		case <-setupCtx.Done():
			return nil, fmt.Errorf("waiting for every autoscaler's first sync (%d of %d; last scrape error %v): %w", c.autoscalers, n, err, setupCtx.Err())
		case <-time.After(time.Second):
		}
	}
	fmt.Fprintf(m.progress, "fleet: every autoscaler synced once after %s; measuring %d periods of %s\n", time.Since(warm).Round(time.Second), m.cfg.Periods, m.cfg.Period)

	t0 := time.Now()
	c0, err := m.readScaler(ctx)
	if err != nil {
		return nil, err
	}
	o, err := m.openSamples(ctx)
	if err != nil {
		return nil, err
	}
	end := t0.Add(time.Duration(m.cfg.Periods) * m.cfg.Period)
	// Every quarter period: a sync's timestamp stays on the page until the autoscaler's next
	// sync, which comes no sooner than period x (1 - jitter) later.
	every := m.cfg.Period / 4
	for time.Now().Before(end) {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(min(every, time.Until(end))):
		}
		if err := m.alive(); err != nil {
			return nil, err
		}
		if _, err := m.readScaler(ctx); err != nil {
			return nil, err
		}
	}
	c1, err := m.readScaler(ctx)
	if err != nil {
		return nil, err
	}
	rep, err := m.finishSamples(ctx, t0, o)
	if err != nil {
		return nil, err
	}
	rep.SyncFigures = AnalyseSyncs(m.cfg, m.syncs, t0, end)
	wall := rep.Wall
	rep.DecisionsPerSec = (c1.decisions - c0.decisions) / wall
	rep.SyncsPerSec = (c1.syncsOK - c0.syncsOK) / wall
	rep.SyncErrorsPerSec = (c1.syncErrors - c0.syncErrors) / wall
	rep.StatusWritesPerSec = (c1.statusWritten - c0.statusWritten) / wall
	if n := c1.syncCount - c0.syncCount; n > 0 {
		rep.SyncMean = time.Duration((c1.syncSeconds - c0.syncSeconds) / n * float64(time.Second))
		rep.SyncsInFlight = (c1.syncSeconds - c0.syncSeconds) / wall
		rep.SyncP99 = BucketQuantile(c0.syncBuckets, c1.syncBuckets, 0.99)
	}
	if rep.SyncsPerSec > 0 {
		cores := rep.Processes["hpa-scaler"].Cores + rep.Processes["hpa-recommender"].Cores
		rep.CPUPerSync = time.Duration(cores / rep.SyncsPerSec * float64(time.Second))
	}
	return rep, nil
}

// opening holds the samples a measurement starts from: every process's CPU, the API server's
// request counters, the machine's busy CPU and how many requests the metrics adapter has had.
type opening struct {
	procs    map[string]bench.ProcSample
	api      map[string]float64
	machine  machine
	requests int
}

// openSamples takes the opening samples that finishSamples closes.
func (m *measurement) openSamples(ctx context.Context) (opening, error) {
	o := opening{requests: len(m.adapter.Requests())}
	var err error
	if o.procs, err = m.readProcs(); err != nil {
		return o, err
	}
	if o.api, err = m.readAPIServer(ctx); err != nil {
		return o, err
	}
	o.machine, err = readMachine()
	return o, err
}

// finishSamples takes the closing samples of a measurement that began at t0 and returns the
// report's common figures: every process's CPU and memory, the machine's CPU, the API
// server's requests.
func (m *measurement) finishSamples(ctx context.Context, t0 time.Time, o opening) (*Report, error) {
	p0, a0, m0, r0 := o.procs, o.api, o.machine, o.requests
	p1, err := m.readProcs()
	if err != nil {
		return nil, err
	}
	a1, err := m.readAPIServer(ctx)
	if err != nil {
		return nil, err
	}
	m1, err := readMachine()
	if err != nil {
		return nil, err
	}
	// Requests to the metrics APIs are proxied by kube-apiserver's aggregation layer, which
	// does not count them in apiserver_request_total: the adapter does.
	for _, r := range m.adapter.Requests()[r0:] {
		group := "aggregated"
		if p := strings.Split(strings.TrimPrefix(r.Path, "/apis/"), "/"); len(p) > 0 {
			group = p[0]
		}
		a1[r.Method+" "+group+" (aggregated; counted by the metrics adapter)"]++
	}
	wall := time.Since(t0).Seconds()
	rep := &Report{
		HPAs: m.cfg.HPAs, PerNamespace: m.cfg.PerNamespace, Period: m.cfg.Period.String(), Periods: m.cfg.Periods,
		Jitter: m.cfg.Jitter, ScalerArgs: m.cfg.ScalerArgs, CPUs: runtime.NumCPU(), Wall: wall,
		MachineCores: (m1.busy - m0.busy).Seconds() / wall, Processes: map[string]ProcUsage{},
	}
	for name, b := range p0 {
		a := p1[name]
		rep.Processes[name] = ProcUsage{Cores: float64(a.CPU-b.CPU) / float64(a.At.Sub(b.At)), RSSMiB: float64(a.RSS) / (1 << 20), PeakMiB: float64(a.HWM) / (1 << 20)}
	}
	for k, v := range a1 {
		if r := (v - a0[k]) / wall; r >= 0.05 {
			verb, res, _ := strings.Cut(k, " ")
			rep.APIRequests = append(rep.APIRequests, APIRate{Verb: verb, Resource: res, PerSec: r})
		}
	}
	slices.SortFunc(rep.APIRequests, func(x, y APIRate) int { return cmp.Compare(y.PerSec, x.PerSec) })
	return rep, nil
}

// SyncFigures are what the sync timestamps of the fleet's autoscalers say of a run.
type SyncFigures struct {
	// StaleLimit is how stale an autoscaler may get and still count as synced in a period.
	StaleLimit float64 `json:"stale_limit_seconds"`
	// SyncedShare is, per period, the share of Config.HPAs autoscalers synced within it.
	SyncedShare []float64 `json:"synced_share"`
	// Syncs is the number of syncs in the run after an autoscaler's first; LagP50, LagP99 and
	// LagMax the quantiles of their lags (0 with no syncs).
	Syncs  int     `json:"syncs"`
	LagP50 float64 `json:"lag_p50_seconds"`
	LagP99 float64 `json:"lag_p99_seconds"`
	LagMax float64 `json:"lag_max_seconds"`
}

// AnalyseSyncs computes the per-period shares and the lag from the last-sync timestamps each
// autoscaler reported (syncs: autoscaler -> timestamps in seconds since 1970, in order) over the
// cfg.Periods periods from t0 to end.
//
// An autoscaler counts as synced within period k when it was never staler than period x (1 +
// jitter), plus one tick of the scaler's scheduler (a tenth of the period, at most 1 s: a sync
// is queued at the first tick after it is due), plus -slack (a sync's own duration) at any
// moment of that period. A sync's lag is how much longer than period x (1 + jitter) it came
// after the autoscaler's previous sync (0 when sooner).
func AnalyseSyncs(cfg Config, syncs map[string][]float64, t0, end time.Time) SyncFigures {
	var rep SyncFigures
	p := cfg.Period.Seconds()
	due := p * (1 + cfg.Jitter)
	tick := math.Min(1, math.Max(p/10, 0.01))
	grace := due + tick + cfg.Slack.Seconds()
	start, stop := float64(t0.UnixNano())/1e9, float64(end.UnixNano())/1e9
	rep.StaleLimit = grace
	var lags []float64
	synced := make([]int, cfg.Periods)
	for _, ts := range syncs {
		for j := 1; j < len(ts); j++ {
			if ts[j] > start && ts[j] <= stop {
				lags = append(lags, math.Max(0, ts[j]-ts[j-1]-due))
			}
		}
		for k := range cfg.Periods {
			s, e := start+float64(k)*p, start+float64(k+1)*p
			prev, stale := math.Inf(-1), 0.0
			for _, t := range ts {
				if t <= s {
					prev = t
					continue
				}
				if t > e {
					break
				}
				stale = math.Max(stale, t-prev)
				prev = t
			}
			stale = math.Max(stale, e-prev)
			if stale <= grace {
				synced[k]++
			}
		}
	}
	for _, s := range synced {
		rep.SyncedShare = append(rep.SyncedShare, float64(s)/float64(cfg.HPAs))
	}
	slices.Sort(lags)
	rep.Syncs = len(lags)
	if len(lags) > 0 { // else 0, with Syncs 0
		rep.LagP50, rep.LagP99, rep.LagMax = quantile(lags, 0.5), quantile(lags, 0.99), quantile(lags, 1)
	}
	return rep
}

func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// machine is the whole machine's busy CPU time so far, from /proc/stat.
type machine struct{ busy time.Duration }

func readMachine() (machine, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return machine{}, fmt.Errorf("read /proc/stat: %w", err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 6 || f[0] != "cpu" {
		return machine{}, fmt.Errorf("parse /proc/stat: %q", line)
	}
	var busy int64
	for i, s := range f[1:] {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return machine{}, fmt.Errorf("parse /proc/stat: %q", line)
		}
		if i != 3 && i != 4 && i < 8 { // not idle, iowait, guest
			busy += v
		}
	}
	return machine{busy: time.Duration(busy) * time.Second / 100}, nil
}

// ProcUsage is one process's CPU (cores busy on average over the run) and memory.
type ProcUsage struct {
	Cores   float64 `json:"cores"`
	RSSMiB  float64 `json:"rss_mib"`
	PeakMiB float64 `json:"peak_rss_mib"`
}

// APIRate is kube-apiserver's rate of requests of one verb on one resource.
type APIRate struct {
	Verb     string  `json:"verb"`
	Resource string  `json:"resource"`
	PerSec   float64 `json:"per_sec"`
}

// Report is what a run measured: the settings, the sync figures, the rates, and every
// process's CPU and memory. Its JSON is what -json-out writes.
type Report struct {
	Controller   string  `json:"controller"`
	HPAs         int     `json:"hpas"`
	PerNamespace int     `json:"per_namespace"`
	Period       string  `json:"period"`
	Periods      int     `json:"periods"`
	Jitter       float64 `json:"jitter"`
	ScalerArgs   string  `json:"scaler_args"`
	Took         string  `json:"took"`
	Dir          string  `json:"dir"`
	Wall         float64 `json:"wall_seconds"`
	SyncFigures
	DecisionsPerSec    float64       `json:"decisions_per_sec"`
	SyncsPerSec        float64       `json:"syncs_per_sec"`
	SyncErrorsPerSec   float64       `json:"sync_errors_per_sec"`
	StatusWritesPerSec float64       `json:"status_writes_per_sec"`
	CPUPerSync         time.Duration `json:"cpu_per_sync_ns"`
	// SyncMean is a sync's mean duration; SyncsInFlight how many ran at once on average (the
	// sync time per second of wall): near --workers, the workers are what bounds the rate.
	SyncMean      time.Duration        `json:"sync_mean_ns,omitempty"`
	SyncsInFlight float64              `json:"syncs_in_flight,omitempty"`
	SyncP99       string               `json:"sync_p99_bucket,omitempty"` // the histogram bucket of the 99th percentile
	InTree        *InTreeReport        `json:"in_tree,omitempty"`
	CPUs          int                  `json:"cpus"`
	MachineCores  float64              `json:"machine_cores"`
	Processes     map[string]ProcUsage `json:"processes"`
	APIRequests   []APIRate            `json:"api_requests"`
}

// Write prints r as the text report (what Run prints to stdout).
func (r *Report) Write(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "fleet: %d HPAs (%d per namespace) kept by %s, sync period %s x %d periods, --sync-jitter %g, scaler args %q; the whole run took %s, dir %s\n",
		r.HPAs, r.PerNamespace, r.Controller, r.Period, r.Periods, r.Jitter, r.ScalerArgs, r.Took, r.Dir)
	if r.InTree != nil {
		it := r.InTree
		fmt.Fprintf(&b, "in-tree reconciliations/s %.1f (failed %.2f): %.2f per HPA per period\n", r.SyncsPerSec, r.SyncErrorsPerSec, it.SyncsPerHPAPerPeriod)
		fmt.Fprintf(&b, "a due HPA waited in the work queue: p50 %s, p99 %s; its sync took p50 %s, p99 %s (histogram buckets)\n", it.QueueP50, it.QueueP99, it.WorkP50, it.WorkP99)
		fmt.Fprintf(&b, "CPU per sync: %s (kube-controller-manager, all its controllers)\n", r.CPUPerSync.Round(time.Microsecond))
	} else {
		fmt.Fprintf(&b, "synced within each period (never staler than %.2f s):", r.StaleLimit)
		for _, s := range r.SyncedShare {
			fmt.Fprintf(&b, " %.1f%%", 100*s)
		}
		fmt.Fprintf(&b, "\nsync lag beyond the period: p50 %.2f s, p99 %.2f s, max %.2f s over %d syncs\n", r.LagP50, r.LagP99, r.LagMax, r.Syncs)
		fmt.Fprintf(&b, "decisions/s %.1f; syncs/s ok %.1f, failed %.2f; status writes/s %.2f\n", r.DecisionsPerSec, r.SyncsPerSec, r.SyncErrorsPerSec, r.StatusWritesPerSec)
		fmt.Fprintf(&b, "CPU per sync: %s (hpa-scaler + hpa-recommender)\n", r.CPUPerSync.Round(time.Microsecond))
		fmt.Fprintf(&b, "sync duration: mean %s, p99 %s; %.1f syncs in flight on average (near --workers, the workers bound the rate)\n", r.SyncMean.Round(time.Microsecond), r.SyncP99, r.SyncsInFlight)
	}
	fmt.Fprintf(&b, "machine busy %.2f of %d cores over %.0f s (other users of the machine included)\n", r.MachineCores, r.CPUs, r.Wall)
	names := make([]string, 0, len(r.Processes))
	for n := range r.Processes {
		names = append(names, n)
	}
	slices.Sort(names)
	fmt.Fprintf(&b, "%-46s %6s %8s %9s\n", "process", "cores", "RSS MiB", "peak MiB")
	for _, n := range names {
		p := r.Processes[n]
		fmt.Fprintf(&b, "%-46s %6.3f %8.0f %9.0f\n", n, p.Cores, p.RSSMiB, p.PeakMiB)
	}
	byVerb := map[string]float64{}
	for _, a := range r.APIRequests {
		byVerb[a.Verb] += a.PerSec
	}
	verbs := make([]string, 0, len(byVerb))
	for v := range byVerb {
		verbs = append(verbs, v)
	}
	slices.SortFunc(verbs, func(x, y string) int { return cmp.Compare(byVerb[y], byVerb[x]) })
	b.WriteString("kube-apiserver requests/s by verb (every client: the scaler's, the metrics adapter's pod lists, the controller manager's):")
	for _, v := range verbs {
		fmt.Fprintf(&b, " %s %.1f", v, byVerb[v])
	}
	b.WriteString("\n")
	for _, a := range r.APIRequests {
		fmt.Fprintf(&b, "  %-8s %-50s %8.2f/s\n", a.Verb, a.Resource, a.PerSec)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeJSON(path string, r *Report) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
