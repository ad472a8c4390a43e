// Command fleet is hpa-bench's one-cluster benchmark of hpa-scaler (issue 32, "5,000 HPAs in
// one cluster"): it starts the e2e control plane (internal/testkit/kubetest: etcd,
// kube-apiserver, kube-controller-manager without its HPA controller, and the test metrics
// adapter through the aggregation layer), creates -hpas HorizontalPodAutoscaler objects on
// Deployments of 2-5 pods made Running and Ready without a kubelet (half on CPU utilization,
// half on an External metric, every fifth on both), starts the real service (a built
// hpa-recommender, bbolt) and a built hpa-scaler with --source hpa, and measures -periods sync
// periods: the share of autoscalers synced within each period, the sync lag, decisions/s, the
// processes' CPU and RSS and the API server's requests/s by verb. Run it with
// cmd/hpa-bench/scripts/fleet.sh, which builds the binaries; figures in docs/PERFORMANCE.md.
//
//	go run ./cmd/hpa-bench/fleet -hpas 200 -period 15s -periods 5 \
//	  -service-bin bin/hpa-recommender -scaler-bin bin/hpa-scaler
//
// The kube binaries come from `make kube-binaries` (KUBE_BIN_DIR and ETCD_BIN as for `make e2e`).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/hpa-recommender/hpa-recommender/cmd/internal/version"
)

// config is the benchmark's settings.
type config struct {
	Controller   string
	HPAs         int
	PerNamespace int
	Period       time.Duration
	Periods      int
	Jitter       float64
	Slack        time.Duration
	ServiceBin   string
	ScalerBin    string
	ScalerArgs   string
	Dir          string
	SetupTimeout time.Duration
	JSONOut      string
}

func defaultConfig() config {
	return config{
		Controller: controllerScaler, HPAs: 200, PerNamespace: 10, Period: 15 * time.Second, Periods: 5, Slack: time.Second,
		ServiceBin: "bin/hpa-recommender", ScalerBin: "bin/hpa-scaler", SetupTimeout: 15 * time.Minute,
	}
}

// The controllers -controller names.
const (
	controllerScaler = "hpa-scaler"
	controllerInTree = "in-tree"
)

func (c *config) registerFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Controller, "controller", c.Controller, "what keeps the fleet: "+controllerScaler+" (the built service and hpa-scaler --source hpa) or "+controllerInTree+" (kube-controller-manager's own HPA controller, the peer; no service, no scaler)")
	fs.IntVar(&c.HPAs, "hpas", c.HPAs, "HorizontalPodAutoscaler objects to create, each on a Deployment of 2-5 pods")
	fs.IntVar(&c.PerNamespace, "per-namespace", c.PerNamespace, "autoscalers per namespace")
	fs.DurationVar(&c.Period, "period", c.Period, "hpa-scaler's --sync-period")
	fs.IntVar(&c.Periods, "periods", c.Periods, "sync periods measured after every autoscaler synced once")
	fs.Float64Var(&c.Jitter, "sync-jitter", c.Jitter, "hpa-scaler's --sync-jitter; the lag counts from the latest a sync may be due, period x (1 + jitter)")
	fs.DurationVar(&c.Slack, "slack", c.Slack, "how much staler than period x (1 + jitter) + the scheduler's tick an autoscaler may get and still count as synced within the period")
	fs.StringVar(&c.ServiceBin, "service-bin", c.ServiceBin, "hpa-recommender binary (run with the bbolt store in -dir)")
	fs.StringVar(&c.ScalerBin, "scaler-bin", c.ScalerBin, "hpa-scaler binary")
	fs.StringVar(&c.ScalerArgs, "scaler-args", c.ScalerArgs, "more hpa-scaler flags, space-separated (e.g. \"--kube-qps=500 --workers=64\")")
	fs.StringVar(&c.Dir, "dir", c.Dir, "directory for the control plane, the service's database and the logs, kept afterwards (empty: a temporary one, removed)")
	fs.DurationVar(&c.SetupTimeout, "setup-timeout", c.SetupTimeout, "bound on creating the fleet and on the first sync of every autoscaler")
	fs.StringVar(&c.JSONOut, "json-out", c.JSONOut, "also write the report as JSON to this file")
}

func (c *config) validate() error {
	switch {
	case c.Controller != controllerScaler && c.Controller != controllerInTree:
		return fmt.Errorf("-controller %q: want %s or %s", c.Controller, controllerScaler, controllerInTree)
	case c.HPAs < 1:
		return fmt.Errorf("-hpas %d: want 1 or more", c.HPAs)
	case c.PerNamespace < 1:
		return fmt.Errorf("-per-namespace %d: want 1 or more", c.PerNamespace)
	case c.Period < time.Second:
		return fmt.Errorf("-period %s: want 1s or more", c.Period)
	case c.Slack < 0:
		return fmt.Errorf("-slack %s: want 0 or more", c.Slack)
	case c.Periods < 1:
		return fmt.Errorf("-periods %d: want 1 or more", c.Periods)
	case c.Jitter < 0 || c.Jitter >= 1:
		return fmt.Errorf("-sync-jitter %g: want [0, 1)", c.Jitter)
	case c.Controller == controllerScaler && (c.ServiceBin == "" || c.ScalerBin == ""):
		return errors.New("-service-bin and -scaler-bin are required")
	}
	return nil
}

func main() {
	if version.Requested(os.Args[1:]) {
		fmt.Println(version.String("fleet"))
		return
	}
	cfg := defaultConfig()
	fs := flag.NewFlagSet("fleet", flag.ContinueOnError)
	cfg.registerFlags(fs)
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		os.Exit(2)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "fleet: unexpected arguments %q\n", strings.Join(fs.Args(), " "))
		os.Exit(2)
	}
	if err := cfg.validate(); err != nil {
		fmt.Fprintln(os.Stderr, "fleet:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "fleet:", err)
		os.Exit(1)
	}
}
