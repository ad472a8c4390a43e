// Package metricscheck is what the binaries' tests share to check that the metric names the
// alerting rules and the dashboard of deploy/monitoring select are ones a running binary
// exports: deploy/monitoring/metrics.txt lists those names (deploy/monitoring/check keeps it
// equal to what Prometheus's PromQL parser finds in them), Names reads it, and Exported
// parses a scrape of /metrics with the Prometheus client's own text parser.
//
// It is a test kit: only tests import it (internal/archtest).
package metricscheck

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// File is metrics.txt's path from the repository's root.
const File = "deploy/monitoring/metrics.txt"

// Names returns the names listed in root's File for which keep is true.
func Names(root string, keep func(string) bool) ([]string, error) {
	f, err := os.Open(filepath.Join(root, File))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var names []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") || !keep(line) {
			continue
		}
		names = append(names, line)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%s lists no metric this test checks", File)
	}
	return names, nil
}

// Exported returns the names of the series a /metrics body in the text format holds: each
// family's name, and for a histogram its _bucket, _sum and _count series, for a summary its
// _sum and _count, as a query selects them. A family without any series (a vector that has
// no children yet) is not exported: a scrape does not show it.
func Exported(body io.Reader) (map[string]bool, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(body)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for name, mf := range families {
		if len(mf.GetMetric()) == 0 {
			continue
		}
		out[name] = true
		switch mf.GetType() {
		case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
			out[name+"_bucket"], out[name+"_sum"], out[name+"_count"] = true, true, true
		case dto.MetricType_SUMMARY:
			out[name+"_sum"], out[name+"_count"] = true, true
		}
	}
	return out, nil
}

// Scrape GETs url (a /metrics endpoint) and returns Exported of its body.
func Scrape(url string) (map[string]bool, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return Exported(resp.Body)
}

// Missing returns the names that none of the exported sets holds.
func Missing(names []string, exported ...map[string]bool) []string {
	var out []string
	for _, n := range names {
		found := false
		for _, e := range exported {
			found = found || e[n]
		}
		if !found {
			out = append(out, n)
		}
	}
	return out
}
