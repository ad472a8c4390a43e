package controlplane

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// The versions the Makefile builds (KWOK_VERSION, METRICS_SERVER_VERSION).
const (
	KwokVersion          = "v0.8.0"
	MetricsServerVersion = "v0.8.0"
)

// Pod annotations kwok's usage-from-annotation ClusterResourceUsage reads: the CPU (a quantity
// such as "250m", in cores) and memory working set ("64Mi") each container of the pod uses.
const (
	KwokUsageCPUAnnotation    = "kwok.x-k8s.io/usage-cpu"
	KwokUsageMemoryAnnotation = "kwok.x-k8s.io/usage-memory"
)

// KwokBinaries are the paths of the kwok controller, its configuration (kwok's default stages,
// its /metrics/resource emulation and usage from annotations) and metrics-server.
type KwokBinaries struct {
	Kwok, KwokConfig, MetricsServer string
}

// FindKwokBinaries locates what `make kwok-binaries` builds: the kwok controller at $KWOK_BIN
// (else $HOME/.cache/hpa-recommender/kwok-v0.8.0/kwok) with kwok.yaml beside it, and
// metrics-server at $METRICS_SERVER_BIN (else .../metrics-server-v0.8.0/metrics-server). The
// error names the make target to run when one is missing.
func FindKwokBinaries() (KwokBinaries, error) {
	home, _ := os.UserHomeDir()
	cache := filepath.Join(home, ".cache", "hpa-recommender")
	b := KwokBinaries{Kwok: os.Getenv("KWOK_BIN"), MetricsServer: os.Getenv("METRICS_SERVER_BIN")}
	if b.Kwok == "" {
		b.Kwok = filepath.Join(cache, "kwok-"+KwokVersion, "kwok")
	}
	if b.MetricsServer == "" {
		b.MetricsServer = filepath.Join(cache, "metrics-server-"+MetricsServerVersion, "metrics-server")
	}
	b.KwokConfig = filepath.Join(filepath.Dir(b.Kwok), "kwok.yaml")
	for _, p := range []string{b.Kwok, b.KwokConfig, b.MetricsServer} {
		if st, err := os.Stat(p); err != nil || st.IsDir() {
			return b, fmt.Errorf("controlplane: %s is missing: run `make kwok-binaries` "+
				"(or `make e2e`, which builds them first), or point KWOK_BIN / METRICS_SERVER_BIN at existing binaries", p)
		}
	}
	return b, nil
}

// KwokOptions configure StartKwok.
type KwokOptions struct {
	// Nodes is how many fake nodes to register (kwok-node-0, kwok-node-1, ...). Zero: 1.
	Nodes int
	// MetricResolution is metrics-server's --metric-resolution, how often it scrapes the
	// nodes (at least 10 s, metrics-server's minimum). Zero: 10 s.
	MetricResolution time.Duration
	// StartTimeout bounds the start-up, up to metrics.k8s.io being Available. Zero: 2 minutes.
	StartTimeout time.Duration
}

// Kwok is a running kwok controller simulating fake nodes (and the pods bound to them) for a
// control plane, and the real metrics-server scraping their emulated kubelet resource metrics,
// registered as the APIService v1beta1.metrics.k8s.io.
type Kwok struct {
	// Nodes are the fake nodes' names; a pod whose spec.nodeName is one of them is moved
	// through its phases by kwok, and its usage (KwokUsageCPUAnnotation,
	// KwokUsageMemoryAnnotation) reaches metrics.k8s.io through metrics-server.
	Nodes []string
	// KubeletPort is the port of kwok's server on 127.0.0.1 (every node's kubelet endpoint);
	// MetricsServerPort metrics-server's.
	KubeletPort, MetricsServerPort int

	dir      string
	procs    processes
	stopOnce sync.Once
}

// ResourceMetricsAPIService is the APIService StartKwok gives to metrics-server (replacing a
// MetricsAdapter's registration of it).
var ResourceMetricsAPIService = APIServiceName(ResourceMetricsGV)

// kwokNodeAnnotation marks the nodes the kwok controller manages (its
// --manage-nodes-with-annotation-selector), as kwokctl marks its nodes.
const kwokNodeAnnotation = "kwok.x-k8s.io/node"

// StartKwok starts the kwok controller and metrics-server for cp and stops them in
// t.Cleanup (logging the end of their logs when t failed). Start it after any
// StartMetricsAdapter: it takes over v1beta1.metrics.k8s.io from the adapter, which keeps
// the custom and external metrics APIs.
func StartKwok(t testing.TB, cp *ControlPlane, opts KwokOptions) *Kwok {
	t.Helper()
	return startForTest(t, func() (*Kwok, error) { return StartKwokFor(cp, opts) })
}

// StartKwokFor is StartKwok without a testing.TB; call Stop.
func StartKwokFor(cp *ControlPlane, opts KwokOptions) (k *Kwok, err error) {
	bins, err := FindKwokBinaries()
	if err != nil {
		return nil, err
	}
	if opts.Nodes == 0 {
		opts.Nodes = 1
	}
	if opts.MetricResolution == 0 {
		opts.MetricResolution = 10 * time.Second
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), opts.StartTimeout)
	defer cancel()

	k = &Kwok{dir: filepath.Join(cp.Dir, "kwok")}
	defer func() {
		if err != nil {
			err = fmt.Errorf("controlplane: kwok: %w\n%s", err, k.Logs(4000))
			k.Stop()
		}
	}()
	if err := os.MkdirAll(k.dir, 0o700); err != nil {
		return k, err
	}
	// The nodes first: kwok's node-initialize stage fills in their status (Ready, the
	// InternalIP 127.0.0.1 and kubelet port of --node-ip / --node-port), and metrics-server
	// reads each node's metrics from the path in its resource-metrics-path annotation, where
	// kwok's metrics-resource Metric serves that node's /metrics/resource.
	for i := range opts.Nodes {
		name := fmt.Sprintf("kwok-node-%d", i)
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Annotations: map[string]string{
				kwokNodeAnnotation:                     "fake",
				"metrics.k8s.io/resource-metrics-path": "/metrics/nodes/" + name + "/metrics/resource",
			},
			Labels: map[string]string{"type": "kwok", corev1.LabelHostname: name, corev1.LabelOSStable: "linux"},
		}}
		if _, err := cp.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return k, fmt.Errorf("create node %s: %w", name, err)
		}
		k.Nodes = append(k.Nodes, name)
	}

	// HOME in kwok's directory: kwok also loads ~/.kwok/kwok.yaml when it exists. A node
	// is initialized (its kubelet port set) only by a kwok that bound its port, so a kwok
	// that found its port taken is simply started again on another.
	kwok, err := startOnFreePort(func(port int) (*process, error) {
		k.KubeletPort = port
		kwok, err := startProcessEnv("kwok", bins.Kwok, k.dir, []string{"HOME=" + k.dir},
			"--kubeconfig="+cp.Kubeconfig,
			"--config="+bins.KwokConfig,
			"--manage-nodes-with-annotation-selector="+kwokNodeAnnotation+"=fake",
			"--node-ip=127.0.0.1", fmt.Sprintf("--node-port=%d", port),
			"--server-address="+hostPort(port),
			"--cidr=10.244.0.0/16",
			"--node-lease-duration-seconds=40")
		if err != nil {
			return nil, err
		}
		for _, name := range k.Nodes {
			if err := waitFor(ctx, kwok, func(ctx context.Context) (bool, error) {
				n, err := cp.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return false, err
				}
				return nodeReady(n), nil
			}); err != nil {
				return kwok, fmt.Errorf("node %s not Ready: %w", name, err)
			}
		}
		return kwok, nil
	})
	if kwok != nil {
		k.procs = append(k.procs, kwok)
	}
	if err != nil {
		return k, err
	}

	pki := filepath.Join(k.dir, "pki")
	if err := os.MkdirAll(pki, 0o700); err != nil {
		return k, err
	}
	certPEM, keyPEM, err := cp.servingCA.SignServer("metrics-server", "127.0.0.1", "localhost",
		"metrics-server.kube-system.svc", "metrics-server.kube-system.svc.cluster.local")
	if err != nil {
		return k, err
	}
	certFile, keyFile := filepath.Join(pki, "metrics-server.crt"), filepath.Join(pki, "metrics-server.key")
	if err := writePair(certFile, keyFile, certPEM, keyPEM); err != nil {
		return k, err
	}
	// kwok's server presents a self-signed certificate, as a kubelet without a serving
	// certificate from the cluster's CA does: hence --kubelet-insecure-tls.
	ms, err := startOnFreePort(func(port int) (*process, error) {
		k.MetricsServerPort = port
		ms, err := startProcess("metrics-server", bins.MetricsServer, k.dir,
			"--kubeconfig="+cp.Kubeconfig,
			"--authentication-kubeconfig="+cp.Kubeconfig,
			"--authorization-kubeconfig="+cp.Kubeconfig,
			"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", port),
			"--tls-cert-file="+certFile, "--tls-private-key-file="+keyFile,
			"--kubelet-insecure-tls",
			"--kubelet-use-node-status-port",
			"--kubelet-preferred-address-types=InternalIP",
			"--kubelet-request-timeout=5s",
			"--metric-resolution="+opts.MetricResolution.String(),
			"--profiling=false")
		if err != nil {
			return nil, err
		}
		if err := waitHTTP(ctx, ms, caClient(cp), fmt.Sprintf("https://127.0.0.1:%d/livez", port), "", "ok"); err != nil {
			return ms, fmt.Errorf("metrics-server not live: %w", err)
		}
		return ms, nil
	})
	if ms != nil {
		k.procs = append(k.procs, ms)
	}
	if err != nil {
		return k, err
	}
	reg := Registration{ServiceNamespace: "kube-system", ServiceName: "metrics-server", Route: RouteExternalName,
		GroupVersions: []schema.GroupVersion{ResourceMetricsGV}}
	if err := registerAPIServices(ctx, cp.Config, k.MetricsServerPort, cp.servingCA.CertPEM, reg); err != nil {
		return k, err
	}
	return k, nil
}

// caClient is an HTTPS client trusting cp's CA, for metrics-server's health.
func caClient(cp *ControlPlane) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: cp.servingCA.Pool(), MinVersion: tls.VersionTLS12}
	return &http.Client{Transport: tr, Timeout: 5 * time.Second}
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// SetKwokPodUsage sets the CPU and memory each container of the pod uses (kwok's usage
// annotations; a resource missing from usage is left as it is). metrics-server reports them
// from its next scrapes on.
func SetKwokPodUsage(ctx context.Context, cs kubernetes.Interface, namespace, pod string, usage corev1.ResourceList) error {
	ann := map[string]string{}
	if q, ok := usage[corev1.ResourceCPU]; ok {
		ann[KwokUsageCPUAnnotation] = q.String()
	}
	if q, ok := usage[corev1.ResourceMemory]; ok {
		ann[KwokUsageMemoryAnnotation] = q.String()
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": ann}})
	if err != nil {
		return err
	}
	_, err = cs.CoreV1().Pods(namespace).Patch(ctx, pod, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

// Stop stops metrics-server and the kwok controller. Safe to call more than once.
func (k *Kwok) Stop() { k.stopOnce.Do(k.procs.stop) }

// Logs is the end (up to maxBytes each) of kwok's and metrics-server's logs.
func (k *Kwok) Logs(maxBytes int) string { return k.procs.logs(maxBytes) }

// startOnFreePort starts a process on a port picked free just before (start waits until it
// serves), and when the process exits because another took the port in between, starts it
// again on another, up to three times in all. It returns the last process started (nil when
// none was) and its error.
func startOnFreePort(start func(port int) (*process, error)) (*process, error) {
	const attempts = 3
	for attempt := 1; ; attempt++ {
		ports, err := pickPorts(1)
		if err != nil {
			return nil, err
		}
		p, err := start(ports[0])
		if err == nil || attempt == attempts || p == nil || !errors.Is(err, errExited) ||
			!strings.Contains(p.tail(4000), "address already in use") {
			return p, err
		}
		p.stop(time.Second)
	}
}
