package hpactl

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/hpa-recommender/hpa-recommender/clients/goclient"
	"github.com/hpa-recommender/hpa-recommender/clients/internal/local"
	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

// Exit codes.
const (
	ExitOK    = 0
	ExitError = 1
)

// Environment variables.
const (
	// EnvAddr is the default of --addr.
	EnvAddr = "HPACTL_ADDR"
	// EnvToken is the default of --token (a token on the command line shows in ps).
	EnvToken = "HPACTL_TOKEN"
)

// DefaultAddr is the default of --addr: `make run`'s server.
const DefaultAddr = "127.0.0.1:50051"

const usage = `hpactl talks to the hpa-recommender service.

Usage:
  hpactl recommend -f hpa.yaml --observations obs.json [--name n] [--cluster c] [--namespace ns]
                   [--dry-run] [--local] [--output text|json]
  hpactl simulate  -f hpa.yaml --trace load.csv [--name n] [--sync-period 15s] [--startup 30s]
                   [--initial-replicas N] [--request cpu=500m] [--plot out.png|out.svg] [--local]
                   [--output text|json]
  hpactl get       (-f hpa.yaml [--name n] | --namespace ns --name n) [--cluster c] [--output text|json]
  hpactl describe  (-f hpa.yaml [--name n] | --namespace ns --name n) [--cluster c] [--output text|json]
  hpactl simulate  --history NAMESPACE/NAME -f candidate.yaml [--cluster c] [--since 6h] [--startup 30s]
                   [--local] [--output text|json]
  hpactl history   (-f hpa.yaml [--name n] | --namespace ns --name n) [--cluster c] [--since 6h]
                   [--plot out.png|out.svg] [--output text|json]
  hpactl list      [--cluster c] [--namespace ns] [--limit N] [--output text|json]
  hpactl delete    (-f hpa.yaml [--name n] | --namespace ns --name n) [--cluster c]
  hpactl convert   -f hpa.yaml [--name n]
  hpactl validate  -f hpa.yaml [-f more.yaml ...] [--output text|json]
  hpactl backup    --output FILE     (a hot backup of the server's bbolt store; admin only)
  hpactl --version

-f reads a file as kubectl does: YAML or JSON, several documents or a List, other kinds
skipped, autoscaling/v2, v2beta2, v2beta1 or v1 HorizontalPodAutoscalers (the others converted
to v2 as the API server converts, or converted, them; a warning on stderr for each beta one).
A command acts on each autoscaler of the file, or on the one --name picks. convert prints them
as autoscaling/v2 YAML, "---" between documents, calling no server.

Connection flags (every subcommand that calls the server):
  --addr host:port   server address (default $HPACTL_ADDR, else 127.0.0.1:50051)
  --plaintext        no TLS (default: true for a loopback --addr without --tls-ca/--cert)
  --tls-ca file      CA bundle to verify the server (TLS; empty: system roots)
  --cert, --key      client certificate and key (mTLS)
  --token t          bearer token (default $HPACTL_TOKEN); plaintext only to loopback
  --timeout d        per-call deadline (default 10s)
  --retries n        retries of safe calls on Unavailable (default 2)

Run "hpactl <command> -h" for the flags of one command.
`

// App is one hpactl invocation's environment. The zero value is not ready; Run uses
// DefaultApp.
type App struct {
	Stdout, Stderr io.Writer
	// Getenv reads the environment (default os.Getenv).
	Getenv func(string) string
	// Local is the in-process engine of --local.
	Local *local.Engine
	// Now is the clock ages are measured with (nil: time.Now).
	Now func() time.Time
	// Version is what --version prints (the binary's build information).
	Version string
}

// New is the App of a process: os.Getenv and a local engine, writing to stdout and stderr.
func New(stdout, stderr io.Writer) *App {
	return &App{Stdout: stdout, Stderr: stderr, Getenv: os.Getenv, Local: local.New()}
}

// Run runs hpactl with args (without the program name) and returns the exit code.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return New(stdout, stderr).Run(ctx, args)
}

// Run runs hpactl with args (without the program name) and returns the exit code.
func (a *App) Run(ctx context.Context, args []string) int {
	if len(args) == 0 {
		fmt.Fprint(a.Stderr, usage)
		return ExitError
	}
	var err error
	switch cmd, rest := args[0], args[1:]; cmd {
	case "recommend":
		err = a.recommend(ctx, rest)
	case "simulate":
		err = a.simulate(ctx, rest)
	case "get":
		err = a.get(ctx, rest)
	case "describe":
		err = a.describe(ctx, rest)
	case "history":
		err = a.history(ctx, rest)
	case "list":
		err = a.list(ctx, rest)
	case "delete":
		err = a.delete(ctx, rest)
	case "convert":
		err = a.convert(rest)
	case "validate":
		err = a.validate(rest)
	case "backup":
		err = a.backup(ctx, rest)
	case "--version", "-version", "version":
		fmt.Fprintln(a.Stdout, a.Version)
		return ExitOK
	case "help", "-h", "--help":
		fmt.Fprint(a.Stdout, usage)
		return ExitOK
	default:
		fmt.Fprintf(a.Stderr, "hpactl: unknown command %q\n\n%s", cmd, usage)
		return ExitError
	}
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, flag.ErrHelp):
		return ExitOK
	case errors.Is(err, errUsage), errors.Is(err, errReported):
		// The flag package, or the command, has printed the problems.
		return ExitError
	}
	printError(a.Stderr, err)
	return ExitError
}

// errUsage marks a flag error the flag package already printed.
var errUsage = errors.New("usage")

// newFlagSet returns a flag set whose errors print to stderr.
func (a *App) newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("hpactl "+name, flag.ContinueOnError)
	fs.SetOutput(a.Stderr)
	return fs
}

// parse parses args; positional arguments are an error (every input is a flag).
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (every input is a flag; see %s -h)", fs.Arg(0), fs.Name())
	}
	return nil
}

// connFlags are the connection flags.
type connFlags struct {
	addr, tlsCA, cert, key, token, serverName string
	plaintext                                 bool
	timeout                                   time.Duration
	retries                                   uint
}

func (a *App) registerConn(fs *flag.FlagSet) *connFlags {
	c := &connFlags{}
	addr := a.Getenv(EnvAddr)
	if addr == "" {
		addr = DefaultAddr
	}
	fs.StringVar(&c.addr, "addr", addr, "server address (env "+EnvAddr+")")
	fs.BoolVar(&c.plaintext, "plaintext", false, "no TLS (default: true for a loopback --addr without --tls-ca/--cert)")
	fs.StringVar(&c.tlsCA, "tls-ca", "", "CA bundle (PEM) to verify the server; implies TLS")
	fs.StringVar(&c.cert, "cert", "", "client certificate (PEM) for mTLS; implies TLS")
	fs.StringVar(&c.key, "key", "", "client key (PEM) for mTLS")
	fs.StringVar(&c.serverName, "server-name", "", "name to verify the server certificate against (default: the --addr host)")
	fs.StringVar(&c.token, "token", a.Getenv(EnvToken), "bearer token (env "+EnvToken+"); sent over plaintext only to loopback")
	fs.DurationVar(&c.timeout, "timeout", goclient.DefaultTimeout, "per-call deadline")
	fs.UintVar(&c.retries, "retries", 2, "retries of safe calls when the server is unavailable")
	return c
}

// dial builds the client the flags describe.
func (c *connFlags) dial(fs *flag.FlagSet) (*goclient.Client, error) {
	plainSet := false
	fs.Visit(func(f *flag.Flag) { plainSet = plainSet || f.Name == "plaintext" })
	if (c.cert == "") != (c.key == "") {
		return nil, errors.New("--cert and --key go together")
	}
	plaintext := c.plaintext
	if !plainSet {
		plaintext = goclient.IsLoopbackTarget(c.addr) && c.tlsCA == "" && c.cert == ""
	}
	opts := []goclient.Option{goclient.WithTimeout(c.timeout), goclient.WithRetries(c.retries)}
	switch {
	case plaintext && (c.tlsCA != "" || c.cert != ""):
		return nil, errors.New("--plaintext contradicts --tls-ca and --cert")
	case plaintext:
		opts = append(opts, goclient.WithInsecure())
	default:
		opts = append(opts, goclient.WithTLS(c.tlsCA))
		if c.cert != "" {
			opts = append(opts, goclient.WithClientCertificate(c.cert, c.key))
		}
		if c.serverName != "" {
			opts = append(opts, goclient.WithServerName(c.serverName))
		}
	}
	if c.token != "" {
		opts = append(opts, goclient.WithBearerToken(c.token))
	}
	return goclient.New(c.addr, opts...)
}

// targetFlags name targets: the autoscalers of -f hpa.yaml (--name picks one of them), or
// --namespace and --name; --namespace overrides the manifest's.
type targetFlags struct {
	file, cluster, namespace, name string
}

func registerTarget(fs *flag.FlagSet, t *targetFlags, withFile bool) {
	if withFile {
		fs.StringVar(&t.file, "f", "", "HorizontalPodAutoscaler manifests (autoscaling/v2, v2beta2, v2beta1 or v1, YAML or JSON; several documents act on each; - reads standard input)")
		fs.StringVar(&t.name, "name", "", "name of the autoscaler; with -f, the one of the file's to act on (default: each)")
	} else {
		fs.StringVar(&t.name, "name", "", "name of the autoscaler")
	}
	fs.StringVar(&t.cluster, "cluster", "", "cluster of the target (default: the server's default cluster)")
	fs.StringVar(&t.namespace, "namespace", "", "namespace of the autoscaler (default: the manifest's)")
}

// ref builds the TargetRef from the manifest m (may be nil) and the flags.
func (t *targetFlags) ref(m *manifest) (*pb.TargetRef, error) {
	ref := &pb.TargetRef{Cluster: t.cluster, Namespace: t.namespace, Name: t.name}
	if m != nil {
		if ref.Namespace == "" {
			ref.Namespace = m.namespace
		}
		ref.Name = m.name
	}
	var missing []string
	if ref.Namespace == "" {
		missing = append(missing, "--namespace")
	}
	if ref.Name == "" {
		missing = append(missing, "--name")
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("name the target with -f hpa.yaml or %s", strings.Join(missing, " and "))
	}
	return ref, nil
}

// targets reads -f and the target flags: the targets of the file's autoscalers (the one --name
// picks, else each), else the one target the flags name. ms are the manifests, nil without -f.
func (t *targetFlags) targets(warn io.Writer) (refs []*pb.TargetRef, ms []*manifest, err error) {
	if t.file == "" {
		ref, err := t.ref(nil)
		if err != nil {
			return nil, nil, err
		}
		return []*pb.TargetRef{ref}, nil, nil
	}
	if ms, err = loadManifests(t.file, t.name, warn); err != nil {
		return nil, nil, err
	}
	for _, m := range ms {
		ref, err := t.ref(m)
		if err != nil {
			return nil, nil, err
		}
		refs = append(refs, ref)
	}
	return refs, ms, nil
}

// errReported is the error of a command that acted on several targets and has printed the
// failures of some: the exit code is an error, the messages are out.
var errReported = errors.New("reported")

// forEach runs do for each target. With one, its error is the result; with several, a failure
// is printed with its target and the others still run.
func (a *App) forEach(refs []*pb.TargetRef, do func(i int) error) error {
	if len(refs) == 1 {
		return do(0)
	}
	failed := false
	for i, ref := range refs {
		if err := do(i); err != nil {
			printErrorOf(a.Stderr, targetString(ref)+": ", err)
			failed = true
		}
	}
	if failed {
		return errReported
	}
	return nil
}

// outputFlag is --output text|json.
type outputFlag string

func (o *outputFlag) String() string { return string(*o) }
func (o *outputFlag) Set(s string) error {
	if s != "text" && s != "json" {
		return fmt.Errorf("must be text or json, not %q", s)
	}
	*o = outputFlag(s)
	return nil
}

func registerOutput(fs *flag.FlagSet) *outputFlag {
	o := outputFlag("text")
	fs.Var(&o, "output", "output `format`: text or json")
	fs.Var(&o, "o", "shorthand for --output: the output `format`")
	return &o
}
