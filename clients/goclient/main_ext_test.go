package goclient_test

import (
	"context"
	"io"
	"log"
	"log/slog"
	"net"
	"os"
	"testing"

	"github.com/hpa-recommender/hpa-recommender/server"
	"github.com/hpa-recommender/hpa-recommender/store/memstore"
)

// TestMain runs a real hpa-recommender (in-memory store, a free loopback port) for the
// package's examples, which call the service at $HPACTL_ADDR as a reader's own program would
// call `make run`'s.
func TestMain(m *testing.M) {
	addr, stop := startService()
	os.Setenv("HPACTL_ADDR", addr)
	code := m.Run()
	stop()
	os.Exit(code)
}

// startService runs a real hpa-recommender with the in-memory store on a free loopback port
// and returns its address and a function that stops it.
func startService() (string, func()) {
	cfg := server.DefaultConfig()
	cfg.Store = server.StoreMemory
	cfg.MetricsListen = ""
	srv, err := server.New(cfg, server.Deps{Store: memstore.New(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		log.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = srv.Serve(ctx, lis); close(done) }()
	return lis.Addr().String(), func() { cancel(); <-done }
}
