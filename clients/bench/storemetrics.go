package bench

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// StoreRun is what the service's store did during one run, from its hpa_recommender_store_*
// metrics read before and after (Config.ServerMetrics): how many writes shared a log sync,
// what a commit took and how much of it was the log's write and sync, how busy the commits
// kept the store (commit time per second between the readings, which span the warm-up too:
// near 1, the commits bound the throughput), how many records the checkpoints copied per
// write, and how many targets waited in the log at the end against how many may.
type StoreRun struct {
	Writes               float64       `json:"writes"`
	WritesPerSync        float64       `json:"writes_per_sync"`
	CommitMean           time.Duration `json:"commit_mean"`
	SyncMean             time.Duration `json:"sync_mean"`
	CommitBusy           float64       `json:"commit_busy"`
	CheckpointedPerWrite float64       `json:"checkpointed_per_write"`
	LogTargets           int64         `json:"log_targets"`
	LogTargetsLimit      int64         `json:"log_targets_limit"`
}

// storeMetrics reads the hpa_recommender_store_* values at url (a Prometheus text page);
// empty when the service's store reports none (the memory and etcd stores).
func storeMetrics(ctx context.Context, url string) (map[string]float64, error) {
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
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok || !strings.HasPrefix(name, "hpa_recommender_store_") {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			return nil, fmt.Errorf("read --server-metrics %s: %s: %w", url, name, err)
		}
		out[strings.TrimPrefix(name, "hpa_recommender_store_")] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read --server-metrics %s: %w", url, err)
	}
	return out, nil
}

// storeRun is the run between two readings wall apart; nil when the store reports nothing.
func storeRun(before, after map[string]float64, wall time.Duration) *StoreRun {
	if len(before) == 0 || len(after) == 0 {
		return nil
	}
	d := func(name string) float64 { return after[name] - before[name] }
	r := &StoreRun{
		Writes:          d("commit_writes_total"),
		LogTargets:      int64(after["log_targets"]),
		LogTargetsLimit: int64(after["log_targets_limit"]),
	}
	if c := d("commits_total"); c > 0 {
		r.WritesPerSync = r.Writes / c
		r.CommitMean = time.Duration(d("commit_seconds_total") / c * 1e9)
		r.SyncMean = time.Duration(d("log_sync_seconds_total") / c * 1e9)
	}
	if wall > 0 {
		r.CommitBusy = d("commit_seconds_total") / wall.Seconds()
	}
	if r.Writes > 0 {
		r.CheckpointedPerWrite = d("checkpoint_records_total") / r.Writes
	}
	return r
}
