package boltstore_test

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	bolt "go.etcd.io/bbolt"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/hpa-recommender/hpa-recommender/store"
	"github.com/hpa-recommender/hpa-recommender/store/boltstore"
	"github.com/hpa-recommender/hpa-recommender/store/storetest"
)

// TestLegacyFixture17d0253 opens a crash snapshot that release 17d0253 (record format 3,
// schema 3) left: half of storetest.FixtureTargets checkpointed into the bbolt file, the other
// half only in the write-ahead log. Every target must come back as a fresh store returns it,
// and the directory must be upgraded.
func TestLegacyFixture17d0253(t *testing.T) {
	dir := t.TempDir()
	copyTree(t, "testdata/release-17d0253", dir)
	path := filepath.Join(dir, "store.db")
	old := open(t, path)
	checkUpgraded(t, old)
	fresh := open(t, filepath.Join(t.TempDir(), "fresh.db"))
	storetest.CheckLegacy(t, old, fresh)
	if err := old.Check(); err != nil {
		t.Error(err)
	}
}

// TestLegacyFixtured50e557 opens the directory release d50e557 left when it was killed before
// its first checkpoint (every record only in the log; testdata/README.md), as committed and
// with its segment padded with the zeros it had on disk, and checks every target against what
// d50e557's own store returned (want.json), revision included. A second Open (nothing left to
// migrate) gives the same.
func TestLegacyFixtured50e557(t *testing.T) {
	raw, err := os.ReadFile("testdata/release-d50e557/want.json")
	if err != nil {
		t.Fatal(err)
	}
	var want []*store.Target
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	if len(want) != 6 {
		t.Fatalf("want.json holds %d targets, want 6", len(want))
	}
	for _, padded := range []bool{false, true} {
		t.Run("padded="+strconv.FormatBool(padded), func(t *testing.T) {
			dir := t.TempDir()
			copyTree(t, "testdata/release-d50e557", dir)
			if padded {
				seg := filepath.Join(dir, "store.db.wal", "0000000000000001.log")
				if err := os.Truncate(seg, 1<<20); err != nil {
					t.Fatal(err)
				}
			}
			path := filepath.Join(dir, "store.db")
			for range 2 {
				s, err := boltstore.Open(path, boltstore.Options{})
				if err != nil {
					t.Fatal(err)
				}
				checkUpgraded(t, s)
				checkTargets(t, s, want)
				if err := s.Check(); err != nil {
					t.Error(err)
				}
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// fixtureEqual compares quantities by value and text: they hold unexported caches.
var fixtureEqual = cmp.Options{
	cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 && a.String() == b.String() }),
	cmpopts.EquateEmpty(),
}

// checkTargets checks that s holds exactly want, by Get and by List.
func checkTargets(t *testing.T, s store.Store, want []*store.Target) {
	t.Helper()
	var keys []store.Key
	for _, w := range want {
		got, err := s.Get(t.Context(), w.Key)
		if err != nil {
			t.Errorf("Get(%s): %v", w.Key, err)
			continue
		}
		if d := cmp.Diff(w, got, fixtureEqual); d != "" {
			t.Errorf("%s (-release +now):\n%s", w.Key, d)
		}
		keys = append(keys, w.Key)
	}
	if got := storetest.ListAll(t, s, store.ListOptions{}, 4); !cmp.Equal(got, keys) {
		t.Errorf("List gives %v, want %v", got, keys)
	}
}

// checkUpgraded checks that the directory of s is upgraded: schema version, no log beside the
// file, and every record of format 4.
func checkUpgraded(t *testing.T, s *boltstore.Store) {
	t.Helper()
	if _, err := os.Stat(s.Path() + ".wal"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the write-ahead log is still there after Open (%v)", err)
	}
	err := boltstore.View(s, func(tx *bolt.Tx) error {
		if v := string(tx.Bucket([]byte("meta")).Get([]byte("schema_version"))); v != strconv.Itoa(boltstore.SchemaVersion) {
			t.Errorf("schema version %q, want %d", v, boltstore.SchemaVersion)
		}
		if v := tx.Bucket([]byte("meta")).Get([]byte("wal_applied")); v != nil {
			t.Errorf("wal_applied %q is still there", v)
		}
		return tx.Bucket([]byte("targets")).ForEach(func(k, v []byte) error {
			if len(v) == 0 || v[0] != 4 {
				t.Errorf("record of %q: %.12q, not of format 4", k, v)
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
}

// copyTree copies the files under src into dst, keeping the layout.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
}
