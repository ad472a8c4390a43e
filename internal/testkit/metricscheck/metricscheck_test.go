package metricscheck

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

// TestExported: a histogram's series names are exported, a vector without children is not.
func TestExported(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "x_seconds", Help: "h"})
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "x_total", Help: "c"}, []string{"result"})
	lazy := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lazy_total", Help: "l"}, []string{"result"})
	reg.MustRegister(h, c, lazy)
	c.WithLabelValues("ok")
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Exported(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for n := range got {
		names = append(names, n)
	}
	slices.Sort(names)
	want := []string{"x_seconds", "x_seconds_bucket", "x_seconds_count", "x_seconds_sum", "x_total"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("Exported (-want +got):\n%s", diff)
	}
	if m := Missing([]string{"x_total", "lazy_total", "x_seconds_bucket"}, got); !slices.Equal(m, []string{"lazy_total"}) {
		t.Errorf("Missing = %v, want [lazy_total]", m)
	}
}

// TestNamesReadsTheRepositoryList: the repository's list parses and holds names of both
// binaries.
func TestNamesReadsTheRepositoryList(t *testing.T) {
	all, err := Names("../../..", func(string) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"grpc_server_handled_total", "hpa_recommender_store_up", "hpa_scaler_syncs_total"} {
		if !slices.Contains(all, want) {
			t.Errorf("%s lacks %s: %v", File, want, all)
		}
	}
}
