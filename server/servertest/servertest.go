package servertest

import (
	"context"
	"log/slog"
	"net"
	"sync"
	"testing"

	"github.com/hpa-recommender/hpa-recommender/server"
	"github.com/hpa-recommender/hpa-recommender/store/memstore"
)

// Start runs server.New(cfg, deps) on a free 127.0.0.1 port until the test ends and returns
// its address and a stop function (idempotent, also run at cleanup) that ends Serve and
// reports its error on t. cfg.MetricsListen is forced off; a nil deps.Store is a new
// memstore with cfg's decision log limits (cfg.Store then says memory) and a nil deps.Logger
// discards. The caller owns a
// store it passes and closes it after stop.
func Start(t testing.TB, cfg server.Config, deps server.Deps) (string, func()) {
	t.Helper()
	cfg.MetricsListen = ""
	if deps.Store == nil {
		_, limits := cfg.DecisionLog()
		deps.Store = memstore.NewWithOptions(memstore.Options{DecisionLog: limits})
		cfg.Store = server.StoreMemory
	}
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	srv, err := server.New(cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, lis) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("serve: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return lis.Addr().String(), stop
}
