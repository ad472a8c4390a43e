package hpactl_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/testing/protocmp"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
	"github.com/hpa-recommender/hpa-recommender/server"
	"github.com/hpa-recommender/hpa-recommender/server/servertest"
	"github.com/hpa-recommender/hpa-recommender/store/boltstore"
)

// startBoltServer runs a real hpa-recommender on a bbolt file at path, with cfg changed by
// edit, and returns its address and a stop that also closes the store.
func startBoltServer(t *testing.T, path string, edit func(*server.Config)) (string, func()) {
	t.Helper()
	st, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := server.DefaultConfig()
	cfg.Store, cfg.BoltPath = server.StoreBolt, path
	if edit != nil {
		edit(&cfg)
	}
	addr, stop := servertest.Start(t, cfg, server.Deps{Store: st, Now: func() time.Time { return fixedNow }})
	var once sync.Once
	closeAll := func() {
		once.Do(func() {
			stop()
			if err := st.Close(); err != nil {
				t.Errorf("close store: %v", err)
			}
		})
	}
	t.Cleanup(closeAll)
	return addr, closeAll
}

func getJSON(t *testing.T, addr, name string) *pb.GetTargetResponse {
	t.Helper()
	r := run(t, addr, "get", "--cluster", "prod", "--namespace", "shop", "--name", name, "-o", "json")
	mustOK(t, r)
	resp := &pb.GetTargetResponse{}
	if err := protojson.Unmarshal([]byte(r.stdout), resp); err != nil {
		t.Fatalf("get %s: output is not a GetTargetResponse: %v", name, err)
	}
	return resp
}

// TestBackupWhileWriting: a backup taken while other targets are written is a bbolt file that
// passes bbolt's consistency check, and a server started on it serves the targets stored
// before the backup exactly as the live server does.
func TestBackupWhileWriting(t *testing.T) {
	dir := t.TempDir()
	addr, _ := startBoltServer(t, filepath.Join(dir, "live.db"), nil)
	names := []string{"web", "api", "cart", "search", "checkout"}
	mustOK(t, run(t, addr, "recommend", "-f", multiHPA(t, names...), "--observations", obsJSON, "--cluster", "prod"))

	// Writers of other targets, running until the backup is done; the backup starts once
	// they have written.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var written atomic.Int64
	firstWrites := make(chan struct{})
	var once sync.Once
	for w := range 4 {
		file := multiHPA(t, fmt.Sprintf("live-%d", w))
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				r := run(t, addr, "recommend", "-f", file, "--observations", obsJSON, "--cluster", "prod")
				if r.code != 0 {
					t.Errorf("writer %d: exit %d: %s", w, r.code, r.stderr)
					return
				}
				written.Add(1)
				once.Do(func() { close(firstWrites) })
			}
		})
	}
	<-firstWrites
	out := filepath.Join(dir, "backup.db")
	r := run(t, addr, "backup", "--output", out)
	close(stop)
	wg.Wait()
	mustOK(t, r)
	if written.Load() == 0 {
		t.Fatal("no write went on during the backup")
	}
	fi, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("wrote %d bytes to %s\n", fi.Size(), out); r.stdout != want {
		t.Errorf("stdout %q, want %q", r.stdout, want)
	}
	if _, err := os.Stat(out + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("the temporary file is left behind: %v", err)
	}

	// It opens, and bbolt finds it consistent.
	st, err := boltstore.Open(out, boltstore.Options{})
	if err != nil {
		t.Fatalf("the backup does not open: %v", err)
	}
	err = st.Check()
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatalf("the backup is inconsistent: %v", err)
	}

	// A server on the backup serves what the live server stored before it.
	restored, _ := startBoltServer(t, out, nil)
	for _, n := range names {
		if diff := cmp.Diff(getJSON(t, addr, n), getJSON(t, restored, n), protocmp.Transform()); diff != "" {
			t.Errorf("target %s differs on the restored server (-live +restored):\n%s", n, diff)
		}
	}
}

// TestBackupRefused: a tenant token is PermissionDenied, no token Unauthenticated, and a store
// that cannot be backed up FailedPrecondition naming what to do instead; none leaves a file.
func TestBackupRefused(t *testing.T) {
	tokens := writeFile(t, "tokens", "admin-token,*\nprod-token,prod\n")
	authAddr, _ := startBoltServer(t, filepath.Join(t.TempDir(), "auth.db"), func(c *server.Config) { c.TokensFile = tokens })
	memAddr := startServer(t)
	for _, tc := range []struct {
		name, addr string
		args       []string
		want       string
	}{
		{name: "tenant", addr: authAddr, args: []string{"--token", "prod-token"},
			want: `hpactl: PermissionDenied: only an admin (a token of cluster "*") may back up the store; cluster "prod" may not` + "\n"},
		{name: "no token", addr: authAddr,
			want: `hpactl: Unauthenticated: missing credentials: send "authorization: Bearer <token>" or a client certificate` + "\n"},
		{name: "memory store", addr: memAddr,
			want: "hpactl: FailedPrecondition: the memory store keeps nothing across a restart, so there is nothing to back up; use --store bolt for a durable store\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "backup.db")
			r := run(t, tc.addr, append([]string{"backup", "--output", out}, tc.args...)...)
			if r.code != 1 || r.stderr != tc.want {
				t.Errorf("exit %d, stderr %q; want 1 and %q", r.code, r.stderr, tc.want)
			}
			for _, p := range []string{out, out + ".tmp"} {
				if _, err := os.Stat(p); !os.IsNotExist(err) {
					t.Errorf("%s exists after a refused backup: %v", p, err)
				}
			}
		})
	}

	// The admin token backs up.
	out := filepath.Join(t.TempDir(), "backup.db")
	mustOK(t, run(t, authAddr, "backup", "--output", out, "--token", "admin-token"))
	st, err := boltstore.Open(out, boltstore.Options{})
	if err != nil {
		t.Fatalf("the admin's backup does not open: %v", err)
	}
	if err := st.Close(); err != nil {
		t.Error(err)
	}
}
