package controlplane

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/hpa-recommender/hpa-recommender/internal/certgen"
)

// Options configure a control plane. The zero value runs etcd, kube-apiserver and
// kube-controller-manager (every controller but horizontalpodautoscaling).
type Options struct {
	// Dir holds certificates, keys, etcd's data and the logs. Empty: a new temporary
	// directory, removed by Stop (Start uses t.TempDir()).
	Dir string
	// NoControllerManager skips kube-controller-manager: no ReplicaSets, no pods, no default
	// service accounts, /scale status.replicas stays 0.
	NoControllerManager bool
	// EnableAggregatorRouting sets kube-apiserver's --enable-aggregator-routing (route
	// APIServices to endpoint IPs instead of the service's cluster IP or external name).
	// Off, the default, is what makes the loopback metrics adapter reachable.
	EnableAggregatorRouting bool
	// InTreeHPA runs kube-controller-manager's horizontalpodautoscaling controller too (off by
	// default: hpa-scaler takes its place), for a shadow comparison with it or a load run of
	// the in-tree peer; its flags go in ControllerManagerFlags.
	InTreeHPA bool
	// APIServerFlags and ControllerManagerFlags are appended to the generated flags.
	APIServerFlags, ControllerManagerFlags []string
	// StartTimeout bounds the whole start-up. Zero: 2 minutes (race builds on a busy
	// 2-core machine are slow).
	StartTimeout time.Duration
}

// ControlPlane is a running etcd, kube-apiserver and (unless disabled)
// kube-controller-manager on loopback ports.
type ControlPlane struct {
	// Config is an admin (system:masters) client config; TLS is verified against the
	// control plane's own CA. Copy it (rest.CopyConfig) before changing it.
	Config *rest.Config
	// Client is a clientset for Config.
	Client kubernetes.Interface
	// Kubeconfig is the path of an admin kubeconfig file (for kubectl or a child process).
	Kubeconfig string
	// Dir holds the certificates, etcd data and the logs (etcd.log, kube-apiserver.log,
	// kube-controller-manager.log).
	Dir      string
	Binaries Binaries
	// URL is kube-apiserver's https://127.0.0.1:port; EtcdURL etcd's client URL.
	URL, EtcdURL string

	servingCA, frontProxyCA *certgen.CA
	procs                   processes
	removeDir               bool
	stopOnce                sync.Once
}

// Start starts a control plane for a test and stops it in t.Cleanup. It fails the test
// (naming `make kube-binaries`) when the binaries are missing; on a failed test the
// cleanup logs the end of each component's log.
func Start(t testing.TB, opts Options) *ControlPlane {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	return startForTest(t, func() (*ControlPlane, error) { return StartControlPlane(opts) })
}

// startForTest starts what start returns for t: it fails t when start fails, and stops it in
// t.Cleanup, logging the end of its logs first when t failed.
func startForTest[T interface {
	Logs(maxBytes int) string
	Stop()
}](t testing.TB, start func() (T, error)) T {
	t.Helper()
	v, err := start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(v.Logs(4000))
		}
		v.Stop()
	})
	return v
}

// StartControlPlane is Start without a testing.TB (e.g. from TestMain); call Stop.
//
// Its ports are picked free just before etcd and kube-apiserver bind them, so another process
// may take one in between. When a component exits because its address is in use, the whole
// control plane is started again on new ports (in a new directory under opts.Dir), up to
// three times in all.
func StartControlPlane(opts Options) (*ControlPlane, error) {
	const attempts = 3
	dir := opts.Dir
	for attempt := 1; ; attempt++ {
		cp, err := startControlPlane(opts)
		if err == nil || attempt == attempts || !portTaken(err) {
			return cp, err
		}
		if dir != "" {
			opts.Dir = filepath.Join(dir, fmt.Sprintf("retry-%d", attempt))
		}
	}
}

// portTaken reports whether a start failed because a component exited with its address taken.
func portTaken(err error) bool {
	return errors.Is(err, errExited) && strings.Contains(err.Error(), "address already in use")
}

// pickPorts picks the control plane's ports (tests replace it to hand out a taken one).
var pickPorts = freePorts

func startControlPlane(opts Options) (cp *ControlPlane, err error) {
	bins, err := FindBinaries()
	if err != nil {
		return nil, err
	}
	timeout := opts.StartTimeout
	if timeout == 0 {
		timeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()

	cp = &ControlPlane{Binaries: bins, Dir: opts.Dir}
	if cp.Dir == "" {
		if cp.Dir, err = os.MkdirTemp("", "kubetest-"); err != nil {
			return nil, err
		}
		cp.removeDir = true
	}
	defer func() {
		if err != nil {
			logs := cp.Logs(4000)
			cp.Stop()
			err = fmt.Errorf("controlplane: %w\n%s", err, logs)
		}
	}()

	// Certificates: one CA for serving (kube-apiserver, metrics adapters), one for the
	// aggregator's front proxy (request-header authentication).
	certs := filepath.Join(cp.Dir, "pki")
	if err := os.MkdirAll(certs, 0o700); err != nil {
		return cp, err
	}
	f := func(name string) string { return filepath.Join(certs, name) }
	if cp.servingCA, err = certgen.NewCA("kubetest-ca"); err != nil {
		return cp, err
	}
	if cp.frontProxyCA, err = certgen.NewCA("kubetest-front-proxy-ca"); err != nil {
		return cp, err
	}
	if err := os.WriteFile(f("ca.crt"), cp.servingCA.CertPEM, 0o600); err != nil {
		return cp, err
	}
	if err := os.WriteFile(f("front-proxy-ca.crt"), cp.frontProxyCA.CertPEM, 0o600); err != nil {
		return cp, err
	}
	servingCert, servingKey, err := cp.servingCA.SignServer("kube-apiserver", "127.0.0.1", "localhost", "10.0.0.1",
		"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local")
	if err != nil {
		return cp, err
	}
	if err := writePair(f("apiserver.crt"), f("apiserver.key"), servingCert, servingKey); err != nil {
		return cp, err
	}
	proxyCert, proxyKey, err := cp.frontProxyCA.SignClient(FrontProxyClientName)
	if err != nil {
		return cp, err
	}
	if err := writePair(f("front-proxy-client.crt"), f("front-proxy-client.key"), proxyCert, proxyKey); err != nil {
		return cp, err
	}
	if err := writeServiceAccountKeys(f("sa.key"), f("sa.pub")); err != nil {
		return cp, err
	}
	token := randomToken()
	if err := os.WriteFile(f("tokens.csv"), []byte(token+`,kubetest-admin,kubetest-admin-uid,"system:masters"`+"\n"), 0o600); err != nil {
		return cp, err
	}

	ports, err := pickPorts(3)
	if err != nil {
		return cp, err
	}
	etcdPeer := "http://" + hostPort(ports[1])
	cp.EtcdURL = "http://" + hostPort(ports[0])
	cp.URL = "https://" + hostPort(ports[2])

	etcd, err := startProcess("etcd", bins.Etcd, cp.Dir,
		"--name=kubetest", "--data-dir="+filepath.Join(cp.Dir, "etcd"),
		"--listen-client-urls="+cp.EtcdURL, "--advertise-client-urls="+cp.EtcdURL,
		"--listen-peer-urls="+etcdPeer, "--initial-advertise-peer-urls="+etcdPeer,
		"--initial-cluster=kubetest="+etcdPeer, "--unsafe-no-fsync", "--log-level=warn")
	if err != nil {
		return cp, err
	}
	cp.procs = append(cp.procs, etcd)
	if err := waitHTTP(ctx, etcd, http.DefaultClient, cp.EtcdURL+"/health", "", `"health":"true"`); err != nil {
		return cp, fmt.Errorf("etcd not healthy: %w", err)
	}

	apiArgs := []string{
		"--etcd-servers=" + cp.EtcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", ports[2]),
		"--cert-dir=" + filepath.Join(cp.Dir, "apiserver-certs"),
		"--tls-cert-file=" + f("apiserver.crt"), "--tls-private-key-file=" + f("apiserver.key"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + f("sa.pub"), "--service-account-signing-key-file=" + f("sa.key"),
		"--token-auth-file=" + f("tokens.csv"),
		"--authorization-mode=RBAC",
		"--service-cluster-ip-range=10.0.0.0/24",
		"--endpoint-reconciler-type=none",
		// The aggregation layer: kube-apiserver proxies APIService requests with the
		// front-proxy client certificate and X-Remote-* headers.
		"--requestheader-client-ca-file=" + f("front-proxy-ca.crt"),
		"--requestheader-allowed-names=" + FrontProxyClientName,
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + f("front-proxy-client.crt"),
		"--proxy-client-key-file=" + f("front-proxy-client.key"),
		fmt.Sprintf("--enable-aggregator-routing=%t", opts.EnableAggregatorRouting),
		"--profiling=false",
	}
	api, err := startProcess("kube-apiserver", bins.APIServer, cp.Dir, append(apiArgs, opts.APIServerFlags...)...)
	if err != nil {
		return cp, err
	}
	cp.procs = append(cp.procs, api)

	cp.Config = &rest.Config{
		Host:            cp.URL,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: cp.servingCA.CertPEM},
		QPS:             100,
		Burst:           200,
	}
	tlsTransport, err := rest.TransportFor(cp.Config)
	if err != nil {
		return cp, err
	}
	if err := waitHTTP(ctx, api, &http.Client{Transport: tlsTransport, Timeout: 5 * time.Second}, cp.URL+"/readyz", "", "ok"); err != nil {
		return cp, fmt.Errorf("kube-apiserver not ready: %w", err)
	}
	if cp.Client, err = kubernetes.NewForConfig(cp.Config); err != nil {
		return cp, err
	}
	cp.Kubeconfig = filepath.Join(cp.Dir, "admin.kubeconfig")
	if err := writeKubeconfig(cp.Kubeconfig, cp.Config); err != nil {
		return cp, err
	}

	if !opts.NoControllerManager {
		controllers := "--controllers=*,-horizontalpodautoscaling"
		if opts.InTreeHPA {
			controllers = "--controllers=*"
		}
		kcmArgs := []string{
			"--kubeconfig=" + cp.Kubeconfig,
			"--authentication-kubeconfig=" + cp.Kubeconfig,
			"--authorization-kubeconfig=" + cp.Kubeconfig,
			controllers,
			"--leader-elect=false",
			"--bind-address=127.0.0.1", "--secure-port=0",
			"--service-account-private-key-file=" + f("sa.key"),
			"--root-ca-file=" + f("ca.crt"),
			"--use-service-account-credentials=false",
			"--profiling=false",
		}
		kcm, err := startProcess("kube-controller-manager", bins.ControllerManager, cp.Dir, append(kcmArgs, opts.ControllerManagerFlags...)...)
		if err != nil {
			return cp, err
		}
		cp.procs = append(cp.procs, kcm)
		// The service account controller creating default/default shows the controllers run
		// (and pods can be created: the ServiceAccount admission plugin needs it).
		if err := waitFor(ctx, kcm, func(ctx context.Context) (bool, error) {
			_, err := cp.Client.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			return err == nil, err
		}); err != nil {
			return cp, fmt.Errorf("kube-controller-manager: no default service account: %w", err)
		}
	}
	return cp, nil
}

// FrontProxyClientName is the common name of kube-apiserver's aggregator client
// certificate (--requestheader-allowed-names).
const FrontProxyClientName = "front-proxy-client"

// Stop stops kube-controller-manager, kube-apiserver and etcd (SIGTERM, then SIGKILL) and
// removes Dir when StartControlPlane created it. Safe to call more than once.
func (cp *ControlPlane) Stop() {
	cp.stopOnce.Do(func() {
		cp.procs.stop()
		if cp.removeDir {
			os.RemoveAll(cp.Dir)
		}
	})
}

// PIDs are the components' process ids by name (etcd, kube-apiserver,
// kube-controller-manager), for a load run that reads their CPU time.
func (cp *ControlPlane) PIDs() map[string]int {
	m := map[string]int{}
	for _, p := range cp.procs {
		if p.cmd.Process != nil {
			m[p.name] = p.cmd.Process.Pid
		}
	}
	return m
}

// Logs is the end (up to maxBytes each) of every component's log.
func (cp *ControlPlane) Logs(maxBytes int) string { return cp.procs.logs(maxBytes) }

// ServiceAccountConfig creates (if missing) the service account namespace/name and returns
// a client config authenticating as it with a fresh token (TokenRequest, 1 hour), as an
// in-cluster client would. Grant it RBAC roles to test permissions.
func (cp *ControlPlane) ServiceAccountConfig(ctx context.Context, namespace, name string) (*rest.Config, error) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
	if _, err := cp.Client.CoreV1().ServiceAccounts(namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	exp := int64(3600)
	tr, err := cp.Client.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	cfg := rest.AnonymousClientConfig(cp.Config)
	cfg.BearerToken = tr.Status.Token
	return cfg, nil
}

// CAPEM is the PEM CA certificate that signed kube-apiserver's serving certificate.
func (cp *ControlPlane) CAPEM() []byte { return cp.servingCA.CertPEM }

func writeKubeconfig(path string, cfg *rest.Config) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["kubetest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts["kubetest"] = &clientcmdapi.Context{Cluster: "kubetest", AuthInfo: "admin", Namespace: "default"}
	kc.CurrentContext = "kubetest"
	return clientcmd.WriteToFile(*kc, path)
}

// waitHTTP polls url until it answers 200 with a body containing want. Each request has 5 s:
// a listener that never answers (another process on the port) must not hold the poll, which
// also watches for p's exit.
func waitHTTP(ctx context.Context, p *process, c *http.Client, url, token, want string) error {
	return waitFor(ctx, p, func(ctx context.Context) (bool, error) {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := c.Do(req)
		if err != nil {
			return false, nil
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode == http.StatusOK && strings.Contains(string(body), want), nil
	})
}

// waitFor polls cond every 100 ms until it is true, it fails, ctx ends or p exits.
func waitFor(ctx context.Context, p *process, cond func(context.Context) (bool, error)) error {
	var lastErr error
	for {
		if p != nil {
			if done, err := p.exited(); done {
				return fmt.Errorf("%s %w (%v)", p.name, errExited, err)
			}
		}
		ok, err := cond(ctx)
		if ok {
			return nil
		}
		if err != nil {
			lastErr = err
		}
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), lastErr)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func randomToken() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}
