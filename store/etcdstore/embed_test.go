package etcdstore_test

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/goleak"
	"go.uber.org/zap"
)

// endpointsEnv, when set (comma-separated client URLs), runs the tests against that etcd
// instead of the embedded one, e.g. Debian's etcd-server 3.4 to check an older server.
const endpointsEnv = "ETCDSTORE_TEST_ENDPOINTS"

// endpoints are the client URLs of the etcd every test shares: one per test binary, started by
// TestMain. Tests keep apart by using a fresh key prefix each (newPrefix).
var endpoints []string

// TestMain runs the tests, then fails unless every goroutine they and the embedded etcd
// started has ended.
func TestMain(m *testing.M) {
	code := runTests(m)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutines left behind:", err)
			code = 1
		}
	}
	os.Exit(code)
}

func runTests(m *testing.M) int {
	if env := os.Getenv(endpointsEnv); env != "" {
		endpoints = strings.Split(env, ",")
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "etcdstore-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	e, endpoint, err := startEtcd(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "start embedded etcd:", err)
		return 1
	}
	defer e.Close()
	endpoints = []string{endpoint}
	return m.Run()
}

// startEtcd starts a single-member etcd with its data in dir, listening on free loopback
// ports, and returns it once it serves, with its client URL. Each of opts changes its
// configuration first.
func startEtcd(dir string, opts ...func(*embed.Config)) (*embed.Etcd, string, error) {
	cfg := embed.NewConfig()
	cfg.Dir = dir
	// Its logs (including the harmless "mux: server closed" at Close) would drown test output;
	// failures to start are returned by StartEtcd.
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cfg.UnsafeNoFsync = true // throwaway data
	free, err := url.Parse("http://127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	cfg.ListenClientUrls = []url.URL{*free}
	cfg.ListenPeerUrls = []url.URL{*free}
	for _, o := range opts {
		o(cfg)
	}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, "", err
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, "", err
	case <-time.After(60 * time.Second):
		e.Close()
		return nil, "", errors.New("not ready after 60s")
	}
	return e, "http://" + e.Clients[0].Addr().String(), nil
}
