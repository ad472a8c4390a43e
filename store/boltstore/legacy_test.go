package boltstore_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hpa-recommender/hpa-recommender/store/storetest"
)

// TestLegacyFixture opens a crash snapshot that release 17d0253 (record format 3, schema 3)
// left: half of storetest.FixtureTargets checkpointed into the bbolt file, the other half only
// in the write-ahead log. Every target must come back as a fresh store returns it.
func TestLegacyFixture(t *testing.T) {
	dir := t.TempDir()
	copyTree(t, "testdata/release-17d0253", dir)
	old := open(t, filepath.Join(dir, "store.db"))
	fresh := open(t, filepath.Join(t.TempDir(), "fresh.db"))
	storetest.CheckLegacy(t, old, fresh)
	if err := old.Check(); err != nil {
		t.Error(err)
	}
}

// copyTree copies the files under src into dst, keeping the layout.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o700)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
}
