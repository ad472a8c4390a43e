package controlplane

import (
	"context"
	"crypto/tls"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"
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

// KwokReadyAfterAnnotation on a pod (its template) bound to a kwok node: "N" makes it start
// Running and unready, and turn Ready N seconds after its start time (kwok-stages.yaml), as
// a pod whose readiness probe passes late; without it kwok makes the pod Ready at once.
const KwokReadyAfterAnnotation = "hpa-recommender.io/kwok-ready-after-seconds"

// kwokStages are the stages StartKwok adds to kwok's defaults.
//
//go:embed kwok-stages.yaml
var kwokStages []byte

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

	dir        string
	cp         *ControlPlane
	bins       KwokBinaries
	resolution time.Duration
	procs      processes // the kwok controller

	mu            sync.Mutex
	metricsServer *process // nil while stopped (StopMetricsServer)
	stopOnce      sync.Once
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
	stages := filepath.Join(k.dir, "stages.yaml")
	if err := os.WriteFile(stages, kwokStages, 0o600); err != nil {
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
			"--config="+bins.KwokConfig, "--config="+stages,
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

	k.cp, k.bins, k.resolution = cp, bins, opts.MetricResolution
	return k, k.startMetricsServer(ctx)
}

// startMetricsServer starts metrics-server on a free port, registers it as
// v1beta1.metrics.k8s.io and waits until the APIService is Available.
func (k *Kwok) startMetricsServer(ctx context.Context) error {
	cp := k.cp
	pki := filepath.Join(k.dir, "pki")
	if err := os.MkdirAll(pki, 0o700); err != nil {
		return err
	}
	certPEM, keyPEM, err := cp.servingCA.SignServer("metrics-server", "127.0.0.1", "localhost",
		"metrics-server.kube-system.svc", "metrics-server.kube-system.svc.cluster.local")
	if err != nil {
		return err
	}
	certFile, keyFile := filepath.Join(pki, "metrics-server.crt"), filepath.Join(pki, "metrics-server.key")
	if err := writePair(certFile, keyFile, certPEM, keyPEM); err != nil {
		return err
	}
	// kwok's server presents a self-signed certificate, as a kubelet without a serving
	// certificate from the cluster's CA does: hence --kubelet-insecure-tls.
	ms, err := startOnFreePort(func(port int) (*process, error) {
		k.MetricsServerPort = port
		ms, err := startProcess("metrics-server", k.bins.MetricsServer, k.dir,
			"--kubeconfig="+cp.Kubeconfig,
			"--authentication-kubeconfig="+cp.Kubeconfig,
			"--authorization-kubeconfig="+cp.Kubeconfig,
			"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", port),
			"--tls-cert-file="+certFile, "--tls-private-key-file="+keyFile,
			"--kubelet-insecure-tls",
			"--kubelet-use-node-status-port",
			"--kubelet-preferred-address-types=InternalIP",
			"--kubelet-request-timeout=5s",
			"--metric-resolution="+k.resolution.String(),
			"--profiling=false")
		if err != nil {
			return nil, err
		}
		if err := waitHTTP(ctx, ms, caClient(cp), fmt.Sprintf("https://127.0.0.1:%d/livez", port), "", "ok"); err != nil {
			return ms, fmt.Errorf("metrics-server not live: %w", err)
		}
		return ms, nil
	})
	k.mu.Lock()
	k.metricsServer = ms
	k.mu.Unlock()
	if err != nil {
		return err
	}
	// Created anew (the port may have changed): kube-apiserver checks a new APIService at
	// once, where an unchanged one that failed its checks is retried only after a backoff.
	reg := Registration{ServiceNamespace: "kube-system", ServiceName: "metrics-server", Route: RouteExternalName,
		GroupVersions: []schema.GroupVersion{ResourceMetricsGV}}
	return registerAPIServices(ctx, cp.Config, k.MetricsServerPort, cp.servingCA.CertPEM, reg)
}

// StopMetricsServer stops metrics-server, as when its pod is gone, and waits until
// kube-apiserver answers metrics.k8s.io requests 503 ServiceUnavailable (the aggregator
// cannot reach it), what an HPA controller then reads. StartMetricsServer starts it again.
func (k *Kwok) StopMetricsServer(ctx context.Context) error {
	k.stopMetricsServer()
	for {
		err := k.cp.Client.Discovery().RESTClient().Get().AbsPath("/apis", ResourceMetricsGV.Group, ResourceMetricsGV.Version, "pods").Do(ctx).Error()
		if apierrors.IsServiceUnavailable(err) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("controlplane: metrics.k8s.io still answers (%v) with metrics-server stopped: %w", err, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// StartMetricsServer starts metrics-server again after StopMetricsServer and waits until
// metrics.k8s.io is Available. Like any new metrics-server it has no usage to report until
// it has scraped every node twice (two metric resolutions).
func (k *Kwok) StartMetricsServer(ctx context.Context) error {
	k.mu.Lock()
	running := k.metricsServer != nil
	k.mu.Unlock()
	if running {
		return errors.New("controlplane: metrics-server is running")
	}
	if err := k.startMetricsServer(ctx); err != nil {
		return fmt.Errorf("controlplane: metrics-server: %w\n%s", err, k.Logs(4000))
	}
	return nil
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

// KwokNoUsage is the usage (SetKwokPodUsage) that keeps a pod out of metrics.k8s.io:
// metrics-server drops a pod whose container reports no CPU time or no memory working set, as
// a kubelet reports a container that has none yet, so the pod is in no PodMetrics list.
func KwokNoUsage() corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0"), corev1.ResourceMemory: resource.MustParse("0")}
}

// KwokCPU is the CPU usage to set (SetKwokPodUsage) for a pod that metrics.k8s.io should
// show as milli millicores, as the HPA controller reads it (each container's usage rounded up
// to whole millicores): half a millicore less. metrics-server divides the CPU time kwok counts
// by its own scrape interval, a few microseconds a second off kwok's clock, so a whole
// millicore set would read as one more now and then.
func KwokCPU(milli int64) resource.Quantity {
	return *resource.NewScaledQuantity(milli*1000-500, resource.Micro)
}

// WaitPodUsage polls metrics.k8s.io (PodMetrics of namespace) until every pod in want shows
// the CPU and memory want gives it (other pods and resources are not looked at): CPU rounded
// up to millicores, as the HPA controller reads it (see KwokCPU), memory to the byte. A value
// set through kwok's annotations shows after metrics-server's next scrape; a new pod's (or a
// restarted metrics-server's) after two. The error names the pods still off when ctx ends.
func (k *Kwok) WaitPodUsage(ctx context.Context, namespace string, want map[string]corev1.ResourceList) error {
	mc, err := metricsclient.NewForConfig(k.cp.Config)
	if err != nil {
		return err
	}
	for {
		var off []string
		list, err := mc.MetricsV1beta1().PodMetricses(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			off = append(off, err.Error())
		} else {
			got := map[string]corev1.ResourceList{}
			for _, pm := range list.Items {
				sum := corev1.ResourceList{}
				var cpu int64
				for _, c := range pm.Containers {
					cpu += c.Usage.Cpu().MilliValue()
					mem := sum[corev1.ResourceMemory]
					mem.Add(*c.Usage.Memory())
					sum[corev1.ResourceMemory] = mem
				}
				sum[corev1.ResourceCPU] = *resource.NewMilliQuantity(cpu, resource.DecimalSI)
				got[pm.Name] = sum
			}
			for _, pod := range slices.Sorted(maps.Keys(want)) {
				g, ok := got[pod]
				if !ok {
					off = append(off, pod+": no metrics")
					continue
				}
				if w, ok := want[pod][corev1.ResourceCPU]; ok && w.MilliValue() != g.Cpu().MilliValue() {
					off = append(off, fmt.Sprintf("%s: cpu %dm, want %dm", pod, g.Cpu().MilliValue(), w.MilliValue()))
				}
				if w, ok := want[pod][corev1.ResourceMemory]; ok && w.Cmp(g[corev1.ResourceMemory]) != 0 {
					off = append(off, fmt.Sprintf("%s: memory %s, want %s", pod, g.Memory(), &w))
				}
			}
		}
		if len(off) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("controlplane: PodMetrics in %s: %s: %w", namespace, strings.Join(off, "; "), ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Stop stops metrics-server and the kwok controller. Safe to call more than once.
func (k *Kwok) Stop() {
	k.stopOnce.Do(func() {
		k.stopMetricsServer()
		k.procs.stop()
	})
}

// stopMetricsServer stops the metrics-server process, if one runs.
func (k *Kwok) stopMetricsServer() {
	k.mu.Lock()
	ms := k.metricsServer
	k.metricsServer = nil
	k.mu.Unlock()
	ms.stop(5 * time.Second) // nil-safe
}

// Logs is the end (up to maxBytes each) of kwok's and metrics-server's logs.
func (k *Kwok) Logs(maxBytes int) string {
	k.mu.Lock()
	ps := k.procs
	if k.metricsServer != nil {
		ps = append(slices.Clone(ps), k.metricsServer)
	}
	k.mu.Unlock()
	return ps.logs(maxBytes)
}

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
