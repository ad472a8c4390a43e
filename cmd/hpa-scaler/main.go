package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/hpa-recommender/hpa-recommender/clients/scaler"
	"github.com/hpa-recommender/hpa-recommender/cmd/internal/version"
	"github.com/hpa-recommender/hpa-recommender/internal/envflag"
)

func main() {
	if version.Requested(os.Args[1:]) {
		fmt.Println(version.String("hpa-scaler"))
		return
	}
	if err := run(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "hpa-scaler:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	cfg := scaler.DefaultConfig()
	fs := flag.NewFlagSet("hpa-scaler", flag.ContinueOnError)
	cfg.RegisterFlags(fs)
	var level slog.Level
	fs.TextVar(&level, "log-level", slog.LevelInfo, "log `level`: debug, info, warn or error")
	if err := envflag.Parse(fs, scaler.EnvPrefix, "hpa-scaler --cluster NAME [--source manifests|hpa|custom] [--manifests-dir DIR] [flags] | hpa-scaler --version", args, os.LookupEnv); err != nil {
		return err
	}
	if cfg.Identity == "" {
		h, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("--identity: %w", err)
		}
		cfg.Identity = h
	}
	if cfg.LeaderElectionNamespace == "" {
		cfg.LeaderElectionNamespace = podNamespace()
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	restCfg, err := kubeConfig(cfg.Kubeconfig)
	if err != nil {
		return err
	}
	restCfg.QPS, restCfg.Burst = float32(cfg.KubeQPS), cfg.KubeBurst
	restCfg.UserAgent = "hpa-scaler"
	if cfg.Options.KubernetesVersion == scaler.KubernetesVersionAuto {
		disc, err := discovery.NewDiscoveryClientForConfig(restCfg)
		if err != nil {
			return fmt.Errorf("discovery client: %w", err)
		}
		if cfg.Options.KubernetesVersion, err = scaler.ResolveKubernetesVersion(cfg.Options.KubernetesVersion, disc); err != nil {
			return err
		}
	}
	kube, runner, err := scaler.NewKube(restCfg, "hpa-scaler")
	if err != nil {
		return err
	}
	if kube.Prometheus, err = scaler.DialPrometheus(cfg); err != nil {
		return err
	}
	kube.PrometheusTimeout = cfg.PrometheusTimeout
	client, err := scaler.Dial(cfg)
	if err != nil {
		return err
	}
	defer client.Close()
	s, err := scaler.New(cfg, scaler.Deps{Kube: kube, Recommender: client, Logger: log})
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := runner.Start(ctx); err != nil {
		return err
	}
	log.Info("hpa-scaler started", "cluster", cfg.Cluster, "service", cfg.ServiceAddr, "source", cfg.Source, "manifests", cfg.ManifestsDir,
		"kubernetesVersion", cfg.Options.KubernetesVersion, "dryRun", cfg.DryRun, "leaderElect", cfg.LeaderElect, "fallbackAfter", cfg.FallbackAfter)
	return s.Run(ctx, scaler.RunDeps{LeaseClient: runner.Client, Ready: runner.Synced})
}

// kubeConfig is the kubeconfig file's configuration, else the in-cluster one.
func kubeConfig(path string) (*rest.Config, error) {
	if path != "" {
		return clientcmd.BuildConfigFromFlags("", path)
	}
	c, err := rest.InClusterConfig()
	if err != nil {
		return nil, fmt.Errorf("in-cluster configuration (use --kubeconfig outside a cluster): %w", err)
	}
	return c, nil
}

// podNamespace is the namespace of the pod's service account, else "default".
func podNamespace() string {
	if b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil {
		if ns := strings.TrimSpace(string(b)); ns != "" {
			return ns
		}
	}
	return "default"
}
