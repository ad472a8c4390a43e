package server_test

import (
	"bytes"
	"path/filepath"
	"runtime/trace"
	"testing"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
	"github.com/hpa-recommender/hpa-recommender/server"
	"github.com/hpa-recommender/hpa-recommender/server/servertest"
	"github.com/hpa-recommender/hpa-recommender/store/boltstore"
)

// TestTraceRegions: in an execution trace, each call is a region named by its full method and
// each write's wait for the bbolt store's commit (DB.Batch) a region of its own
// (boltstore.CommitRegion), which go tool trace's regions page groups. (The trace's string table holds the names as they are.)
func TestTraceRegions(t *testing.T) {
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "x.db"), boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	cfg := server.DefaultConfig()
	cfg.MetricsListen = ""
	addr, stop := servertest.Start(t, cfg, server.Deps{Store: st})
	t.Cleanup(stop)
	c := plaintext(t, addr)

	var out bytes.Buffer
	if err := trace.Start(&out); err != nil {
		t.Fatal(err)
	}
	_, err = c.Recommend(t.Context(), externalRequest(t, 2, "20"))
	trace.Stop()
	if err != nil {
		t.Fatal(err)
	}
	for _, region := range []string{pb.RecommenderService_Recommend_FullMethodName, boltstore.CommitRegion} {
		if !bytes.Contains(out.Bytes(), []byte(region)) {
			t.Errorf("the trace of a Recommend has no region %q", region)
		}
	}
}
