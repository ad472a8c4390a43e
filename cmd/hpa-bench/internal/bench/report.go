package bench

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Row is the median of the repeats of one configuration against one server, with the
// service's figures over the baseline's when both ran.
type Row struct {
	Server      string        `json:"server"`
	Mode        string        `json:"mode"`
	Concurrency int           `json:"concurrency,omitempty"`
	Rate        float64       `json:"rate,omitempty"`
	Repeats     int           `json:"repeats"`
	Throughput  float64       `json:"throughput"`
	P50         time.Duration `json:"p50_ns"`
	P90         time.Duration `json:"p90_ns"`
	P99         time.Duration `json:"p99_ns"`
	Max         time.Duration `json:"max_ns"`
	Errors      int           `json:"errors"` // summed over repeats
	ScaledPct   float64       `json:"scaled_pct"`
	ServerCores float64       `json:"server_cores,omitempty"`
	ServerCPU   time.Duration `json:"server_cpu_per_call_ns,omitempty"`
	ServerRSS   int64         `json:"server_rss_bytes,omitempty"`
	// StoreCores, StoreCPU and StoreRSS are the store's processes' (Config.StorePIDs), summed.
	StoreCores  float64       `json:"store_cores,omitempty"`
	StoreCPU    time.Duration `json:"store_cpu_per_call_ns,omitempty"`
	StoreRSS    int64         `json:"store_rss_bytes,omitempty"`
	ClientCores float64       `json:"client_cores"`
	// LagP99 is, in open loop, the 99th percentile of how late calls started after they were
	// due: the generator's own part of P99.
	LagP99 time.Duration `json:"lag_p99_ns,omitempty"`
	// Store is the medians of the runs' Result.Store (nil without Config.ServerMetrics or a
	// store that reports nothing).
	Store *StoreRun `json:"store,omitempty"`
	// ServerLatency is the medians of the runs' Result.ServerLatency (nil without
	// Config.ServerMetrics).
	ServerLatency *ServerLatency `json:"server_latency,omitempty"`
	// Ratios (service over baseline of the same configuration); zero on baseline rows.
	ThroughputRatio float64 `json:"throughput_ratio,omitempty"`
	P50Ratio        float64 `json:"p50_ratio,omitempty"`
	P99Ratio        float64 `json:"p99_ratio,omitempty"`
}

func median[T cmp.Ordered](v []T) T {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s) == 0 {
		var zero T
		return zero
	}
	return s[len(s)/2]
}

func summarize(runs []Result) []Row {
	type key struct {
		server, mode string
		conc         int
		rate         float64
	}
	var order []key
	groups := map[key][]Result{}
	for _, r := range runs {
		k := key{r.Server, r.Mode, r.Concurrency, r.Rate}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	var rows []Row
	for _, k := range order {
		g := groups[k]
		pick := func(f func(Result) float64) float64 {
			v := make([]float64, len(g))
			for i, r := range g {
				v[i] = f(r)
			}
			return median(v)
		}
		dur := func(f func(Result) time.Duration) time.Duration {
			return time.Duration(pick(func(r Result) float64 { return float64(f(r)) }))
		}
		row := Row{
			Server: k.server, Mode: k.mode, Concurrency: k.conc, Rate: k.rate, Repeats: len(g),
			Throughput:  pick(func(r Result) float64 { return r.Throughput }),
			P50:         dur(func(r Result) time.Duration { return r.Recommend.P50 }),
			P90:         dur(func(r Result) time.Duration { return r.Recommend.P90 }),
			P99:         dur(func(r Result) time.Duration { return r.Recommend.P99 }),
			Max:         dur(func(r Result) time.Duration { return r.Recommend.Max }),
			ClientCores: pick(func(r Result) float64 { return r.Client.Cores }),
			LagP99:      dur(func(r Result) time.Duration { return r.Lag.P99 }),
			ScaledPct: pick(func(r Result) float64 {
				return 100 * float64(r.Scaled) / float64(max(r.Recommend.Count, 1))
			}),
		}
		for _, r := range g {
			row.Errors += r.Recommend.Errors + r.ReportScale.Errors
		}
		if g[0].ServerUsage != nil {
			row.ServerCores = pick(func(r Result) float64 { return r.ServerUsage.Cores })
			row.ServerCPU = dur(func(r Result) time.Duration { return r.ServerUsage.CPUPerCall })
			row.ServerRSS = int64(pick(func(r Result) float64 { return float64(r.ServerUsage.RSS) }))
		}
		if !slices.ContainsFunc(g, func(r Result) bool { return r.StoreUsage == nil }) {
			row.StoreCores = pick(func(r Result) float64 { return r.StoreUsage.Cores })
			row.StoreCPU = dur(func(r Result) time.Duration { return r.StoreUsage.CPUPerCall })
			row.StoreRSS = int64(pick(func(r Result) float64 { return float64(r.StoreUsage.RSS) }))
		}
		if !slices.ContainsFunc(g, func(r Result) bool { return r.ServerLatency == nil }) {
			row.ServerLatency = &ServerLatency{
				Count:     pick(func(r Result) float64 { return r.ServerLatency.Count }),
				P50:       dur(func(r Result) time.Duration { return r.ServerLatency.P50 }),
				P99:       dur(func(r Result) time.Duration { return r.ServerLatency.P99 }),
				Within5ms: pick(func(r Result) float64 { return r.ServerLatency.Within5ms }),
			}
		}
		if !slices.ContainsFunc(g, func(r Result) bool { return r.Store == nil }) {
			row.Store = &StoreRun{
				Writes:          pick(func(r Result) float64 { return r.Store.Writes }),
				Commits:         pick(func(r Result) float64 { return r.Store.Commits }),
				WritesPerCommit: pick(func(r Result) float64 { return r.Store.WritesPerCommit }),
				CommitWrite:     dur(func(r Result) time.Duration { return r.Store.CommitWrite }),
				WritePerWrite:   dur(func(r Result) time.Duration { return r.Store.WritePerWrite }),
				WriteBusy:       pick(func(r Result) float64 { return r.Store.WriteBusy }),
			}
		}
		rows = append(rows, row)
	}
	for i := range rows {
		r := &rows[i]
		if r.Server != "service" {
			continue
		}
		for _, b := range rows {
			if b.Server == "baseline" && b.Mode == r.Mode && b.Concurrency == r.Concurrency && b.Rate == r.Rate {
				r.ThroughputRatio = ratio(r.Throughput, b.Throughput)
				r.P50Ratio = ratio(float64(r.P50), float64(b.P50))
				r.P99Ratio = ratio(float64(r.P99), float64(b.P99))
			}
		}
	}
	return rows
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func param(r *Result) string { return loadName(r.Mode, r.Concurrency, r.Rate) }

// loadName is a run's load as the table writes it: "c=64" in closed loop, "rate=2000" in open.
func loadName(mode string, conc int, rate float64) string {
	if mode == "open" {
		return "rate=" + strconv.FormatFloat(rate, 'f', -1, 64)
	}
	return "c=" + strconv.Itoa(conc)
}

func ms(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', 2, 64) + "ms" }

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteTable writes the summary as an aligned text table (Markdown-compatible).
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', tabwriter.Debug)
	specs := "a spec per target"
	switch {
	case r.Config.SharedSpec:
		specs = "one spec shared by all"
	case r.Config.DistinctSpecs:
		specs = "a distinct spec per target"
	}
	conns := fmt.Sprintf("%d conn(s)", r.Config.Conns)
	if n := len(r.Config.addrs()); n > 1 {
		route := "each target's calls to one"
		if r.Config.Spread {
			route = "each target's calls spread over them"
		}
		conns = fmt.Sprintf("%d replicas (%s), %d conn(s) to each, their srv columns summed", n, route, r.Config.Conns)
	}
	fmt.Fprintf(w, "targets %d (%s), %s, warm-up %s, %s per run, %d repeat(s) (medians); load average %s -> %s\n",
		r.Config.Targets, specs, conns, r.Config.Warmup, r.Config.Duration, r.Config.Repeat, r.LoadAvg, r.LoadAvgAt)
	switch {
	case r.Config.Baseline && len(r.Config.NoopCommand) > 0:
		fmt.Fprintln(w, "baseline: a no-op server in a process of its own (its srv columns are that process's)")
	case r.Config.Baseline:
		fmt.Fprintln(w, "baseline: a no-op server in the generator's own process")
	}
	if p := r.Populated; p != nil {
		fmt.Fprintf(w, "populate: %d targets in %s (%d errors)", p.Targets, p.Elapsed.Round(time.Millisecond), p.Errors)
		if p.RSSEnd > 0 {
			fmt.Fprintf(w, "; server RSS %.1f -> %.1f MiB (%.0f B/target)", mib(p.RSSStart), mib(p.RSSEnd), p.RSSPerTarget)
		}
		if p.FileBytes > 0 {
			fmt.Fprintf(w, "; store file %.1f MiB (%.0f B/target)", mib(p.FileBytes), p.FilePerTgt)
		}
		fmt.Fprintln(w)
	}
	if d := r.Disk; d != nil {
		fmt.Fprintf(w, "disk before the load: %s\n", d)
	}
	if d := r.DiskBusy; d != nil {
		fmt.Fprintf(w, "disk before the load, every CPU busy: %s\n", d)
	}
	if l := r.Loopback; l != nil {
		fmt.Fprintf(w, "loopback before the load: %s\n", l)
	}
	fmt.Fprintln(tw, "server\tload\trecommend/s\tp50\tp90\tp99\tmax\terrors\tscaled\tsrv cores\tsrv cpu/call\tsrv RSS\tgen cores\tgen lag p99\tx base rps\tx base p99\t")
	for _, row := range r.Summary {
		load := loadName(row.Mode, row.Concurrency, row.Rate)
		srv := [3]string{"-", "-", "-"}
		if row.ServerRSS > 0 {
			srv = [3]string{fmt.Sprintf("%.2f", row.ServerCores), fmt.Sprintf("%.0fµs", float64(row.ServerCPU)/1e3), fmt.Sprintf("%.0fMiB", mib(row.ServerRSS))}
		}
		rat := [2]string{"", ""}
		if row.ThroughputRatio > 0 {
			rat = [2]string{fmt.Sprintf("%.2f", row.ThroughputRatio), fmt.Sprintf("%.2f", row.P99Ratio)}
		}
		lag := "-"
		if row.Mode == "open" {
			lag = ms(row.LagP99)
		}
		fmt.Fprintf(tw, "%s\t%s\t%.0f\t%s\t%s\t%s\t%s\t%d\t%.1f%%\t%s\t%s\t%s\t%.2f\t%s\t%s\t%s\t\n",
			row.Server, load, row.Throughput, ms(row.P50), ms(row.P90), ms(row.P99), ms(row.Max), row.Errors, row.ScaledPct,
			srv[0], srv[1], srv[2], row.ClientCores, lag, rat[0], rat[1])
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, row := range r.Summary {
		if st := row.Store; st != nil {
			fmt.Fprintf(w, "store during %s %s: %.1f writes per commit, a commit's write and sync %s, %.0fµs per write, writing %.0f%% of the time\n",
				row.Server, loadName(row.Mode, row.Concurrency, row.Rate), st.WritesPerCommit, ms(st.CommitWrite), float64(st.WritePerWrite)/1e3, 100*st.WriteBusy)
		}
	}
	for _, row := range r.Summary {
		if row.StoreRSS == 0 {
			continue
		}
		fmt.Fprintf(w, "store processes (%s) during %s %s: %.2f cores, %.0fµs per call, RSS %.0fMiB",
			pidList(r.Config.StorePIDs), row.Server, loadName(row.Mode, row.Concurrency, row.Rate), row.StoreCores, float64(row.StoreCPU)/1e3, mib(row.StoreRSS))
		if row.ServerRSS > 0 {
			fmt.Fprintf(w, "; with the service's, %.2f cores and %.0fµs per call", row.ServerCores+row.StoreCores, float64(row.ServerCPU+row.StoreCPU)/1e3)
		}
		fmt.Fprintln(w)
	}
	for _, row := range r.Summary {
		if sl := row.ServerLatency; sl != nil {
			within := ""
			if sl.Within5ms >= 0 {
				within = fmt.Sprintf(", %.1f%% within 5ms", 100*sl.Within5ms)
			}
			fmt.Fprintf(w, "server during %s %s: Recommend handled in p50 %s p99 %s%s (its handling-time histogram, %.0f calls with the warm-up's)\n",
				row.Server, loadName(row.Mode, row.Concurrency, row.Rate), ms(sl.P50), ms(sl.P99), within, sl.Count)
		}
	}
	for _, run := range r.Runs {
		if h := run.Hostile; h != nil {
			fmt.Fprintf(w, "hostile alongside %s %s rep %d: sent malformed/huge/oversize/abandoned/slow %v, %d unexpected outcomes; server fds %d -> %d, threads %d -> %d\n",
				run.Mode, param(&run), run.Repeat, h.Sent, h.Unexpected, h.FDsBefore, h.FDsAfter, h.ThreadsBefore, h.ThreadsAfter)
		}
	}
	return nil
}

// pidList is pids as the table writes them: "pid 12" or "pids 12, 13, 14".
func pidList(pids []int) string {
	s := make([]string, len(pids))
	for i, p := range pids {
		s[i] = strconv.Itoa(p)
	}
	if len(s) == 1 {
		return "pid " + s[0]
	}
	return "pids " + strings.Join(s, ", ")
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }
