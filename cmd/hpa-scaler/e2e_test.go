//go:build e2e

package main

// The real hpa-scaler binary against a real control plane (internal/controlplane), pods on a
// kwok node whose CPU the real metrics-server reports, and an in-process hpa-recommender on
// loopback: flags, kubeconfig, leader election, /readyz and /metrics (with every scaler metric
// deploy/monitoring uses), a scale-up, and a clean exit on SIGTERM that releases the Lease.

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hpa-recommender/hpa-recommender/internal/controlplane"
	"github.com/hpa-recommender/hpa-recommender/internal/syncbuf"
	"github.com/hpa-recommender/hpa-recommender/internal/testkit/metricscheck"
	"github.com/hpa-recommender/hpa-recommender/server"
	"github.com/hpa-recommender/hpa-recommender/server/servertest"
)

// syncBuffer is an io.Writer safe for the child's output and the test's reads.
type syncBuffer = syncbuf.Buffer

// servingHTTP finds the address the binary's http listener bound, in its log.
var servingHTTP = regexp.MustCompile(`msg="serving http" listen=(\S+)`)

func TestBinaryScalesADeployment(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "hpa-scaler")
	if out, err := exec.Command("go", "build", "-race", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	cp := controlplane.Start(t, controlplane.Options{})
	k := controlplane.StartKwok(t, cp, controlplane.KwokOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// The service.
	serviceAddr, _ := servertest.Start(t, server.DefaultConfig(), server.Deps{})

	// A Deployment of 2 pods on the kwok node, each using 100m of its 100m request: at a 50%
	// target it wants 4, its maxReplicas.
	const ns = "bin"
	cs := cp.Client
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	two := int32(2)
	lbl := map[string]string{"app": "web"}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &two, Selector: &metav1.LabelSelector{MatchLabels: lbl},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: lbl, Annotations: map[string]string{controlplane.KwokUsageCPUAnnotation: "100m"}},
				Spec: corev1.PodSpec{NodeName: k.Nodes[0], Containers: []corev1.Container{{
					Name: "app", Image: "registry.example/web:1",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
				}}},
			},
		},
	}
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	manifests := filepath.Join(dir, "manifests")
	if err := os.Mkdir(manifests, 0o755); err != nil {
		t.Fatal(err)
	}
	hpa := `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: bin}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 4
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}
`
	if err := os.WriteFile(filepath.Join(manifests, "hpa.yaml"), []byte(hpa), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin,
		"--kubeconfig", cp.Kubeconfig,
		"--manifests-dir", manifests,
		"--service-addr", serviceAddr,
		// Port 0, read back from the log: a port picked free beforehand may be taken by the
		// time the binary binds it.
		"--http-listen", "127.0.0.1:0",
		"--sync-period", "1s",
		"--leader-election-namespace", "default",
		"--identity", "bin-test",
		"--cpu-initialization-period", "0s",
		"--initial-readiness-delay", "0s",
	)
	cmd.Env = append(os.Environ(), "HPA_SCALER_CLUSTER=e2e") // the environment sets what no flag does
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		if t.Failed() {
			t.Logf("hpa-scaler output:\n%s", out.String())
		}
	})

	var httpAddr string // from the log, below
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + httpAddr + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	poll := func(what string, cond func() bool) {
		t.Helper()
		for !cond() {
			select {
			case err := <-exited:
				t.Fatalf("hpa-scaler exited while waiting for %s: %v", what, err)
			case <-ctx.Done():
				t.Fatalf("timed out waiting for %s", what)
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	poll("the http listener", func() bool {
		m := servingHTTP.FindStringSubmatch(out.String())
		if m != nil {
			httpAddr = m[1]
		}
		return m != nil
	})
	poll("/readyz", func() bool { code, _ := get("/readyz"); return code == http.StatusOK })
	poll("the scale-up to 4", func() bool {
		sc, err := cs.AppsV1().Deployments(ns).GetScale(ctx, "web", metav1.GetOptions{})
		return err == nil && sc.Spec.Replicas == 4
	})
	_, metrics := get("/metrics")
	for _, want := range []string{
		`hpa_scaler_scale_writes_total{mode="service",result="success"} 1`,
		`hpa_scaler_leader 1`,
		`hpa_scaler_autoscalers 1`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	// Every scaler metric deploy/monitoring's alerting rules and dashboard select is exported
	// by the running binary once it has synced (an alert on a name it lacks never fires).
	names, err := metricscheck.Names("../..", func(n string) bool { return strings.HasPrefix(n, "hpa_scaler_") })
	if err != nil {
		t.Fatal(err)
	}
	exported, err := metricscheck.Exported(strings.NewReader(metrics))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	if missing := metricscheck.Missing(names, exported); len(missing) > 0 {
		t.Errorf("deploy/monitoring selects metrics hpa-scaler does not export: %v", missing)
	}
	lease, err := cs.CoordinationV1().Leases("default").Get(ctx, "hpa-scaler", metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != "bin-test" {
		t.Errorf("lease = %+v, %v; want held by bin-test", lease, err)
	}

	// SIGTERM: a clean exit that releases the Lease for a standby.
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("exit after SIGTERM: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("hpa-scaler did not exit after SIGTERM")
	}
	lease, err = cs.CoordinationV1().Leases("default").Get(ctx, "hpa-scaler", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h := lease.Spec.HolderIdentity; h != nil && *h != "" {
		t.Errorf("lease holder after exit = %q, want released", *h)
	}
	if !strings.Contains(out.String(), "hpa-scaler started") {
		t.Errorf("no start-up line in the output:\n%s", out.String())
	}
}
