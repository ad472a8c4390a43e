package bench

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// StoreRun is what the service's store did during one run, from its hpa_recommender_store_*
// metrics read before and after (Config.ServerMetrics; the bbolt store exports them): how
// many writes shared a commit (bbolt's DB.Batch gathers the writes in flight into one
// transaction), what writing and syncing a commit's pages took, that time per write (what
// durability costs a write), and how busy it kept the file (write time per second between the
// readings, which span the warm-up too: near 1, the disk bounds the throughput).
type StoreRun struct {
	Writes          float64       `json:"writes"`
	Commits         float64       `json:"commits"`
	WritesPerCommit float64       `json:"writes_per_commit"`
	CommitWrite     time.Duration `json:"commit_write_ns"`
	WritePerWrite   time.Duration `json:"write_per_write_ns"`
	WriteBusy       float64       `json:"write_busy"`
}

// readServerMetrics reads the --server-metrics page at url (a Prometheus text page): the
// hpa_recommender_store_* values, keyed without that prefix (none when the service's store
// reports none: the memory and etcd stores), and the buckets of Recommend's
// grpc_server_handling_seconds, keyed "recommend_le=" and the bucket's bound.
func readServerMetrics(ctx context.Context, url string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("--server-metrics %q: %w", url, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("read --server-metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("read --server-metrics %s: %s", url, resp.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		name, value := line[:i], line[i+1:]
		key, ok := strings.CutPrefix(name, "hpa_recommender_store_")
		if !ok {
			if key, ok = recommendBucket(name); !ok {
				continue
			}
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			return nil, fmt.Errorf("read --server-metrics %s: %s: %w", url, name, err)
		}
		out[key] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read --server-metrics %s: %w", url, err)
	}
	return out, nil
}

// storeRun is the run between two readings wall apart; nil when the store reports nothing.
func storeRun(before, after map[string]float64, wall time.Duration) *StoreRun {
	_, hadStore := before["commits_total"]
	if _, hasStore := after["commits_total"]; !hadStore || !hasStore {
		return nil
	}
	d := func(name string) float64 { return after[name] - before[name] }
	seconds := d("write_seconds_total")
	r := &StoreRun{Writes: d("commit_writes_total"), Commits: d("commits_total")}
	if r.Commits > 0 {
		r.WritesPerCommit = r.Writes / r.Commits
		r.CommitWrite = time.Duration(seconds / r.Commits * 1e9)
	}
	if r.Writes > 0 {
		r.WritePerWrite = time.Duration(seconds / r.Writes * 1e9)
	}
	if wall > 0 {
		r.WriteBusy = seconds / wall.Seconds()
	}
	return r
}

// recommendBucket returns "recommend_le=" and the bound when name is a bucket of Recommend's
// handling-time histogram, e.g.
// grpc_server_handling_seconds_bucket{grpc_method="Recommend",grpc_service="...",grpc_type="unary",le="0.005"}.
func recommendBucket(name string) (string, bool) {
	labels, ok := strings.CutPrefix(name, "grpc_server_handling_seconds_bucket{")
	if !ok || !strings.Contains(labels, `grpc_method="Recommend"`) {
		return "", false
	}
	_, le, ok := strings.Cut(labels, `le="`)
	if !ok {
		return "", false
	}
	le, _, ok = strings.Cut(le, `"`)
	return "recommend_le=" + le, ok
}

// ServerLatency is how long the service itself took to handle the run's Recommends, from its
// grpc_server_handling_seconds histogram read before and after the run (Config.ServerMetrics;
// the warm-up's calls are included). Unlike the run's own latencies it leaves out the network
// and the generator's lag. The quantiles are interpolated within the histogram's buckets, as
// Prometheus's histogram_quantile does, so they are as fine as the buckets.
type ServerLatency struct {
	Count float64       `json:"count"`
	P50   time.Duration `json:"p50"`
	P99   time.Duration `json:"p99"`
	// Within5ms is the share of the calls handled within 5 ms (-1: the histogram has no 5 ms
	// bound).
	Within5ms float64 `json:"within_5ms"`
}

// serverLatency is the run between two readings; nil when the page has no Recommend
// histogram or no call was handled in between.
func serverLatency(before, after map[string]float64) *ServerLatency {
	type bucket struct{ le, n float64 }
	var bs []bucket
	for k, v := range after {
		le, ok := strings.CutPrefix(k, "recommend_le=")
		if !ok {
			continue
		}
		bound, err := strconv.ParseFloat(le, 64) // "+Inf" parses as +Inf
		if err != nil {
			continue
		}
		bs = append(bs, bucket{bound, v - before[k]})
	}
	slices.SortFunc(bs, func(a, b bucket) int { return cmp.Compare(a.le, b.le) })
	if len(bs) == 0 || bs[len(bs)-1].n <= 0 {
		return nil
	}
	total := bs[len(bs)-1].n
	quantile := func(q float64) time.Duration {
		rank, lo, below := q*total, 0.0, 0.0
		for _, b := range bs {
			if b.n >= rank {
				if math.IsInf(b.le, 1) {
					return time.Duration(lo * 1e9) // beyond the last bound: its value
				}
				frac := 0.0
				if b.n > below {
					frac = (rank - below) / (b.n - below)
				}
				return time.Duration((lo + (b.le-lo)*frac) * 1e9)
			}
			lo, below = b.le, b.n
		}
		return time.Duration(lo * 1e9)
	}
	out := &ServerLatency{Count: total, P50: quantile(0.5), P99: quantile(0.99), Within5ms: -1}
	for _, b := range bs {
		if b.le == 0.005 {
			out.Within5ms = b.n / total
		}
	}
	return out
}
