package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/hpa-recommender/hpa-recommender/clients/hpactl"
	"github.com/hpa-recommender/hpa-recommender/cmd/internal/version"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	app := hpactl.New(os.Stdout, os.Stderr)
	app.Version = version.String("hpactl")
	code := app.Run(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}
