package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

// TestRetiredBoltFlagsStartWithAWarning: the flags that tuned the bbolt store's cache and log
// are still accepted, on the command line or in the environment; the binary serves, and its log
// warns about each one set, by name, and about no other.
func TestRetiredBoltFlagsStartWithAWarning(t *testing.T) {
	warns := func(log, flag string) bool {
		for _, line := range strings.Split(log, "\n") {
			if strings.Contains(line, "level=WARN") && strings.Contains(line, "flag=--"+flag+" ") && strings.Contains(line, "retired flag") {
				return true
			}
		}
		return false
	}
	cases := []struct {
		name       string
		args, env  []string
		warnCached bool
		warnLog    bool
	}{
		{name: "none"},
		{name: "both flags", args: []string{"--bolt-cached-targets", "5000", "--bolt-log-targets", "8"}, warnCached: true, warnLog: true},
		{name: "environment", env: []string{"HPA_RECOMMENDER_BOLT_LOG_TARGETS=100"}, warnLog: true},
		{name: "flag and environment", args: []string{"--bolt-cached-targets=-1"}, env: []string{"HPA_RECOMMENDER_BOLT_CACHED_TARGETS=7"}, warnCached: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, kv := range tc.env {
				k, v, _ := strings.Cut(kv, "=")
				t.Setenv(k, v)
			}
			db := filepath.Join(t.TempDir(), "hpa.db")
			p := startBinary(t, append([]string{"--store", "bolt", "--bolt-path", db}, tc.args...)...)
			cl := pb.NewRecommenderServiceClient(dial(t, p.addr))
			if _, err := cl.Recommend(t.Context(), request(t, 2, "20")); err != nil {
				t.Fatal(err)
			}
			p.term(t)
			log := p.stderr.String()
			if got := warns(log, "bolt-cached-targets"); got != tc.warnCached {
				t.Errorf("warns about --bolt-cached-targets: %v, want %v; log:\n%s", got, tc.warnCached, log)
			}
			if got := warns(log, "bolt-log-targets"); got != tc.warnLog {
				t.Errorf("warns about --bolt-log-targets: %v, want %v; log:\n%s", got, tc.warnLog, log)
			}
			if _, err := os.Stat(db + ".wal"); !os.IsNotExist(err) {
				t.Errorf("a write-ahead log beside the file (%v)", err)
			}
		})
	}
}
