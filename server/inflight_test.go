package server_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hpa-recommender/hpa-recommender/server"
	"github.com/hpa-recommender/hpa-recommender/server/servertest"
	"github.com/hpa-recommender/hpa-recommender/store"
	"github.com/hpa-recommender/hpa-recommender/store/boltstore"
)

// holdingStore is a real bbolt store whose updates wait until release is closed, each first
// saying so on entered: it keeps Recommend calls in flight for as long as a test needs.
// Every other method is the bbolt store's, through the embedded interface.
type holdingStore struct {
	store.Store
	entered chan string
	release chan struct{}
}

func (h *holdingStore) Update(ctx context.Context, k store.Key, fn store.UpdateFunc) (*store.Target, error) {
	h.entered <- k.Name
	select {
	case <-h.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return h.Store.Update(ctx, k, fn)
}

// TestMaxInflightRefusesAtOnce: with --max-inflight 2 and two Recommends held inside the
// store, a third is refused at once with ResourceExhausted naming the flag, writes nothing, and
// is logged in a once-a-second line of refusals rather than a line of its own; the two held
// ones then complete and are stored, and the freed slots admit new calls.
func TestMaxInflightRefusesAtOnce(t *testing.T) {
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "x.db"), boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	hs := &holdingStore{Store: st, entered: make(chan string, 10), release: make(chan struct{})}
	cfg := server.DefaultConfig()
	cfg.MetricsListen = ""
	cfg.MaxInflight = 2
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	addr, stop := servertest.Start(t, cfg, server.Deps{Store: hs, Logger: log})
	t.Cleanup(stop)
	c := plaintext(t, addr)
	ctx := t.Context()
	call := func(name string) error {
		req := externalRequest(t, 2, "20")
		req.Target.Name = name
		// The bound is for liveness only: a call the limit fails to refuse waits in the store.
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		_, err := c.Recommend(cctx, req)
		return err
	}

	held := make(chan error, 2)
	for _, name := range []string{"a", "b"} {
		go func() { held <- call(name) }()
	}
	for range 2 {
		select {
		case <-hs.entered:
		case <-time.After(time.Minute): // liveness only
			t.Fatal("the first two calls did not reach the store")
		}
	}
	err = call("refused")
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(status.Convert(err).Message(), "--max-inflight") {
		t.Fatalf("a third call with two in flight: %v; want ResourceExhausted naming --max-inflight", err)
	}
	if reason, delay := errorReason(err), retryDelay(err); reason != server.ReasonMaxInflight || delay != time.Second {
		t.Errorf("the refusal's details: reason %q, retry delay %v; want %q (not the rate limit's) and 1s", reason, delay, server.ReasonMaxInflight)
	}
	select {
	case name := <-hs.entered:
		t.Fatalf("the refused call reached the store (%s)", name)
	default:
	}
	// A refusal is not logged call by call but in a line at most once a second, with a count.
	if got := logs.String(); strings.Count(got, "refusing Recommend calls") != 1 || !strings.Contains(got, "refused=1") ||
		strings.Contains(got, "ResourceExhausted") {
		t.Errorf("the server's log after one refusal:\n%s\nwant one line of refusals, refused=1, and no line of the call", got)
	}

	close(hs.release)
	for range 2 {
		if err := <-held; err != nil {
			t.Errorf("a held call: %v", err)
		}
	}
	if err := call("after"); err != nil {
		t.Errorf("a call after the held ones ended: %v", err)
	}
	for _, name := range []string{"a", "b", "after"} {
		if _, err := st.Get(ctx, store.Key{Cluster: "c1", Namespace: "shop", Name: name}); err != nil {
			t.Errorf("target %s: %v", name, err)
		}
	}
	if _, err := st.Get(ctx, store.Key{Cluster: "c1", Namespace: "shop", Name: "refused"}); err == nil {
		t.Error("the refused call's target was stored")
	}
}

func TestConfigValidatesMaxInflight(t *testing.T) {
	cfg := server.DefaultConfig()
	cfg.MaxInflight = -1
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "--max-inflight") {
		t.Errorf("--max-inflight -1: %v; want an error naming the flag", err)
	}
}
