package envflag_test

import (
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/hpa-recommender/hpa-recommender/internal/envflag"
)

func TestApplyPrecedence(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	listen := fs.String("listen", "default", "")
	store := fs.String("store", "default", "")
	ttl := fs.Duration("target-ttl", time.Hour, "")
	other := fs.String("other", "default", "")
	if err := fs.Parse([]string{"--listen", "flag"}); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"P_LISTEN": "env", "P_STORE": "env", "P_TARGET_TTL": "2m"}
	if err := envflag.Apply(fs, "P_", func(k string) (string, bool) { v, ok := env[k]; return v, ok }); err != nil {
		t.Fatal(err)
	}
	if *listen != "flag" || *store != "env" || *ttl != 2*time.Minute || *other != "default" {
		t.Errorf("got listen=%q store=%q ttl=%v other=%q; want flag, env, 2m, default", *listen, *store, *ttl, *other)
	}
}

func TestApplyNamesEveryBadVariable(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.Duration("target-ttl", time.Hour, "")
	fs.Int("max-pods", 1, "")
	env := map[string]string{"P_TARGET_TTL": "soon", "P_MAX_PODS": "many"}
	err := envflag.Apply(fs, "P_", func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err == nil || !strings.Contains(err.Error(), "P_TARGET_TTL") || !strings.Contains(err.Error(), "P_MAX_PODS") {
		t.Errorf("got %v, want an error naming P_TARGET_TTL and P_MAX_PODS", err)
	}
}

func TestParseFlagsThenEnvironment(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(new(strings.Builder))
	a := fs.String("a", "default", "")
	b := fs.String("b", "default", "")
	env := map[string]string{"P_A": "env", "P_B": "env"}
	if err := envflag.Parse(fs, "P_", "x [flags]", []string{"-a", "flag"}, func(k string) (string, bool) { v, ok := env[k]; return v, ok }); err != nil {
		t.Fatal(err)
	}
	if *a != "flag" || *b != "env" {
		t.Errorf("got a=%q b=%q, want flag and env", *a, *b)
	}
	var usage strings.Builder
	fs.SetOutput(&usage)
	fs.Usage()
	if !strings.Contains(usage.String(), "Usage: x [flags]") || !strings.Contains(usage.String(), "P_<FLAG>") {
		t.Errorf("usage %q lacks the synopsis or the environment rule", usage.String())
	}
}
