package etcdstore

import (
	"fmt"
	"testing"

	"go.etcd.io/etcd/api/v3/mvccpb"
)

// TestRecentHitsWhenFleetExceedsIt: a replica deciding 2.5 times as many targets as it keeps
// records, each in turn (as once per sync period), still starts most of the decisions it can
// from a kept record: near the share of targets kept (0.4), not the ~0.1 that replacing an
// entry at every miss gives.
func TestRecentHitsWhenFleetExceedsIt(t *testing.T) {
	const kept, targets, rounds = 400, 1000, 30
	r := newRecent(kept)
	kv := &mvccpb.KeyValue{Value: []byte("{}"), ModRevision: 1}
	hits, calls := 0, 0
	for round := range rounds {
		for i := range targets {
			k := fmt.Sprintf("t%d", i)
			if r.get(k) != nil && round >= 10 { // the first rounds fill the map
				hits++
			}
			if round >= 10 {
				calls++
			}
			r.saw(k, kv)
		}
		if n := r.len(); n > kept {
			t.Fatalf("%d records kept, want at most %d", n, kept)
		}
	}
	share := float64(hits) / float64(calls)
	t.Logf("%.2f of the decisions started from a kept record", share)
	if share < 0.3 {
		t.Errorf("%.2f of the decisions started from a kept record, want at least 0.3 (0.4 kept)", share)
	}
}
