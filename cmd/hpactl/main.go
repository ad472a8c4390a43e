package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/hpa-recommender/hpa-recommender/clients/hpactl"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := hpactl.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
