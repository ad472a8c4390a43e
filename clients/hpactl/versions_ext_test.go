package hpactl_test

import (
	"strings"
	"testing"
)

// toleranceHPA scales on an External metric of 1 per pod with a scale-up tolerance of 0.5:
// Kubernetes 1.34 ignores the tolerance (HPAConfigurableTolerance is off there), 1.35 and later
// honour it (kubernetes/kubernetes#133128).
const toleranceHPA = `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: consumer, namespace: jobs}
spec:
  minReplicas: 1
  maxReplicas: 30
  metrics:
  - type: External
    external:
      metric: {name: queue_depth}
      target: {type: AverageValue, averageValue: 1}
  behavior:
    scaleUp: {tolerance: 500m}
`

// TestSimulateTwoVersions replays one trace under 1.34 and 1.38, locally and on a server: at
// 4 replicas, a demand of 5.2 (ratio 1.3) scales 1.34 to 6 and leaves 1.38 at 4.
func TestSimulateTwoVersions(t *testing.T) {
	hpa := writeFile(t, "hpa.yaml", toleranceHPA)
	trace := writeFile(t, "load.csv", "time,demand\n0,5200m\n15,5200m\n")
	addr := startServer(t)
	for _, where := range []struct {
		name string
		addr string
		args []string
	}{{"local", "", []string{"--local"}}, {"server", addr, nil}} {
		t.Run(where.name, func(t *testing.T) {
			args := append([]string{"simulate", "-f", hpa, "--trace", trace, "--initial-replicas", "4", "--kubernetes-version", "1.34,1.38"}, where.args...)
			r := run(t, where.addr, args...)
			mustOK(t, r)
			lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
			if len(lines) != 3 {
				t.Fatalf("want a header and 2 rows, got:\n%s", r.stdout)
			}
			if h := squash(lines[0]); !strings.HasPrefix(h, "TIME DEMAND 1.34 CURRENT 1.34 DESIRED 1.38 CURRENT 1.38 DESIRED DIFFERS") {
				t.Errorf("header %q", h)
			}
			if row := squash(lines[1]); !strings.HasPrefix(row, "0s 5200m 4 6 4 4 *") {
				t.Errorf("first row %q, want 1.34 at 4 -> 6 and 1.38 holding 4, marked as differing", row)
			}
		})
	}
}

func TestKubernetesVersionFlagErrors(t *testing.T) {
	hpa := writeFile(t, "hpa.yaml", toleranceHPA)
	trace := writeFile(t, "load.csv", "time,demand\n0,5200m\n")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"three releases", []string{"--kubernetes-version", "1.34,1.36,1.38"}, "at most 2 releases"},
		{"unsupported release", []string{"--kubernetes-version", "1.33"}, "supported are 1.34 to 1.38"},
		{"unsupported among two", []string{"--kubernetes-version", "1.34,1.40"}, "supported are 1.34 to 1.38"},
		{"two with json", []string{"--kubernetes-version", "1.34,1.38", "-o", "json"}, "take one --kubernetes-version"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"simulate", "-f", hpa, "--trace", trace, "--local"}, tc.args...)
			r := run(t, "", args...)
			if r.code == 0 || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want a failure saying %q", r.code, r.stderr, tc.want)
			}
		})
	}
}

// TestRecommendKubernetesVersion: recommend's --kubernetes-version reaches the decision.
func TestRecommendKubernetesVersion(t *testing.T) {
	hpa := writeFile(t, "hpa.yaml", toleranceHPA)
	obs := writeFile(t, "obs.json", `{"currentReplicas": 4, "metrics": [{"values": ["5200m"]}]}`)
	for v, want := range map[string]int32{"1.34": 6, "1.38": 4} {
		r := run(t, "", "recommend", "-f", hpa, "--observations", obs, "--local", "--kubernetes-version", v, "-o", "json")
		mustOK(t, r)
		if got := decodeRecommend(t, r.stdout).GetDesiredReplicas(); got != want {
			t.Errorf("Kubernetes %s: desired %d, want %d", v, got, want)
		}
	}
}
