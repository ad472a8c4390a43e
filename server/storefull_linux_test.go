package server_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/hpa-recommender/hpa-recommender/internal/testkit/smalldisk"
	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
	"github.com/hpa-recommender/hpa-recommender/server"
	"github.com/hpa-recommender/hpa-recommender/server/servertest"
	"github.com/hpa-recommender/hpa-recommender/store/boltstore"
)

// TestStoreDiskFull: a server whose bbolt file is on a real 1 MiB tmpfs, loaded until the disk
// is full, answers ResourceExhausted (reason STORE_FULL, a RetryInfo) with a message naming
// the file and none of the driver's text, health goes NOT_SERVING, the metrics say both
// (hpa_recommender_store_errors_total{error="no_space"}, hpa_recommender_store_up 0), and
// every target whose Recommend succeeded still reads back.
func TestStoreDiskFull(t *testing.T) {
	dir, child := smalldisk.Dir(t, "1m")
	if !child {
		return // the child process ran the test
	}
	path := filepath.Join(dir, "hpa.db")
	st, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	cfg := server.DefaultConfig()
	cfg.BoltPath = path
	reg := prometheus.NewRegistry()
	addr, stop := servertest.Start(t, cfg, server.Deps{Store: st, Registry: reg})
	t.Cleanup(stop)
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	c := pb.NewRecommenderServiceClient(conn)

	var (
		mu    sync.Mutex
		acked []*pb.TargetRef
		full  error
	)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20000; i++ {
				mu.Lock()
				done := full != nil
				mu.Unlock()
				if done {
					return
				}
				req := fullDiskRequest(t, fmt.Sprintf("web-%d-%d", w, i))
				_, err := c.Recommend(context.Background(), req)
				mu.Lock()
				if err != nil {
					if full == nil {
						full = err
					}
				} else {
					acked = append(acked, req.Target)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	t.Logf("%d Recommend calls succeeded before: %v", len(acked), full)
	st2 := status.Convert(full)
	if st2.Code() != codes.ResourceExhausted || !strings.Contains(st2.Message(), path) || strings.Contains(st2.Message(), "no space left on device") {
		t.Fatalf("Recommend on a full disk: %v; want ResourceExhausted naming %s, without the driver's text", full, path)
	}
	reason, retry := "", time.Duration(0)
	for _, d := range st2.Details() {
		switch d := d.(type) {
		case *errdetails.ErrorInfo:
			reason = d.GetReason()
		case *errdetails.RetryInfo:
			retry = d.GetRetryDelay().AsDuration()
		}
	}
	if reason != server.ReasonStoreFull || retry <= 0 {
		t.Errorf("details: reason %q, retry %s; want %q and a retry delay", reason, retry, server.ReasonStoreFull)
	}
	hc := healthpb.NewHealthClient(conn)
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := hc.Check(t.Context(), &healthpb.HealthCheckRequest{})
		if err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_NOT_SERVING {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("health still %v (%v) 30 s after the disk was full", resp.GetStatus(), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got := gathered(t, reg, "hpa_recommender_store_errors_total", "no_space"); got < 1 {
		t.Errorf(`hpa_recommender_store_errors_total{error="no_space"} = %v, want at least 1`, got)
	}
	if got := gathered(t, reg, "hpa_recommender_store_errors_total", "unavailable"); got != 0 {
		t.Errorf(`hpa_recommender_store_errors_total{error="unavailable"} = %v, want 0`, got)
	}
	if got := gathered(t, reg, "hpa_recommender_store_up", ""); got != 0 {
		t.Errorf("hpa_recommender_store_up = %v once health is NOT_SERVING, want 0", got)
	}
	for _, ref := range acked {
		if _, err := c.GetTarget(t.Context(), &pb.GetTargetRequest{Target: ref}); err != nil {
			t.Fatalf("GetTarget(%v) after the disk was full: %v", ref, err)
		}
	}
}

// gathered is the value of the series of family name on reg whose only label value is label
// (empty: the series without labels); it fails the test when there is none.
func gathered(t *testing.T, reg *prometheus.Registry, name, label string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			var v string
			if lp := m.GetLabel(); len(lp) == 1 {
				v = lp[0].GetValue()
			}
			if v != label {
				continue
			}
			if c := m.GetCounter(); c != nil {
				return c.GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	t.Fatalf("no series %s{%q} on the registry", name, label)
	return 0
}

func fullDiskRequest(t *testing.T, name string) *pb.RecommendRequest {
	t.Helper()
	var req pb.RecommendRequest
	err := protojson.Unmarshal([]byte(`{
	  "target": {"cluster": "c1", "namespace": "shop", "name": "`+name+`"},
	  "spec": {"minReplicas": 1, "maxReplicas": 20,
	    "metrics": [{"type": "External", "external": {"metric": {"name": "queue"}, "target": {"type": "AverageValue", "averageValue": "10"}}}]},
	  "currentReplicas": 2,
	  "metrics": [{"values": ["30"]}]
	}`), &req)
	if err != nil {
		t.Fatal(err)
	}
	return &req
}
