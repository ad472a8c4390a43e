package server_test

import (
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hpa-recommender/hpa-recommender/server"
)

// TestRetiredFlagStillAccepted: --cached-specs, which only tuned the spec cache since removed,
// is still accepted for one release, from the command line or the environment, with its value
// checked as before; a server configured with it warns at start-up naming it.
func TestRetiredFlagStillAccepted(t *testing.T) {
	parse := func(args []string, env map[string]string) (server.Config, error) {
		cfg := server.DefaultConfig()
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		cfg.RegisterFlags(fs)
		if err := fs.Parse(args); err != nil {
			return cfg, err
		}
		err := server.ApplyEnv(fs, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
		return cfg, err
	}
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
	}{
		{"flag", []string{"--cached-specs", "8192"}, nil},
		{"environment", nil, map[string]string{"HPA_RECOMMENDER_CACHED_SPECS": "-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := parse(tc.args, tc.env)
			if err != nil {
				t.Fatal(err)
			}
			if len(cfg.Retired) != 1 || cfg.Retired[0].Name != "cached-specs" {
				t.Fatalf("Retired %+v, want cached-specs", cfg.Retired)
			}
			if err := cfg.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
		})
	}
	if cfg, err := parse(nil, nil); err != nil || len(cfg.Retired) != 0 {
		t.Errorf("without the flag: Retired %+v, error %v; want none", cfg.Retired, err)
	}
	if _, err := parse([]string{"--cached-specs", "lots"}, nil); err == nil {
		t.Error("--cached-specs lots parsed; want the error it always gave")
	}

	_, logs := startAuthServer(t, func(c *server.Config) {
		c.Retired = []server.RetiredFlag{{Name: "cached-specs", Why: "the server keeps no cache of converted specs"}}
	})
	var warned []string
	for line := range strings.Lines(logs.String()) {
		if strings.Contains(line, "retired flag") {
			warned = append(warned, strings.TrimSpace(line))
		}
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "level=WARN") || !strings.Contains(warned[0], "flag=--cached-specs") {
		t.Errorf("start-up log's retired-flag lines:\n%s\nwant one warning naming --cached-specs", cmp.Diff(nil, warned))
	}
}
