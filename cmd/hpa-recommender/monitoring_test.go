package main_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hpa-recommender/hpa-recommender/internal/testkit/metricscheck"
)

// TestMonitoringMetricsAreExported: every metric of the service that deploy/monitoring's
// alerting rules and dashboard select (metrics.txt) is on the running binary's /metrics, with
// the bbolt store or the etcd store, before any call: an alert on a name the binary does not
// export never fires. The scaler's names (hpa_scaler_) are checked by hpa-scaler's e2e test
// against its running binary; `up` is the one Prometheus writes for every scrape itself.
func TestMonitoringMetricsAreExported(t *testing.T) {
	names, err := metricscheck.Names("../..", func(n string) bool {
		return !strings.HasPrefix(n, "hpa_scaler_") && n != "up"
	})
	if err != nil {
		t.Fatal(err)
	}
	bolt := startBinary(t, "--store", "bolt", "--bolt-path", filepath.Join(t.TempDir(), "hpa.db"), "--metrics-listen", "127.0.0.1:0")
	etcd := startBinary(t, "--store", "etcd", "--etcd-endpoints", sharedEtcd(t), "--etcd-prefix", fmt.Sprintf("/monitoring-%d", time.Now().UnixNano()),
		"--metrics-listen", "127.0.0.1:0")
	var scrapes []map[string]bool
	for _, p := range []*process{bolt, etcd} {
		got, err := metricscheck.Scrape("http://" + p.metrics + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		scrapes = append(scrapes, got)
	}
	if missing := metricscheck.Missing(names, scrapes...); len(missing) > 0 {
		t.Errorf("deploy/monitoring selects metrics hpa-recommender does not export: %v", missing)
	}
	// Each store's own metrics, where they belong.
	for _, c := range []struct {
		name string
		got  map[string]bool
		want string
	}{
		{"bolt", scrapes[0], "hpa_recommender_store_commits_total"},
		{"etcd", scrapes[1], "hpa_recommender_store_compactions_total"},
		{"bolt", scrapes[0], "hpa_recommender_store_errors_total"},
		{"etcd", scrapes[1], "hpa_recommender_store_up"},
	} {
		if !c.got[c.want] {
			t.Errorf("the %s store's binary does not export %s", c.name, c.want)
		}
	}
}
