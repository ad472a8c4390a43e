package fleet

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/hpa-recommender/hpa-recommender/internal/controlplane"
)

// child is a started binary whose output goes to a log file.
type child struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
}

func startChild(name, dir, bin string, args ...string) (*child, error) {
	logPath := filepath.Join(dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	c := &child{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		f.Close()
		close(c.done)
	}()
	return c, nil
}

func (c *child) exited() error {
	select {
	case <-c.done:
		return fmt.Errorf("%s exited: %v (log %s)", c.name, c.err, c.log)
	default:
		return nil
	}
}

// stop sends SIGTERM, then kills after grace.
func (c *child) stop(grace time.Duration) {
	if c.exited() != nil {
		return
	}
	_ = c.cmd.Process.Signal(os.Interrupt)
	select {
	case <-c.done:
	case <-time.After(grace):
		_ = c.cmd.Process.Kill()
		<-c.done
	}
}

// waitLog waits for re to match c's log and returns its first submatch.
func (c *child) waitLog(ctx context.Context, re *regexp.Regexp) (string, error) {
	for {
		b, err := os.ReadFile(c.log)
		if err != nil {
			return "", err
		}
		if m := re.FindSubmatch(b); m != nil {
			return string(m[1]), nil
		}
		if err := c.exited(); err != nil {
			return "", err
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("%s: waiting for %q in its log: %w", c.name, re, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

var servingHTTP = regexp.MustCompile(`msg="serving http" listen=(\S+)`)

// Run starts the control plane, creates the fleet, starts the service and the scaler (or leaves
// the fleet to the in-tree controller), measures cfg.Periods periods and prints the report to
// stdout (and to cfg.JSONOut), with its progress to progress. It stops everything it started
// before it returns, and removes the directory it made unless cfg.Dir named one.
func Run(ctx context.Context, cfg Config, stdout, progress io.Writer) (err error) {
	dir := cfg.Dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "hpa-bench-fleet-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	inTree := cfg.Controller == ControllerInTree
	if !inTree {
		for _, b := range []string{cfg.ServiceBin, cfg.ScalerBin} {
			if _, err := os.Stat(b); err != nil {
				return fmt.Errorf("binary: %w (build it: cmd/hpa-bench/scripts/fleet.sh does)", err)
			}
		}
	}
	start := time.Now()
	// The controller manager creates every ReplicaSet and pod of the fleet: its default
	// client rate (20/s) would take minutes for thousands of pods.
	kcmFlags := []string{"--kube-api-qps=500", "--kube-api-burst=1000"}
	kcmMetrics := ""
	if inTree {
		addr, err := freeAddr()
		if err != nil {
			return err
		}
		_, port, _ := net.SplitHostPort(addr)
		kcmMetrics = "https://" + addr + "/metrics"
		// As hpa-scaler is run: the same period, no CPU initialization period or readiness
		// delay; /metrics served for its reconciliation and work queue figures.
		kcmFlags = append(kcmFlags, "--secure-port="+port,
			"--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
			"--horizontal-pod-autoscaler-sync-period="+cfg.Period.String(),
			"--horizontal-pod-autoscaler-cpu-initialization-period=0s",
			"--horizontal-pod-autoscaler-initial-readiness-delay=0s")
	}
	cp, err := controlplane.StartControlPlane(controlplane.Options{
		Dir: filepath.Join(dir, "control-plane"), InTreeHPA: inTree, ControllerManagerFlags: kcmFlags,
	})
	if err != nil {
		return fmt.Errorf("control plane: %w", err)
	}
	defer cp.Stop()
	fmt.Fprintf(progress, "fleet: control plane up in %s (%s)\n", time.Since(start).Round(time.Millisecond), cp.Dir)

	// The tool's and the metrics adapter's client: the adapter lists the pods of every pod
	// metrics request, so its rate limit must not be the fleet's (cp.Client's 100/s was: it
	// capped every controller at ~166 syncs/s).
	fast := rest.CopyConfig(cp.Config)
	fast.QPS, fast.Burst = 5000, 10000
	fast.ContentType = "application/vnd.kubernetes.protobuf"
	cs, err := kubernetes.NewForConfig(fast)
	if err != nil {
		return err
	}
	adapter, err := controlplane.NewMetricsAdapterFor(cp, cs)
	if err != nil {
		return fmt.Errorf("metrics adapter: %w", err)
	}
	defer adapter.Close()
	adapter.ListPodsFromCache()
	regCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	err = adapter.Register(regCtx, cp, controlplane.DefaultRegistration)
	cancel()
	if err != nil {
		return fmt.Errorf("register the metrics adapter: %w", err)
	}

	setupCtx, cancelSetup := context.WithTimeout(ctx, cfg.SetupTimeout)
	defer cancelSetup()
	ms := fleetMembers(cfg.HPAs, cfg.PerNamespace)
	if err := createFleet(setupCtx, cs, adapter, ms, progress); err != nil {
		return fmt.Errorf("create the fleet: %w", err)
	}

	if inTree {
		m := &measurement{
			cfg: cfg, api: cs.Discovery().RESTClient(), pids: map[string]int{"fleet (this tool, with the metrics adapter)": os.Getpid()},
			adapter: adapter, progress: progress, kcmURL: kcmMetrics,
			client: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}, //nolint:gosec // the controller manager's self-signed loopback certificate
		}
		for name, pid := range cp.PIDs() {
			m.pids[name] = pid
		}
		rep, err := m.runInTree(ctx, setupCtx)
		if err != nil {
			return err
		}
		return finish(cfg, rep, start, dir, stdout)
	}
	svcAddr, err := freeAddr()
	if err != nil {
		return err
	}
	svc, err := startChild("hpa-recommender", dir, cfg.ServiceBin,
		"--listen", svcAddr, "--store", "bolt", "--bolt-path", filepath.Join(dir, "service", "hpa-recommender.db"), "--metrics-listen", "")
	if err != nil {
		return err
	}
	defer svc.stop(10 * time.Second)
	scalerArgs := []string{
		"--cluster", "fleet", "--source", "hpa", "--kubeconfig", cp.Kubeconfig,
		"--service-addr", svcAddr, "--http-listen", "127.0.0.1:0",
		"--sync-period", cfg.Period.String(), "--sync-jitter", strconv.FormatFloat(cfg.Jitter, 'g', -1, 64),
		"--leader-elect=false",
		// The pods were made Ready a moment ago: no CPU initialization period or readiness
		// delay, so that every pod's CPU counts from the first sync.
		"--cpu-initialization-period", "0s", "--initial-readiness-delay", "0s",
	}
	scalerArgs = append(scalerArgs, strings.Fields(cfg.ScalerArgs)...)
	sc, err := startChild("hpa-scaler", dir, cfg.ScalerBin, scalerArgs...)
	if err != nil {
		return err
	}
	defer sc.stop(15 * time.Second)
	httpAddr, err := sc.waitLog(setupCtx, servingHTTP)
	if err != nil {
		return err
	}
	pids := map[string]int{"hpa-scaler": sc.cmd.Process.Pid, "hpa-recommender": svc.cmd.Process.Pid, "fleet (this tool, with the metrics adapter)": os.Getpid()}
	for name, pid := range cp.PIDs() {
		pids[name] = pid
	}
	m := &measurement{
		cfg: cfg, scalerURL: "http://" + httpAddr + "/metrics", api: cs.Discovery().RESTClient(), pids: pids,
		children: []*child{svc, sc}, adapter: adapter, progress: progress, client: &http.Client{Timeout: 10 * time.Second},
	}
	rep, err := m.run(ctx, setupCtx)
	if err != nil {
		return err
	}
	return finish(cfg, rep, start, dir, stdout)
}

func finish(cfg Config, rep *Report, start time.Time, dir string, stdout io.Writer) error {
	rep.Controller = cfg.Controller
	rep.Took = time.Since(start).Round(time.Second).String()
	rep.Dir = dir
	if cfg.Dir == "" {
		rep.Dir = "(removed)"
	}
	if err := rep.Write(stdout); err != nil {
		return err
	}
	if cfg.JSONOut != "" {
		return writeJSON(cfg.JSONOut, rep)
	}
	return nil
}

// scrape reads a Prometheus text page line by line.
func scrape(ctx context.Context, client *http.Client, url string, line func(name, labels string, value float64)) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return ParseMetrics(resp.Body, line)
}

// ParseMetrics reads a Prometheus text page and calls line with each sample: the metric's name,
// its labels as written between the braces (or ""), and its value. Comments and lines that do
// not end in a number are skipped.
func ParseMetrics(r io.Reader, line func(name, labels string, value float64)) error {
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 64<<10), 1<<20)
	for s.Scan() {
		t := s.Text()
		if t == "" || t[0] == '#' {
			continue
		}
		sp := strings.LastIndexByte(t, ' ')
		if sp < 0 {
			continue
		}
		v, err := strconv.ParseFloat(t[sp+1:], 64)
		if err != nil {
			continue
		}
		name, labels := t[:sp], ""
		if i := strings.IndexByte(name, '{'); i >= 0 {
			name, labels = name[:i], strings.TrimSuffix(name[i+1:], "}")
		}
		line(name, labels, v)
	}
	if err := s.Err(); err != nil {
		return errors.Join(errors.New("read metrics"), err)
	}
	return nil
}
