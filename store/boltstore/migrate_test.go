package boltstore

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	bolt "go.etcd.io/bbolt"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/hpa-recommender/hpa-recommender/recommender"
	"github.com/hpa-recommender/hpa-recommender/store"
	"github.com/hpa-recommender/hpa-recommender/store/internal/codec"
)

// copyDir copies the files under src into dst, keeping the layout.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
}

var quantities = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 && a.String() == b.String() })

// wantD50e557 is what release d50e557 returned from its fixture (testdata/README.md).
func wantD50e557(t *testing.T) []*store.Target {
	t.Helper()
	raw, err := os.ReadFile("testdata/release-d50e557/want.json")
	if err != nil {
		t.Fatal(err)
	}
	var want []*store.Target
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	return want
}

// TestMigrationKilledAtEachStep: a migration of the d50e557 fixture killed after each of its
// steps (their transactions committed, the process gone before the next) is finished by the
// next Open, which loses nothing: every target as the release returned it, the log removed.
func TestMigrationKilledAtEachStep(t *testing.T) {
	want := wantD50e557(t)
	steps := []struct {
		name string
		run  func(db *bolt.DB, path string) error
	}{
		{"replayed", func(db *bolt.DB, path string) error { return replay(db, path+walSuffix) }},
		{"upgraded", func(db *bolt.DB, path string) error {
			if err := replay(db, path+walSuffix); err != nil {
				return err
			}
			return upgradeRecords(db)
		}},
		{"version bumped, log not removed", func(db *bolt.DB, path string) error {
			if err := replay(db, path+walSuffix); err != nil {
				return err
			}
			if err := upgradeRecords(db); err != nil {
				return err
			}
			return bumpVersion(db)
		}},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			dir := t.TempDir()
			copyDir(t, "testdata/release-d50e557", dir)
			path := filepath.Join(dir, "store.db")
			db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			err = step.run(db, path)
			if cerr := db.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(path + walSuffix); err != nil {
				t.Fatalf("the log is gone before Open: %v", err)
			}
			s, err := Open(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for _, w := range want {
				got, err := s.Get(context.Background(), w.Key)
				if err != nil {
					t.Fatalf("Get(%s): %v", w.Key, err)
				}
				if d := cmp.Diff(w, got, quantities, cmpopts.EquateEmpty()); d != "" {
					t.Errorf("%s (-release +now):\n%s", w.Key, d)
				}
			}
			if _, err := os.Stat(path + walSuffix); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the log is still there after Open: %v", err)
			}
			if err := s.Check(); err != nil {
				t.Error(err)
			}
		})
	}
}

// testFrame is a frame of segment seg holding es, as releases up to schema 4 wrote it.
func testFrame(seg uint64, es []entry) []byte {
	var p []byte
	for _, e := range es {
		p = binary.AppendUvarint(p, uint64(len(e.key)))
		p = append(p, e.key...)
		p = binary.AppendVarint(p, e.rev)
		if e.val == nil {
			p = append(p, opDelete)
			continue
		}
		p = append(p, opPut)
		p = binary.AppendUvarint(p, uint64(len(e.val)))
		p = append(p, e.val...)
	}
	return framed(seg, p)
}

func framed(seg uint64, payload []byte) []byte {
	b := make([]byte, frameHeader, frameHeader+len(payload))
	binary.LittleEndian.PutUint32(b, uint32(len(payload)))
	binary.LittleEndian.PutUint64(b[8:], seg)
	b = append(b, payload...)
	binary.LittleEndian.PutUint32(b[4:], crc32.Update(0, castagnoli, b[8:]))
	return b
}

// testLegacyFrame is a frame of the first format: 8-byte header, the CRC of the payload.
func testLegacyFrame(es []entry) []byte {
	f := testFrame(0, es)
	p := f[frameHeader:]
	b := make([]byte, legacyHeader, legacyHeader+len(p))
	binary.LittleEndian.PutUint32(b, uint32(len(p)))
	binary.LittleEndian.PutUint32(b[4:], crc32.Checksum(p, castagnoli))
	return append(b, p...)
}

func put(t *testing.T, name string, max int32, rev int64) entry {
	t.Helper()
	k := store.Key{Cluster: "c", Namespace: "ns", Name: name}
	v, err := codec.Marshal(&store.Target{Key: k, Spec: recommender.Spec{MaxReplicas: max}}, rev)
	if err != nil {
		t.Fatal(err)
	}
	return entry{key: string(codec.EncodeKey(k)), val: v, rev: rev}
}

func del(name string, rev int64) entry {
	return entry{key: string(codec.EncodeKey(store.Key{Cluster: "c", Namespace: "ns", Name: name})), rev: rev}
}

// schema4Dir writes a file of schema 4 (nothing stored) and the log segments given.
func schema4Dir(t *testing.T, segs map[uint64][]byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "hpa.db")
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		m, err := tx.CreateBucket(bucketMeta)
		if err != nil {
			return err
		}
		if err := m.Put(keySchemaVersion, []byte("4")); err != nil {
			return err
		}
		_, err = tx.CreateBucket(bucketTargets)
		return err
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(path+walSuffix, 0o700); err != nil {
		t.Fatal(err)
	}
	for n, b := range segs {
		if err := os.WriteFile(filepath.Join(path+walSuffix, segmentName(n)), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

func maxReplicas(t *testing.T, s *Store, name string) int32 {
	t.Helper()
	got, err := s.Get(context.Background(), store.Key{Cluster: "c", Namespace: "ns", Name: name})
	if errors.Is(err, store.ErrNotFound) {
		return -1
	}
	if err != nil {
		t.Fatal(err)
	}
	return got.Spec.MaxReplicas
}

// TestReplay: the log's segments replay in order, the last entry of a key winning, up to
// where the newest segment stops being intact (a torn frame, the frames of a reused file that
// name another segment, zeros); segments of the first format replay; the revision counter
// continues after the highest revision replayed.
func TestReplay(t *testing.T) {
	torn := testFrame(3, []entry{put(t, "torn", 9, 40)})
	tails := map[string][]byte{
		"a torn frame":              torn[:len(torn)-1],
		"a reused file's old frame": testFrame(1, []entry{put(t, "torn", 99, 41)}),
		"zeros":                     make([]byte, 4096),
		"nothing":                   nil,
	}
	for name, tail := range tails {
		t.Run(name, func(t *testing.T) {
			path := schema4Dir(t, map[uint64][]byte{
				1: append(testLegacyFrame([]entry{put(t, "web", 1, 10), put(t, "api", 1, 11)}), make([]byte, 64)...),
				2: append(append(testFrame(2, []entry{put(t, "web", 2, 20), del("api", 21)}),
					testFrame(2, []entry{put(t, "gone", 1, 22), del("gone", 23)})...), framed(2, sealPayload)...),
				3: append(testFrame(3, []entry{put(t, "web", 3, 30)}), tail...),
			})
			s, err := Open(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for name, want := range map[string]int32{"web": 3, "api": -1, "gone": -1, "torn": -1} {
				if got := maxReplicas(t, s, name); got != want {
					t.Errorf("%s: MaxReplicas %d, want %d (-1: absent)", name, got, want)
				}
			}
			next, err := s.Update(context.Background(), store.Key{Cluster: "c", Namespace: "ns", Name: "web"},
				func(cur *store.Target) (*store.Target, error) { return cur, nil })
			if err != nil || next.Revision != 31 {
				t.Errorf("the next write: %+v (%v), want revision 31: after the highest replayed, 30", next, err)
			}
		})
	}
}

// TestDamagedOlderSegmentIsRefused: an older segment that does not end in its seal holds
// acknowledged writes a crash cannot explain: Open refuses the directory, saying so, and
// changes nothing (the log stays, the file keeps schema 4).
func TestDamagedOlderSegmentIsRefused(t *testing.T) {
	one := testFrame(1, []entry{put(t, "web", 1, 10), put(t, "api", 1, 11)})
	path := schema4Dir(t, map[uint64][]byte{
		1: one[:len(one)-3],
		2: testFrame(2, []entry{put(t, "web", 2, 20)}),
	})
	s, err := Open(path, Options{})
	if err == nil {
		_ = s.Close()
		t.Fatal("Open succeeded")
	}
	if !strings.Contains(err.Error(), "is corrupt") || !strings.Contains(err.Error(), "Keep a copy") {
		t.Errorf("Open: %v, want an error saying the log is corrupt", err)
	}
	if _, err := os.Stat(filepath.Join(path+walSuffix, segmentName(1))); err != nil {
		t.Errorf("the log is gone: %v", err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_ = db.View(func(tx *bolt.Tx) error {
		if v := string(tx.Bucket(bucketMeta).Get(keySchemaVersion)); v != "4" {
			t.Errorf("schema version %q after a refused Open, want 4", v)
		}
		if n := tx.Bucket(bucketTargets).Stats().KeyN; n != 0 {
			t.Errorf("%d targets written by a refused Open", n)
		}
		return nil
	})
}

// TestLogBesideANewFile: a log whose file is gone (a new, empty file is created) is replayed
// into the new file, not removed unread.
func TestLogBesideANewFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hpa.db")
	if err := os.Mkdir(path+walSuffix, 0o700); err != nil {
		t.Fatal(err)
	}
	seg := testFrame(5, []entry{put(t, "web", 7, 70)})
	if err := os.WriteFile(filepath.Join(path+walSuffix, segmentName(5)), seg, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := maxReplicas(t, s, "web"); got != 7 {
		t.Errorf("MaxReplicas %d, want 7 from the log", got)
	}
}
