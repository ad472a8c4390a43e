package controlplane

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// PrometheusVersion is the Prometheus release the Makefile builds (PROMETHEUS_VERSION, from
// tools/prometheus); the default cache directory is keyed by it.
const PrometheusVersion = "v3.16.0"

// FindPrometheus locates the prometheus binary `make prometheus` builds: $PROMETHEUS_BIN, else
// $HOME/.cache/hpa-recommender/prometheus-v3.16.0/prometheus. The error names the make target.
func FindPrometheus() (string, error) {
	p := os.Getenv("PROMETHEUS_BIN")
	if p == "" {
		home, _ := os.UserHomeDir()
		p = filepath.Join(home, ".cache", "hpa-recommender", "prometheus-"+PrometheusVersion, "prometheus")
	}
	if st, err := os.Stat(p); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		return p, fmt.Errorf("controlplane: %s is missing or not executable: run `make prometheus` "+
			"(or `make e2e`, which builds it first; a few minutes on a cold Go cache), or point PROMETHEUS_BIN at one", p)
	}
	return p, nil
}

// Prometheus is a real Prometheus server on a loopback port, scraping the targets it was
// started with.
type Prometheus struct {
	// URL is its HTTP API's base, http://127.0.0.1:port.
	URL string
	// Dir holds its configuration, its TSDB and prometheus.log.
	Dir  string
	proc *process
}

// PrometheusOptions configure StartPrometheusServer.
type PrometheusOptions struct {
	// Targets are the host:port addresses scraped (path /metrics), in one job named "test".
	Targets []string
	// ScrapeInterval is how often they are scraped (default 1s).
	ScrapeInterval time.Duration
	// Dir is where its files go (required).
	Dir string
}

// StartPrometheus starts a Prometheus for a test and stops it in t.Cleanup (logging the end of
// its log when the test failed).
func StartPrometheus(t testing.TB, opts PrometheusOptions) *Prometheus {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	p, err := StartPrometheusServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(p.proc.tail(4000))
		}
		p.Stop()
	})
	return p
}

// StartPrometheusServer is StartPrometheus without a testing.TB; call Stop. It returns once
// Prometheus reports ready, retrying on new ports (up to three times) when its port was taken.
func StartPrometheusServer(opts PrometheusOptions) (*Prometheus, error) {
	bin, err := FindPrometheus()
	if err != nil {
		return nil, err
	}
	if opts.ScrapeInterval <= 0 {
		opts.ScrapeInterval = time.Second
	}
	targets := make([]string, len(opts.Targets))
	for i, t := range opts.Targets {
		targets[i] = strconv.Quote(t)
	}
	// YAML is a superset of JSON: quoted strings need no YAML escaping of their own.
	conf := fmt.Sprintf("global:\n  scrape_interval: %s\n  evaluation_interval: %s\nscrape_configs:\n- job_name: test\n  static_configs:\n  - targets: [%s]\n",
		opts.ScrapeInterval, opts.ScrapeInterval, strings.Join(targets, ", "))
	for attempt := 1; ; attempt++ {
		dir := filepath.Join(opts.Dir, fmt.Sprintf("prometheus-%d", attempt))
		p, err := startPrometheus(bin, dir, conf)
		if err == nil || attempt == 3 || !portTaken(err) {
			return p, err
		}
	}
}

func startPrometheus(bin, dir, conf string) (*Prometheus, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	confPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		return nil, err
	}
	ports, err := freePorts(1)
	if err != nil {
		return nil, err
	}
	addr := hostPort(ports[0])
	proc, err := startProcess("prometheus", bin, dir,
		"--config.file="+confPath,
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr,
		"--log.level=warn",
	)
	if err != nil {
		return nil, err
	}
	p := &Prometheus{URL: "http://" + addr, Dir: dir, proc: proc}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := waitHTTP(ctx, proc, http.DefaultClient, p.URL+"/-/ready", "", ""); err != nil {
		tail := proc.tail(2000)
		p.Stop()
		return nil, fmt.Errorf("prometheus did not become ready: %w\n%s", err, tail)
	}
	return p, nil
}

// Stop stops Prometheus (SIGTERM, then SIGKILL after 10 s).
func (p *Prometheus) Stop() { p.proc.stop(10 * time.Second) }

// Log is the end of prometheus.log.
func (p *Prometheus) Log(maxBytes int) string { return p.proc.tail(maxBytes) }
