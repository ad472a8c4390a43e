package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
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

// defaultGCPercent replaces Go's GOGC=100 unless the GOGC environment variable is set (GOMEMLIMIT
// applies either way). The live heap is small, tens of MB, while every call allocates: at 100
// the collector ran several times a second and took about a sixth of the CPU under load. At 400
// it runs a quarter as often; measured with the service (docs/PERFORMANCE.md, "The collector"):
// 10,000 targets, 64 callers, durable bbolt, +23 to 28 % decisions per second and -25 % CPU per
// call, for a heap that peaks higher (RSS 241-251 against 161 MiB in a 20 s saturated run).
const defaultGCPercent = 400

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
	_, logLimits := cfg.DecisionLog()
	switch cfg.Store {
	case server.StoreMemory:
		st = memstore.NewWithOptions(memstore.Options{DecisionLog: logLimits})
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
			CompactionInterval: compaction, OnCompact: logCompaction(log), DecisionLog: logLimits,
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
		b, err := boltstore.Open(cfg.BoltPath, boltstore.Options{DecisionLog: logLimits})
		if err != nil {
			return err
		}
		st = b
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
