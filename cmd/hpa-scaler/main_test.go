package main

import (
	"errors"
	"flag"
	"strings"
	"testing"
)

func TestRunRejectsBadFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"help", []string{"-h"}, ""},
		{"no cluster", []string{"--manifests-dir", "/m"}, "--cluster is required"},
		{"plaintext remote", []string{"--cluster", "c", "--manifests-dir", "/m", "--service-addr", "recommender.example:443"}, "not a loopback address"},
		{"bad log level", []string{"--cluster", "c", "--manifests-dir", "/m", "--log-level", "loud"}, `flag -log-level`},
		{"no cluster outside a cluster", []string{"--cluster", "c", "--manifests-dir", "/m"}, "in-cluster configuration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("KUBERNETES_SERVICE_HOST", "")
			err := run(tc.args)
			if tc.want == "" {
				if !errors.Is(err, flag.ErrHelp) {
					t.Errorf("run = %v, want flag.ErrHelp", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("run = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
