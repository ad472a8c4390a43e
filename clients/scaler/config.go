package scaler

import (
	"errors"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/hpa-recommender/hpa-recommender/clients/goclient"
	"github.com/hpa-recommender/hpa-recommender/internal/envflag"
	"github.com/hpa-recommender/hpa-recommender/recommender"
)

// EnvPrefix prefixes the environment variable of every flag: --sync-period is
// HPA_SCALER_SYNC_PERIOD. A flag on the command line wins over the environment, which wins over
// the default.
const EnvPrefix = "HPA_SCALER_"

// ModeAnnotation on a manifest selects its mode; the value ModeShadow asks with dryRun and
// writes nothing.
const (
	ModeAnnotation = "hpa-recommender.io/mode"
	ModeShadow     = "shadow"
)

// Config is hpa-scaler's configuration. DefaultConfig gives every default; RegisterFlags binds
// the fields to flags; Validate checks them.
type Config struct {
	// Cluster is the cluster name sent in every TargetRef. Required.
	Cluster string
	// Source lists where autoscalers come from, comma-separated: SourceManifests,
	// SourceHPA, SourceCustom (default: manifests when ManifestsDir is set, else custom).
	Source string
	// Namespaces narrows the hpa and custom sources to these namespaces (comma-separated;
	// empty: all) and Selector to the objects matching this label selector.
	Namespaces, Selector string
	// ManifestsDir holds the HorizontalPodAutoscaler manifests (*.yaml, *.yml, *.json;
	// multi-document YAML). Required by the manifests source.
	ManifestsDir string
	// ManifestsReload is how often the directory is checked for changes (default 10s).
	ManifestsReload time.Duration
	// Kubeconfig is a kubeconfig file; empty uses the in-cluster configuration.
	Kubeconfig string
	// KubeQPS and KubeBurst bound each client-go client's rate to the API server (default 200
	// and 400: 2,000 targets every 15 s read about 133 scales a second, and as many metric
	// lists).
	KubeQPS   float64
	KubeBurst int

	// ServiceAddr is the hpa-recommender gRPC target (default 127.0.0.1:50051).
	ServiceAddr string
	// TLSCA is the CA bundle that verifies the service (enables TLS; empty with TLS on: system
	// roots). Reloaded when the file changes.
	TLSCA string
	// TLSCert and TLSKey are the client certificate and key (mTLS). Reloaded when they change.
	TLSCert, TLSKey string
	// TLSServerName overrides the name the service certificate is checked against.
	TLSServerName string
	// TLS turns TLS on with the system roots when no TLSCA is given (default false; TLSCA or
	// TLSCert imply it).
	TLS bool
	// Insecure allows plaintext to a non-loopback service address (default false).
	Insecure bool
	// TokenFile holds the bearer token sent to the service; re-read when it changes.
	TokenFile string
	// PrometheusURL is the Prometheus HTTP API that the prometheus-query annotations are
	// asked (empty: none; such metrics fail). PrometheusCA verifies it (https; reloaded on
	// change), PrometheusTokenFile holds its bearer token (re-read on change), and
	// PrometheusTimeout bounds one query (default 5s).
	PrometheusURL, PrometheusCA, PrometheusTokenFile string
	PrometheusTimeout                                time.Duration
	// RPCTimeout bounds one call to the service (default 5s).
	RPCTimeout time.Duration

	// SyncPeriod is how often every autoscaler is synced (default 15s, as upstream's
	// --horizontal-pod-autoscaler-sync-period).
	SyncPeriod time.Duration
	// SyncJitter spreads each target's syncs by up to this fraction of SyncPeriod (default 0.1).
	SyncJitter float64
	// Workers is how many targets are synced at once (default 32).
	Workers int

	// DryRun puts every autoscaler in shadow mode: ask with dryRun, log and count, write
	// nothing to the cluster (default false).
	DryRun bool

	// LeaderElect turns on leader election with a Lease (default true): only the leader syncs.
	LeaderElect bool
	// LeaderElectionNamespace and LeaderElectionName name the Lease (default: the pod's
	// namespace, else "default"; "hpa-scaler").
	LeaderElectionNamespace string
	LeaderElectionName      string
	// Identity is this replica's name in the Lease (default: the host name).
	Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod tune the election (15s, 10s, 2s, as
	// kube-controller-manager).
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration

	// HTTPListen serves /metrics, /healthz and /readyz (default :8080; empty: off).
	HTTPListen string

	// FallbackAfter is how long a target may go without an answer from the service before the
	// scaler decides locally (default 0: never; the scaler fails static).
	FallbackAfter time.Duration
	// FallbackScaleDown lets local decisions scale down too (default false: scale up only).
	FallbackScaleDown bool

	// ShadowSettle is how long the inputs of a shadow decision of an in-tree-controlled HPA
	// (its last scale, its pods' transitions) must have been unchanged for the decision to be
	// compared with the in-tree controller's (default 30s: twice the in-tree controller's
	// default --horizontal-pod-autoscaler-sync-period). docs/hpa-scaler.md says why.
	ShadowSettle time.Duration

	// Options are the controller settings sent with every Recommend; an unset field takes the
	// service's default (and recommender.DefaultOptions in the local fallback).
	Options OptionFlags
}

// OptionFlags are the optional controller settings; nil means unset.
type OptionFlags struct {
	// KubernetesVersion is the release whose HPA controller decides this cluster's autoscalers
	// (options.kubernetesVersion); empty: the service's default; "auto" (KubernetesVersionAuto):
	// the API server's release, which ResolveKubernetesVersion reads before New.
	KubernetesVersion            string
	Tolerance                    *float64
	CPUInitializationPeriod      *time.Duration
	InitialReadinessDelay        *time.Duration
	DownscaleStabilizationWindow *time.Duration
}

// DefaultConfig returns the defaults documented on Config.
func DefaultConfig() Config {
	return Config{
		ManifestsReload:    10 * time.Second,
		KubeQPS:            200,
		KubeBurst:          400,
		ServiceAddr:        "127.0.0.1:50051",
		RPCTimeout:         5 * time.Second,
		PrometheusTimeout:  DefaultPrometheusTimeout,
		SyncPeriod:         15 * time.Second,
		SyncJitter:         0.1,
		Workers:            32,
		LeaderElect:        true,
		LeaderElectionName: "hpa-scaler",
		LeaseDuration:      15 * time.Second,
		RenewDeadline:      10 * time.Second,
		RetryPeriod:        2 * time.Second,
		HTTPListen:         ":8080",
		ShadowSettle:       30 * time.Second,
	}
}

// optFloat and optDuration are flag.Values for optional settings.
type optFloat struct{ p **float64 }

func (o optFloat) String() string {
	if o.p == nil || *o.p == nil {
		return ""
	}
	return strconv.FormatFloat(**o.p, 'g', -1, 64)
}

func (o optFloat) Set(s string) error {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return err
	}
	*o.p = &v
	return nil
}

type optDuration struct{ p **time.Duration }

func (o optDuration) String() string {
	if o.p == nil || *o.p == nil {
		return ""
	}
	return (**o.p).String()
}

func (o optDuration) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*o.p = &v
	return nil
}

// RegisterFlags binds every field to a flag of fs, with the current values as defaults.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Cluster, "cluster", c.Cluster, "cluster name sent with every target (required)")
	fs.StringVar(&c.Source, "source", c.Source, "where autoscalers come from, comma-separated: manifests, hpa (HorizontalPodAutoscaler objects), custom (CentralHorizontalPodAutoscaler objects); default manifests with --manifests-dir, else custom")
	fs.StringVar(&c.Namespaces, "namespaces", c.Namespaces, "namespaces of the hpa and custom sources, comma-separated (empty: all)")
	fs.StringVar(&c.Selector, "selector", c.Selector, "label selector on the autoscaler objects of the hpa and custom sources")
	fs.StringVar(&c.ManifestsDir, "manifests-dir", c.ManifestsDir, "directory of autoscaling/v2 HorizontalPodAutoscaler manifests (the manifests source)")
	fs.DurationVar(&c.ManifestsReload, "manifests-reload", c.ManifestsReload, "how often the manifests directory is checked for changes")
	fs.StringVar(&c.Kubeconfig, "kubeconfig", c.Kubeconfig, "kubeconfig file (empty: in-cluster configuration)")
	fs.Float64Var(&c.KubeQPS, "kube-qps", c.KubeQPS, "queries per second of each client to the Kubernetes API server")
	fs.IntVar(&c.KubeBurst, "kube-burst", c.KubeBurst, "burst of queries to the Kubernetes API server")
	fs.StringVar(&c.ServiceAddr, "service-addr", c.ServiceAddr, "hpa-recommender gRPC target")
	fs.StringVar(&c.TLSCA, "tls-ca", c.TLSCA, "CA bundle verifying the service (enables TLS; reloaded on change)")
	fs.StringVar(&c.TLSCert, "tls-cert", c.TLSCert, "client certificate for mTLS (PEM; reloaded on change)")
	fs.StringVar(&c.TLSKey, "tls-key", c.TLSKey, "client key for mTLS (PEM; reloaded on change)")
	fs.StringVar(&c.TLSServerName, "tls-server-name", c.TLSServerName, "name the service certificate is verified against (default: the host of --service-addr)")
	fs.BoolVar(&c.TLS, "tls", c.TLS, "use TLS with the system roots (implied by --tls-ca and --tls-cert)")
	fs.BoolVar(&c.Insecure, "insecure", c.Insecure, "allow plaintext to a non-loopback service address (never with a token)")
	fs.StringVar(&c.TokenFile, "token-file", c.TokenFile, "file holding the bearer token for the service (re-read on change)")
	fs.StringVar(&c.PrometheusURL, "prometheus-url", c.PrometheusURL, "Prometheus HTTP API queried for the metrics of the hpa-recommender.io/prometheus-query.<metric> annotations (empty: such metrics fail)")
	fs.StringVar(&c.PrometheusCA, "prometheus-ca", c.PrometheusCA, "CA bundle verifying an https --prometheus-url (reloaded on change)")
	fs.StringVar(&c.PrometheusTokenFile, "prometheus-token-file", c.PrometheusTokenFile, "file holding the bearer token sent to Prometheus (re-read on change)")
	fs.DurationVar(&c.PrometheusTimeout, "prometheus-timeout", c.PrometheusTimeout, "deadline of one Prometheus query")
	fs.DurationVar(&c.RPCTimeout, "rpc-timeout", c.RPCTimeout, "deadline of one call to the service")
	fs.DurationVar(&c.SyncPeriod, "sync-period", c.SyncPeriod, "how often every autoscaler is synced")
	fs.Float64Var(&c.SyncJitter, "sync-jitter", c.SyncJitter, "fraction of the sync period by which each target's syncs are spread")
	fs.IntVar(&c.Workers, "workers", c.Workers, "targets synced at once")
	fs.BoolVar(&c.DryRun, "dry-run", c.DryRun, "shadow mode for every autoscaler: ask with dryRun, log and count, write nothing")
	fs.BoolVar(&c.LeaderElect, "leader-elect", c.LeaderElect, "elect a leader with a Lease; only the leader syncs")
	fs.StringVar(&c.LeaderElectionNamespace, "leader-election-namespace", c.LeaderElectionNamespace, "namespace of the Lease (default: the pod's namespace, else default)")
	fs.StringVar(&c.LeaderElectionName, "leader-election-name", c.LeaderElectionName, "name of the Lease")
	fs.StringVar(&c.Identity, "identity", c.Identity, "this replica's identity in the Lease (default: the host name)")
	fs.DurationVar(&c.LeaseDuration, "lease-duration", c.LeaseDuration, "leader election lease duration")
	fs.DurationVar(&c.RenewDeadline, "renew-deadline", c.RenewDeadline, "leader election renew deadline")
	fs.DurationVar(&c.RetryPeriod, "retry-period", c.RetryPeriod, "leader election retry period")
	fs.StringVar(&c.HTTPListen, "http-listen", c.HTTPListen, "address of /metrics, /healthz and /readyz (empty: off)")
	fs.DurationVar(&c.FallbackAfter, "fallback-after", c.FallbackAfter, "decide locally after the service has not answered for this long (0: never, fail static)")
	fs.DurationVar(&c.ShadowSettle, "shadow-settle", c.ShadowSettle, "how long the inputs of an in-tree-controlled HPA's shadow decision must be unchanged to compare it with the in-tree controller's (at least its sync period)")
	fs.BoolVar(&c.FallbackScaleDown, "fallback-scale-down", c.FallbackScaleDown, "let local fallback decisions scale down (default: scale up only)")
	fs.StringVar(&c.Options.KubernetesVersion, "kubernetes-version", c.Options.KubernetesVersion,
		"Kubernetes release whose HPA controller decides this cluster's autoscalers, "+recommender.OldestKubernetesVersion+" to "+recommender.NewestKubernetesVersion+
			", or "+KubernetesVersionAuto+" for the API server's own, read at start (default: the service's --kubernetes-version)")
	fs.Var(optFloat{&c.Options.Tolerance}, "tolerance", "tolerance sent with every Recommend, a `float` (default: the service's)")
	fs.Var(optDuration{&c.Options.CPUInitializationPeriod}, "cpu-initialization-period", "CPU initialization period sent with every Recommend, a `duration` (default: the service's)")
	fs.Var(optDuration{&c.Options.InitialReadinessDelay}, "initial-readiness-delay", "initial readiness delay sent with every Recommend, a `duration` (default: the service's)")
	fs.Var(optDuration{&c.Options.DownscaleStabilizationWindow}, "downscale-stabilization", "downscale stabilization window sent with every Recommend, a `duration` (default: the service's)")
}

// EnvName is the environment variable of a flag name.
func EnvName(flagName string) string { return envflag.Name(EnvPrefix, flagName) }

// ApplyEnv sets every flag of fs that was not given on the command line from its environment
// variable, if set: a flag wins over the environment, which wins over the default. Call it
// after fs.Parse.
func ApplyEnv(fs *flag.FlagSet, lookup func(string) (string, bool)) error {
	return envflag.Apply(fs, EnvPrefix, lookup)
}

// Sources is Source as a list, defaulted and checked.
func (c *Config) Sources() ([]string, error) {
	if strings.TrimSpace(c.Source) == "" {
		if c.ManifestsDir != "" {
			return []string{SourceManifests}, nil
		}
		return []string{SourceCustom}, nil
	}
	var out []string
	for _, f := range strings.Split(c.Source, ",") {
		f = strings.TrimSpace(f)
		if !slices.Contains(sourceOrder, f) {
			return nil, fmt.Errorf("--source: unknown source %q (want manifests, hpa or custom)", f)
		}
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out, nil
}

// namespaceList is Namespaces as a list; [""] (every namespace) when empty.
func (c *Config) namespaceList() []string {
	var out []string
	for _, ns := range strings.Split(c.Namespaces, ",") {
		if ns = strings.TrimSpace(ns); ns != "" && !slices.Contains(out, ns) {
			out = append(out, ns)
		}
	}
	if len(out) == 0 {
		return []string{""}
	}
	return out
}

// useTLS reports whether the connection to the service uses TLS.
func (c *Config) useTLS() bool { return c.TLS || c.TLSCA != "" || c.TLSCert != "" }

// Validate reports every inconsistent setting.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if c.Cluster == "" {
		bad("--cluster is required")
	}
	srcs, err := c.Sources()
	if err != nil {
		bad("%v", err)
	}
	if slices.Contains(srcs, SourceManifests) && c.ManifestsDir == "" {
		bad("--manifests-dir is required by the manifests source")
	}
	if _, err := labels.Parse(c.Selector); err != nil {
		bad("--selector: %v", err)
	}
	if c.ManifestsReload <= 0 {
		bad("--manifests-reload must be positive")
	}
	if c.ServiceAddr == "" {
		bad("--service-addr is required")
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		bad("--tls-cert and --tls-key go together")
	}
	loopback := goclient.IsLoopbackTarget(c.ServiceAddr)
	if !c.useTLS() {
		if !loopback && !c.Insecure {
			bad("plaintext to %q, which is not a loopback address: set --tls-ca (or --tls), or --insecure", c.ServiceAddr)
		}
		if !loopback && c.TokenFile != "" {
			bad("--token-file to %q needs TLS: a token is sent in the clear only to a loopback address", c.ServiceAddr)
		}
	}
	c.validatePrometheus(bad)
	if c.RPCTimeout <= 0 {
		bad("--rpc-timeout must be positive")
	}
	if c.SyncPeriod <= 0 {
		bad("--sync-period must be positive")
	}
	if c.SyncJitter < 0 || c.SyncJitter >= 1 {
		bad("--sync-jitter must be in [0, 1)")
	}
	if c.Workers < 1 {
		bad("--workers must be at least 1")
	}
	if c.KubeQPS <= 0 || c.KubeBurst < 1 {
		bad("--kube-qps must be positive and --kube-burst at least 1")
	}
	if c.LeaderElect {
		if c.LeaderElectionName == "" {
			bad("--leader-election-name is required with --leader-elect")
		}
		if !(c.LeaseDuration > c.RenewDeadline && c.RenewDeadline > c.RetryPeriod && c.RetryPeriod > 0) {
			bad("leader election needs --lease-duration > --renew-deadline > --retry-period > 0")
		}
	}
	if c.FallbackAfter < 0 {
		bad("--fallback-after must not be negative")
	}
	if c.ShadowSettle < 0 {
		bad("--shadow-settle must not be negative")
	}
	if err := validKubernetesVersion(c.Options.KubernetesVersion); err != nil {
		errs = append(errs, err)
	}
	if t := c.Options.Tolerance; t != nil && (*t < 0 || *t != *t) {
		bad("--tolerance must be a non-negative number")
	}
	for _, o := range []struct {
		name string
		d    *time.Duration
	}{
		{"--cpu-initialization-period", c.Options.CPUInitializationPeriod},
		{"--initial-readiness-delay", c.Options.InitialReadinessDelay},
		{"--downscale-stabilization", c.Options.DownscaleStabilizationWindow},
	} {
		if o.d != nil && *o.d < 0 {
			bad("%s must not be negative", o.name)
		}
	}
	return errors.Join(errs...)
}
