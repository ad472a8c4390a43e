package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"syscall"

	"github.com/hpa-recommender/hpa-recommender/cmd/internal/version"
	"github.com/hpa-recommender/hpa-recommender/internal/envflag"
	"github.com/hpa-recommender/hpa-recommender/server"
	"github.com/hpa-recommender/hpa-recommender/store"
	"github.com/hpa-recommender/hpa-recommender/store/boltstore"
	"github.com/hpa-recommender/hpa-recommender/store/etcdstore"
	"github.com/hpa-recommender/hpa-recommender/store/memstore"
)

func main() {
	if version.Requested(os.Args[1:]) {
		fmt.Println(version.String("hpa-recommender"))
		return
	}
	if err := run(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "hpa-recommender:", err)
		os.Exit(1)
	}
}

// defaultGCPercent replaces Go's GOGC=100 unless the GOGC environment variable is set. The live
// heap is small (tens of MB) while every call allocates, so at 100 the collector ran several
// times a second and took a fifth of the CPU under load (docs/PERFORMANCE.md); at 400 the heap
// peaks at about five times the live heap instead of twice. GOMEMLIMIT still applies.
const defaultGCPercent = 400

// extraProc raises GOMAXPROCS by one for the bbolt store, unless the GOMAXPROCS environment
// variable is set, and reports the new value. The store's commits spend most of a busy
// second in write and fdatasync calls, and a goroutine in a system call keeps its P (its slot
// to run Go code) until the runtime's monitor thread takes it back, tens of microseconds or more
// later: with as many Ps as CPUs, the handlers then have one CPU fewer for much of each sync
// while a CPU sits idle. The extra P lets them use it (measured at 17d0253:
// 0.03-0.07 more of the no-op baseline's throughput at 64 callers on 2 CPUs). Setting it stops
// the runtime from following later changes of the container's CPU limit, as it does for a
// default it chose itself; a restart picks them up.
func extraProc(lookupEnv func(string) (string, bool)) (int, bool) {
	if v, set := lookupEnv("GOMAXPROCS"); set && v != "" {
		return 0, false
	}
	n := runtime.GOMAXPROCS(0) + 1
	runtime.GOMAXPROCS(n)
	return n, true
}

func run(args []string) error {
	cfg := server.DefaultConfig()
	fs := flag.NewFlagSet("hpa-recommender", flag.ContinueOnError)
	cfg.RegisterFlags(fs)
	var level slog.Level
	fs.TextVar(&level, "log-level", slog.LevelInfo, "log `level`: debug (every call), info, warn or error")
	if err := envflag.Parse(fs, server.EnvPrefix, "hpa-recommender [flags] | hpa-recommender --version", args, os.LookupEnv); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(defaultGCPercent)
	}

	var st store.Store
	switch cfg.Store {
	case server.StoreMemory:
		st = memstore.New()
		log.Warn("using the in-memory store: history is lost when the process stops")
	case server.StoreEtcd:
		tc, err := cfg.EtcdTLS()
		if err != nil {
			return err
		}
		compaction := cfg.EtcdCompactionInterval
		if compaction == 0 {
			compaction = -1 // the store's "never"
		}
		e, err := etcdstore.New(context.Background(), etcdstore.Config{
			Endpoints: cfg.EtcdEndpoints, Prefix: cfg.EtcdPrefix, TLS: tc,
			CompactionInterval: compaction, OnCompact: logCompaction(log), CachedRecords: cfg.EtcdCachedTargets,
		})
		if err != nil {
			return err
		}
		st = e
		if compaction < 0 {
			log.Warn("not compacting etcd's history (--etcd-compaction-interval 0): unless etcd compacts itself (--auto-compaction-retention), it grows with every decision until its space quota stops every write")
		} else {
			log.Info("compacting etcd's history, keeping one interval of it; compaction is cluster-wide", "interval", compaction)
		}
	default:
		b, err := boltstore.Open(cfg.BoltPath, boltstore.Options{CachedTargets: cfg.BoltCachedTargets, CheckpointRecords: cfg.BoltLogTargets})
		if err != nil {
			return err
		}
		st = b
		if n, ok := extraProc(os.LookupEnv); ok {
			log.Info("one more Go scheduler slot than CPUs, for the store's log syncs", "GOMAXPROCS", n)
		}
	}
	defer func() {
		if err := st.Close(); err != nil {
			log.Error("closing the store", "error", err)
		}
	}()

	srv, err := server.New(cfg, server.Deps{Store: st, Logger: log})
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := srv.Run(ctx); err != nil {
		return err
	}
	log.Info("stopped")
	return nil
}

// logCompaction logs the etcd store's compactions: each at debug level, a failed one as a
// warning (etcd keeps growing until one succeeds).
func logCompaction(log *slog.Logger) func(rev int64, err error) {
	return func(rev int64, err error) {
		if err != nil {
			log.Warn("compacting etcd's history failed; will retry at the next interval", "revision", rev, "error", err)
			return
		}
		log.Debug("compacted etcd's history", "revision", rev)
	}
}
