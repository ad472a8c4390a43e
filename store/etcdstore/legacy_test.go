package etcdstore_test

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"testing"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hpa-recommender/hpa-recommender/store"
	"github.com/hpa-recommender/hpa-recommender/store/etcdstore"
	"github.com/hpa-recommender/hpa-recommender/store/internal/codec"
	"github.com/hpa-recommender/hpa-recommender/store/storetest"
)

// legacyKV is a key under targets/ (the store's key encoding) and its record.
type legacyKV struct{ Key, Value []byte }

// release17d0253 is what release 17d0253 wrote for storetest.FixtureTargets: records of format 2
// (JSON) under schema version 2.
func release17d0253(t *testing.T) []legacyKV {
	raw, err := os.ReadFile("testdata/release-17d0253.json")
	if err != nil {
		t.Fatal(err)
	}
	var kvs []legacyKV
	if err := json.Unmarshal(raw, &kvs); err != nil {
		t.Fatal(err)
	}
	return kvs
}

// mixed is release17d0253 with the first storetest.FixtureTargets of format 3 (binary) instead,
// the codec's fixtures of that format (testdata/format3/fixture-N.bin there).
func mixed(t *testing.T) []legacyKV {
	kvs := release17d0253(t)
	for i := range 6 {
		b, err := os.ReadFile(fmt.Sprintf("../internal/codec/testdata/format3/fixture-%d.bin", i))
		if err != nil {
			t.Fatal(err)
		}
		kvs[i] = legacyKV{codec.EncodeKey(storetest.FixtureTargets()[i].Key), b}
	}
	return kvs
}

// writeLegacy writes kvs under targets/ of a fresh prefix, with the schema version, and returns
// the prefix.
func writeLegacy(t *testing.T, c *clientv3.Client, version string, kvs []legacyKV) string {
	t.Helper()
	prefix := newPrefix()
	if _, err := c.Put(t.Context(), prefix+"meta/schema_version", version); err != nil {
		t.Fatal(err)
	}
	for _, kv := range kvs {
		if _, err := c.Put(t.Context(), prefix+"targets/"+string(kv.Key), string(kv.Value)); err != nil {
			t.Fatal(err)
		}
	}
	return prefix
}

// revisions returns the ModRevision of every key under prefix.
func revisions(t *testing.T, c *clientv3.Client, prefix string) map[string]int64 {
	t.Helper()
	resp, err := c.Get(t.Context(), prefix, clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	revs := map[string]int64{}
	for _, kv := range resp.Kvs {
		revs[string(kv.Key)] = kv.ModRevision
	}
	return revs
}

// TestLegacyFixture: a prefix an older release left, with records of format 2 (JSON, release
// 17d0253), or of formats 2 and 3 (binary), opened by four replicas at once: none fails, every record is of format
// 4 afterwards (checkLayout decodes each with the hot path's decoder, which reads no other),
// every target comes back as a fresh store returns it, and a store opening the prefix again
// rewrites nothing.
func TestLegacyFixture(t *testing.T) {
	c := rawClient(t)
	for _, tc := range []struct {
		name, version string
		kvs           func(*testing.T) []legacyKV
	}{
		{"release 17d0253, format 2", "2", release17d0253},
		{"formats 2 and 3", "3", mixed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := writeLegacy(t, c, tc.version, tc.kvs(t))
			stores := make([]*etcdstore.Store, 4)
			errs := make([]error, len(stores))
			var wg sync.WaitGroup
			for i := range stores {
				wg.Go(func() {
					stores[i], errs[i] = etcdstore.New(t.Context(), etcdstore.Config{Endpoints: endpoints, Prefix: prefix})
				})
			}
			wg.Wait()
			for i, s := range stores {
				if errs[i] != nil {
					t.Fatalf("replica %d: %v", i, errs[i])
				}
				t.Cleanup(func() { _ = s.Close() })
			}
			checkLayout(t, c, prefix)
			before := revisions(t, c, prefix)
			open(t, etcdstore.Config{Prefix: prefix})
			if after := revisions(t, c, prefix); fmt.Sprint(after) != fmt.Sprint(before) {
				t.Errorf("opening an upgraded prefix again wrote to it: revisions %v, then %v", before, after)
			}
			storetest.CheckLegacy(t, stores[0], open(t, etcdstore.Config{Prefix: newPrefix()}))
		})
	}
}

// TestUpgradeOnlyOnce: once a prefix is upgraded, New no longer reads its records: a record of
// an older format written there behind the store's back stays as it is (and reading it is an
// error, not a decode of the old format).
func TestUpgradeOnlyOnce(t *testing.T) {
	c := rawClient(t)
	prefix := newPrefix()
	open(t, etcdstore.Config{Prefix: prefix})
	old := store.Key{Cluster: "c", Namespace: "ns", Name: "old"}
	k := prefix + "targets/" + string(codec.EncodeKey(old))
	if _, err := c.Put(t.Context(), k, storetest.RecordV1(0)); err != nil {
		t.Fatal(err)
	}
	s := open(t, etcdstore.Config{Prefix: prefix})
	resp, err := c.Get(t.Context(), k)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(resp.Kvs[0].Value); got != storetest.RecordV1(0) {
		t.Errorf("the record written after the upgrade was rewritten: %.40q", got)
	}
	if _, err := s.Get(t.Context(), old); err == nil {
		t.Error("Get of a record of format 1 on an upgraded prefix succeeded; want an error: only the migration reads old formats")
	}
}

// TestUpgradeKeepsWhatChanged: a record the migration read, then another writer changed, is not
// overwritten with the upgrade of what was read: the migration upgrades what it holds now.
func TestUpgradeKeepsWhatChanged(t *testing.T) {
	c := rawClient(t)
	prefix := newPrefix()
	s := open(t, etcdstore.Config{Prefix: prefix})
	kvs := release17d0253(t)
	k := prefix + "targets/" + string(kvs[0].Key)
	first, err := c.Put(t.Context(), k, storetest.RecordV1(0))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Put(t.Context(), k, string(kvs[0].Value)); err != nil { // the change
		t.Fatal(err)
	}
	read := &mvccpb.KeyValue{Key: []byte(k), Value: []byte(storetest.RecordV1(0)), ModRevision: first.Header.Revision}
	if err := s.Upgrade(t.Context(), []*mvccpb.KeyValue{read}); err != nil {
		t.Fatal(err)
	}
	want := storetest.FixtureTargets()[0]
	got, err := s.Get(t.Context(), want.Key)
	if err != nil {
		t.Fatalf("after the upgrade: %v", err)
	}
	if got.Spec.MaxReplicas != want.Spec.MaxReplicas { // the record read has 5
		t.Errorf("after the upgrade the record has maxReplicas %d, want %d: the one read was written over the one that replaced it",
			got.Spec.MaxReplicas, want.Spec.MaxReplicas)
	}
}

// TestUpgradeLeavesUnknownRecords: a record of a format no release wrote does not keep the
// store from opening; it is left as it is, its target fails to read, and the others are served.
func TestUpgradeLeavesUnknownRecords(t *testing.T) {
	c := rawClient(t)
	junk := store.Key{Cluster: "c", Namespace: "ns", Name: "junk"}
	kvs := append(release17d0253(t), legacyKV{codec.EncodeKey(junk), []byte("\xffnot a record")})
	s := open(t, etcdstore.Config{Prefix: writeLegacy(t, c, "2", kvs)})
	if _, err := s.Get(t.Context(), junk); err == nil {
		t.Error("Get of a record no reader knows succeeded")
	}
	for _, want := range storetest.FixtureTargets() {
		if _, err := s.Get(t.Context(), want.Key); err != nil {
			t.Errorf("Get(%s) beside a record no reader knows: %v", want.Key, err)
		}
	}
}
