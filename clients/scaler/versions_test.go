package scaler

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

// apiServerVersion serves /version as an API server of that release would, to a real
// discovery client.
func apiServerVersion(t *testing.T, info version.Info) discovery.ServerVersionInterface {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/version" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(info)
	}))
	t.Cleanup(srv.Close)
	d, err := discovery.NewDiscoveryClientForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestResolveKubernetesVersion(t *testing.T) {
	for _, tc := range []struct {
		name    string
		flag    string
		info    version.Info
		want    string
		wantErr string
	}{
		{name: "explicit release", flag: "1.35", want: "1.35"},
		{name: "service default", flag: "", want: ""},
		{name: "auto, a managed cluster's minor", flag: "auto", info: version.Info{Major: "1", Minor: "36+", GitVersion: "v1.36.3-gke.100"}, want: "1.36"},
		{name: "auto", flag: "auto", info: version.Info{Major: "1", Minor: "34", GitVersion: "v1.34.4"}, want: "1.34"},
		{name: "auto, unsupported", flag: "auto", info: version.Info{Major: "1", Minor: "33", GitVersion: "v1.33.9"}, wantErr: "the API server is v1.33.9: unsupported Kubernetes version \"1.33\": supported are 1.34 to 1.38"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ResolveKubernetesVersion(tc.flag, apiServerVersion(t, tc.info))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ResolveKubernetesVersion = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestValidateKubernetesVersionFlag(t *testing.T) {
	for _, v := range []string{"", "auto", "1.34", "1.38"} {
		if err := validKubernetesVersion(v); err != nil {
			t.Errorf("%q: %v", v, err)
		}
	}
	for _, v := range []string{"1.33", "1.39", "latest", "v1.35"} {
		if err := validKubernetesVersion(v); err == nil || !strings.Contains(err.Error(), "supported are 1.34 to 1.38") {
			t.Errorf("%q: %v, want an error naming the range", v, err)
		}
	}
}
