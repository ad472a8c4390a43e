// Command fleet runs hpa-bench's one-cluster benchmark of hpa-scaler (package
// cmd/hpa-bench/internal/fleet, which says what it measures): flags and wiring only. Run it with
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

	"github.com/hpa-recommender/hpa-recommender/cmd/hpa-bench/internal/fleet"
	"github.com/hpa-recommender/hpa-recommender/cmd/internal/version"
)

// registerFlags binds c's fields to their flags in fs.
func registerFlags(fs *flag.FlagSet, c *fleet.Config) {
	fs.StringVar(&c.Controller, "controller", c.Controller, "what keeps the fleet: "+fleet.ControllerScaler+" (the built service and hpa-scaler --source hpa) or "+fleet.ControllerInTree+" (kube-controller-manager's own HPA controller, the peer; no service, no scaler)")
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

func main() {
	if version.Requested(os.Args[1:]) {
		fmt.Println(version.String("fleet"))
		return
	}
	cfg := fleet.DefaultConfig()
	fs := flag.NewFlagSet("fleet", flag.ContinueOnError)
	registerFlags(fs, &cfg)
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
	if err := cfg.Validate(); err != nil {
		fmt.Fprintln(os.Stderr, "fleet:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := fleet.Run(ctx, cfg, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "fleet:", err)
		os.Exit(1)
	}
}
