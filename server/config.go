package server

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hpa-recommender/hpa-recommender/internal/envflag"
	"github.com/hpa-recommender/hpa-recommender/recommender"
	"github.com/hpa-recommender/hpa-recommender/store"
)

// EnvPrefix prefixes the environment variable of every flag: --bolt-path is
// HPA_RECOMMENDER_BOLT_PATH.
const EnvPrefix = "HPA_RECOMMENDER_"

// Store backends.
const (
	StoreBolt   = "bolt"
	StoreMemory = "memory"
	StoreEtcd   = "etcd"
)

// Config is the hpa-recommender configuration. DefaultConfig gives every default.
type Config struct {
	// Listen is the gRPC address (default 127.0.0.1:50051).
	Listen string
	// MetricsListen is the Prometheus /metrics address (default 127.0.0.1:9090); empty disables it.
	MetricsListen string
	// Pprof also serves Go's profiler under /debug/pprof/ on MetricsListen (default off: a
	// profile shows request contents in memory to whoever can reach that port).
	Pprof bool
	// Store is the backend: bolt (default), memory or etcd.
	Store string
	// BoltPath is the bbolt file (default ./data/hpa-recommender.db).
	BoltPath string
	// EtcdEndpoints and EtcdPrefix configure the etcd backend.
	EtcdEndpoints []string
	EtcdPrefix    string
	// EtcdCA verifies etcd's serving certificate (default: the system roots); EtcdCert and
	// EtcdKey are the client certificate etcd may require (reloaded when the files change).
	// Any of them, or an https:// endpoint, makes the etcd connection TLS.
	EtcdCA, EtcdCert, EtcdKey string
	// EtcdCompactionInterval is how often the etcd store compacts etcd's history, keeping one
	// interval of it (0: never; see etcdstore.Config.CompactionInterval). Without compaction
	// etcd grows with every decision until its space quota stops every write.
	EtcdCompactionInterval time.Duration
	// TLSCert and TLSKey enable TLS; ClientCA additionally requires client certificates (mTLS;
	// with TokensFile too, a bearer token may replace the certificate).
	TLSCert, TLSKey, ClientCA string
	// TokensFile holds "token,cluster[,expires=RFC3339]" lines; cluster "*" is an admin. It is
	// reloaded when it changes and on SIGHUP.
	TokensFile string
	// RateLimit is decisions per second per cluster (0: unlimited), with RateBurst.
	RateLimit float64
	RateBurst int
	// MaxInflight bounds the Recommend calls handled at once (0: unlimited). Past it a call is
	// refused at once with ResourceExhausted, so that an overloaded replica answers the calls
	// it admits in time instead of every call slowing until their deadlines pass.
	MaxInflight int
	// MaxRequestBytes bounds one request (default 4 MiB).
	MaxRequestBytes int
	// MaxPods bounds the pods of one request or step (default 20000).
	MaxPods int
	// MaxSteps bounds the steps of one Simulate request (default 10000).
	MaxSteps int
	// TargetTTL forgets targets unseen that long (default 24h).
	TargetTTL time.Duration
	// DecisionLogRetention and DecisionLogBytes bound each target's decision log (defaults 24h
	// and 32 KiB, whichever keeps less); either 0 turns the log off.
	DecisionLogRetention time.Duration
	DecisionLogBytes     int64
	// ShutdownTimeout bounds graceful shutdown (default 15s).
	ShutdownTimeout time.Duration
	// Defaults are the Options a request leaves unset (the upstream controller flags).
	Defaults recommender.Options
	// Retired are the retired flags this configuration set (see retireFlag); New warns of each.
	Retired []RetiredFlag
}

// DecisionLog reports whether the decision log is on, and the limits the store applies to it.
func (c *Config) DecisionLog() (bool, store.DecisionLogLimits) {
	on := c.DecisionLogRetention > 0 && c.DecisionLogBytes > 0
	return on, store.DecisionLogLimits{Retention: c.DecisionLogRetention, MaxBytes: c.DecisionLogBytes}
}

// DefaultConfig returns the configuration `make run` uses.
func DefaultConfig() Config {
	return Config{
		Listen:                 "127.0.0.1:50051",
		MetricsListen:          "127.0.0.1:9090",
		Store:                  StoreBolt,
		BoltPath:               "./data/hpa-recommender.db",
		EtcdPrefix:             "/hpa-recommender",
		EtcdCompactionInterval: time.Minute, // etcdstore.DefaultCompactionInterval
		RateBurst:              100,
		MaxRequestBytes:        4 << 20,
		MaxPods:                20000,
		MaxSteps:               10000,
		TargetTTL:              24 * time.Hour,
		DecisionLogRetention:   store.DefaultDecisionLogRetention,
		DecisionLogBytes:       store.DefaultDecisionLogBytes,
		ShutdownTimeout:        15 * time.Second,
		Defaults:               defaultOptions(),
	}
}

// defaultOptions are the upstream controller's defaults, deciding as the newest supported
// Kubernetes release.
func defaultOptions() recommender.Options {
	o := recommender.DefaultOptions()
	o.KubernetesVersion = recommender.NewestKubernetesVersion
	return o
}

type listFlag struct{ v *[]string }

func (l listFlag) String() string {
	if l.v == nil {
		return ""
	}
	return strings.Join(*l.v, ",")
}

func (l listFlag) Set(s string) error {
	*l.v = nil
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*l.v = append(*l.v, p)
		}
	}
	return nil
}

// RegisterFlags binds every field to a flag of fs, with the current values as defaults.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Listen, "listen", c.Listen, "gRPC listen address")
	fs.StringVar(&c.MetricsListen, "metrics-listen", c.MetricsListen, "Prometheus /metrics listen address (empty: off)")
	fs.BoolVar(&c.Pprof, "pprof", c.Pprof, "also serve /debug/pprof/ on --metrics-listen")
	fs.StringVar(&c.Store, "store", c.Store, "store backend: bolt, memory or etcd")
	fs.StringVar(&c.BoltPath, "bolt-path", c.BoltPath, "bbolt database file (a write-ahead log an older release left beside it, <file>.wal, is replayed into it once and removed)")
	c.retireFlag(fs, "bolt-cached-targets", "int", parseInt, "the bbolt store keeps no cache of decoded records")
	c.retireFlag(fs, "bolt-log-targets", "int", parseInt, "the bbolt store keeps no write-ahead log")
	c.retireFlag(fs, "cached-specs", "int", parseInt, "the server keeps no cache of converted specs")
	fs.Var(listFlag{&c.EtcdEndpoints}, "etcd-endpoints", "etcd endpoints, a comma-separated `list`")
	fs.StringVar(&c.EtcdPrefix, "etcd-prefix", c.EtcdPrefix, "key prefix in etcd")
	fs.StringVar(&c.EtcdCA, "etcd-ca", c.EtcdCA, "CA bundle that verifies etcd's certificate (PEM; enables TLS to etcd; default roots: the system's)")
	fs.StringVar(&c.EtcdCert, "etcd-cert", c.EtcdCert, "client certificate for etcd (PEM; enables TLS to etcd)")
	fs.StringVar(&c.EtcdKey, "etcd-key", c.EtcdKey, "client private key for etcd (PEM)")
	fs.DurationVar(&c.EtcdCompactionInterval, "etcd-compaction-interval", c.EtcdCompactionInterval, "how often to compact etcd's history, keeping one interval of it; compaction is cluster-wide (0: never, for an etcd that compacts itself with --auto-compaction-retention; without any, etcd fills its space quota and refuses writes)")
	c.retireFlag(fs, "etcd-cached-targets", "int", parseInt, "the etcd store keeps no cache of records")
	fs.StringVar(&c.TLSCert, "tls-cert", c.TLSCert, "TLS certificate file (PEM)")
	fs.StringVar(&c.TLSKey, "tls-key", c.TLSKey, "TLS private key file (PEM)")
	fs.StringVar(&c.ClientCA, "client-ca", c.ClientCA, "CA bundle for client certificates (enables mTLS)")
	fs.StringVar(&c.TokensFile, "tokens-file", c.TokensFile, "bearer tokens file: one token,cluster[,expires=RFC3339] per line (cluster * = admin)")
	fs.Float64Var(&c.RateLimit, "rate-limit", c.RateLimit, "decisions per second per cluster (0: unlimited)")
	fs.IntVar(&c.RateBurst, "rate-burst", c.RateBurst, "burst of the per-cluster rate limit")
	fs.IntVar(&c.MaxInflight, "max-inflight", c.MaxInflight, "most Recommend calls handled at once; more are refused at once with ResourceExhausted (0: unlimited)")
	fs.IntVar(&c.MaxRequestBytes, "max-request-bytes", c.MaxRequestBytes, "largest request accepted, in bytes")
	fs.IntVar(&c.MaxPods, "max-pods", c.MaxPods, "most pods in one request or simulation step")
	fs.IntVar(&c.MaxSteps, "max-steps", c.MaxSteps, "most steps in one Simulate request")
	fs.DurationVar(&c.TargetTTL, "target-ttl", c.TargetTTL, "forget targets not seen for this long (0: never)")
	fs.DurationVar(&c.DecisionLogRetention, "decision-log-retention", c.DecisionLogRetention, "keep each target's decisions this long (0: keep no decision log)")
	fs.Int64Var(&c.DecisionLogBytes, "decision-log-bytes", c.DecisionLogBytes, "keep at most this many bytes of decisions per target, 32768 = 32 KiB (0: keep no decision log)")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", c.ShutdownTimeout, "graceful shutdown deadline")
	fs.Float64Var(&c.Defaults.Tolerance, "tolerance", c.Defaults.Tolerance, "default tolerance (--horizontal-pod-autoscaler-tolerance)")
	fs.DurationVar(&c.Defaults.CPUInitializationPeriod, "cpu-initialization-period", c.Defaults.CPUInitializationPeriod, "default CPU initialization period")
	fs.DurationVar(&c.Defaults.InitialReadinessDelay, "initial-readiness-delay", c.Defaults.InitialReadinessDelay, "default initial readiness delay")
	fs.DurationVar(&c.Defaults.DownscaleStabilizationWindow, "downscale-stabilization", c.Defaults.DownscaleStabilizationWindow, "default downscale stabilization window")
	fs.StringVar(&c.Defaults.KubernetesVersion, "kubernetes-version", c.Defaults.KubernetesVersion,
		"Kubernetes release whose HPA controller decides a request that names none ("+recommender.OldestKubernetesVersion+" to "+recommender.NewestKubernetesVersion+"), with that release's default feature gates")
}

// RetiredFlag is a flag that no longer does anything, set by a deployment.
type RetiredFlag struct {
	// Name is the flag's name, without dashes.
	Name string
	// Why says what it used to tune and is gone.
	Why string
}

// retiredValue is the flag.Value of a retired flag: it parses a value as the flag did, so a
// value that was wrong still fails, and records in *set that the flag was set (on the command
// line or by its environment variable).
type retiredValue struct {
	flag  RetiredFlag
	parse func(string) error
	set   *[]RetiredFlag
}

func (v retiredValue) String() string { return "" }

func (v retiredValue) Set(s string) error {
	if err := v.parse(s); err != nil {
		return err
	}
	if !slices.Contains(*v.set, v.flag) {
		*v.set = append(*v.set, v.flag)
	}
	return nil
}

// retireFlag registers name, a flag that only tuned something since removed: for one release
// it is still accepted (parse checks its value, of type typ, as before; the value is then
// ignored), and a server started with it warns, naming it, so that its change of meaning is
// not silent.
func (c *Config) retireFlag(fs *flag.FlagSet, name, typ string, parse func(string) error, why string) {
	fs.Var(retiredValue{flag: RetiredFlag{Name: name, Why: why}, parse: parse, set: &c.Retired}, name,
		// The backquoted word is the value's type in --help (flag.UnquoteUsage), as fs.Int's.
		"retired (`"+typ+"`): accepted and ignored until the next release ("+why+")")
}

// parseInt is the check of a retired int flag's value.
func parseInt(s string) error {
	_, err := strconv.ParseInt(s, 0, strconv.IntSize)
	return err
}

// EnvName is the environment variable of a flag name.
func EnvName(flagName string) string { return envflag.Name(EnvPrefix, flagName) }

// ApplyEnv sets every flag of fs that was not given on the command line from its environment
// variable, if set: a flag wins over the environment, which wins over the default. Call it
// after fs.Parse.
func ApplyEnv(fs *flag.FlagSet, lookup func(string) (string, bool)) error {
	return envflag.Apply(fs, EnvPrefix, lookup)
}

// Validate reports every inconsistent setting.
func (c *Config) Validate() error {
	var errs []error
	if c.Listen == "" {
		errs = append(errs, errors.New("--listen must be set"))
	}
	switch c.Store {
	case StoreBolt:
		if c.BoltPath == "" {
			errs = append(errs, errors.New("--bolt-path must be set with --store=bolt"))
		}
	case StoreMemory:
	case StoreEtcd:
		if len(c.EtcdEndpoints) == 0 {
			errs = append(errs, errors.New("--etcd-endpoints must be set with --store=etcd"))
		}
	default:
		errs = append(errs, fmt.Errorf("--store must be bolt, memory or etcd, not %q", c.Store))
	}
	if c.EtcdCA != "" || c.EtcdCert != "" || c.EtcdKey != "" {
		if c.Store != StoreEtcd {
			errs = append(errs, errors.New("--etcd-ca, --etcd-cert and --etcd-key need --store=etcd"))
		}
		for _, e := range c.EtcdEndpoints {
			if strings.HasPrefix(e, "http://") {
				errs = append(errs, fmt.Errorf("--etcd-endpoints: %s is plaintext, but --etcd-ca, --etcd-cert or --etcd-key ask for TLS: use https://", e))
			}
		}
	}
	if c.EtcdCompactionInterval < 0 {
		errs = append(errs, fmt.Errorf("--etcd-compaction-interval %s must not be negative (0: never)", c.EtcdCompactionInterval))
	}
	if (c.EtcdCert == "") != (c.EtcdKey == "") {
		errs = append(errs, errors.New("--etcd-cert and --etcd-key go together"))
	}
	if c.Pprof && c.MetricsListen == "" {
		errs = append(errs, errors.New("--pprof needs --metrics-listen"))
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		errs = append(errs, errors.New("--tls-cert and --tls-key go together"))
	}
	if c.ClientCA != "" && c.TLSCert == "" {
		errs = append(errs, errors.New("--client-ca needs --tls-cert and --tls-key"))
	}
	if c.RateLimit < 0 || math.IsNaN(c.RateLimit) || math.IsInf(c.RateLimit, 0) {
		errs = append(errs, errors.New("--rate-limit must be a finite number, at least 0 (0: unlimited)"))
	}
	if c.RateLimit > 0 && c.RateBurst < 1 {
		errs = append(errs, errors.New("--rate-burst must be at least 1 with --rate-limit"))
	}
	if c.MaxInflight < 0 {
		errs = append(errs, errors.New("--max-inflight must be at least 0 (0: unlimited)"))
	}
	if c.MaxRequestBytes <= 0 {
		errs = append(errs, errors.New("--max-request-bytes must be positive"))
	}
	if c.MaxPods <= 0 {
		errs = append(errs, errors.New("--max-pods must be positive"))
	}
	if c.MaxSteps <= 0 {
		errs = append(errs, errors.New("--max-steps must be positive"))
	}
	if c.TargetTTL < 0 {
		errs = append(errs, errors.New("--target-ttl must not be negative"))
	}
	if c.DecisionLogRetention < 0 {
		errs = append(errs, errors.New("--decision-log-retention must not be negative (0: no decision log)"))
	}
	if c.DecisionLogBytes < 0 {
		errs = append(errs, errors.New("--decision-log-bytes must not be negative (0: no decision log)"))
	}
	if _, err := recommender.RulesFor(c.Defaults); err != nil {
		errs = append(errs, fmt.Errorf("--kubernetes-version: %w", err))
	}
	if c.ShutdownTimeout <= 0 {
		errs = append(errs, errors.New("--shutdown-timeout must be positive"))
	}
	if c.Defaults.Tolerance < 0 {
		errs = append(errs, errors.New("--tolerance must not be negative"))
	}
	if c.Defaults.CPUInitializationPeriod < 0 || c.Defaults.InitialReadinessDelay < 0 || c.Defaults.DownscaleStabilizationWindow < 0 {
		errs = append(errs, errors.New("--cpu-initialization-period, --initial-readiness-delay and --downscale-stabilization must not be negative"))
	}
	return errors.Join(errs...)
}
