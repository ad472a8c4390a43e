package etcdstore_test

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/hpa-recommender/hpa-recommender/store/etcdstore"
	"github.com/hpa-recommender/hpa-recommender/store/storetest"
)

// TestLegacyFixture writes, under a fresh prefix, the keys and values release 17d0253 wrote for
// storetest.FixtureTargets (record format 2, JSON; schema version 2), then opens a store on
// them: every target must come back as a fresh store returns it.
func TestLegacyFixture(t *testing.T) {
	raw, err := os.ReadFile("testdata/release-17d0253.json")
	if err != nil {
		t.Fatal(err)
	}
	var kvs []struct{ Key, Value []byte } // the store's key encoding under targets/, the value
	if err := json.Unmarshal(raw, &kvs); err != nil {
		t.Fatal(err)
	}
	prefix := newPrefix()
	c := rawClient(t)
	if _, err := c.Put(t.Context(), prefix+"meta/schema_version", "2"); err != nil {
		t.Fatal(err)
	}
	for _, kv := range kvs {
		if _, err := c.Put(t.Context(), prefix+"targets/"+string(kv.Key), string(kv.Value)); err != nil {
			t.Fatal(err)
		}
	}
	old := open(t, etcdstore.Config{Prefix: prefix})
	fresh := open(t, etcdstore.Config{Prefix: newPrefix()})
	storetest.CheckLegacy(t, old, fresh)
}
