//go:build crashtest

package main_test

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hpa-recommender/hpa-recommender/clients/bench"
	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
	"github.com/hpa-recommender/hpa-recommender/store"
	"github.com/hpa-recommender/hpa-recommender/store/boltstore"
)

// ledger is what the service acknowledged during one life of the process.
type ledger struct {
	mu sync.Mutex
	// decided is the decision time of the latest acknowledged Recommend per target.
	decided map[int]time.Time
	// scaled are the recommendation ids of acknowledged scale decisions per target; reported
	// those whose ReportScale was acknowledged.
	scaled, reported map[int][]string
}

func newLedger() *ledger {
	return &ledger{decided: map[int]time.Time{}, scaled: map[int][]string{}, reported: map[int][]string{}}
}

// TestCrashLoop kills the real binary with SIGKILL at random moments while 8 callers load it
// with Recommend and ReportScale, CRASHTEST_ITERATIONS times (default 20), and after each kill
// opens the bbolt file the dead process left and checks that: bbolt's consistency check
// passes; every target has a last decision at least as recent as the last one acknowledged;
// every acknowledged scale decision is pending or reported; every acknowledged ReportScale is
// reported. After each restart the service answers GetTarget with what the file holds and
// keeps deciding. Run it with make crashtest; CRASHTEST_SEED repeats a run.
func TestCrashLoop(t *testing.T) {
	iterations := envInt(t, "CRASHTEST_ITERATIONS", 20)
	seed := uint64(envInt(t, "CRASHTEST_SEED", int(time.Now().UnixNano()%1e9)))
	t.Logf("seed %d (CRASHTEST_SEED=%d repeats this run), %d iterations", seed, seed, iterations)
	rng := rand.New(rand.NewPCG(seed, 0))
	db := filepath.Join(t.TempDir(), "crash.db")
	addr := freeAddr(t)
	const targets = 40
	wl := bench.NewWorkload("crash", "crash", targets)
	var lastSeen map[int]time.Time // decision times the file held after the previous kill
	var totalDecided, totalReported int
	for it := range iterations {
		p := startBinaryAt(t, addr, "--store", "bolt", "--bolt-path", db)
		cl := pb.NewRecommenderServiceClient(dial(t, addr))
		for i, want := range lastSeen {
			got, err := cl.GetTarget(t.Context(), &pb.GetTargetRequest{Target: wl.Ref(i)})
			if err != nil {
				t.Fatalf("iteration %d: GetTarget(bench-%d) after restart: %v", it, i, err)
			}
			if at := got.GetLastDecision().GetTime().AsTime(); !at.Equal(want) {
				t.Errorf("iteration %d: bench-%d last decision at %v after restart, the file held %v", it, i, at, want)
			}
		}

		led := newLedger()
		ctx, cancel := context.WithCancel(t.Context())
		var next atomic.Int64
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					i := int(next.Add(1) % targets)
					req := wl.Request(i, time.Now())
					resp, err := cl.Recommend(ctx, req)
					if err != nil {
						continue // the process is gone or going
					}
					led.mu.Lock()
					if at := resp.GetDecisionTime().AsTime(); at.After(led.decided[i]) {
						led.decided[i] = at
					}
					id := resp.GetRecommendationId()
					if resp.GetScale() {
						led.scaled[i] = append(led.scaled[i], id)
					}
					led.mu.Unlock()
					if !resp.GetScale() {
						continue
					}
					_, err = cl.ReportScale(ctx, &pb.ReportScaleRequest{Target: req.Target, RecommendationId: id, Succeeded: true})
					if err != nil {
						continue
					}
					led.mu.Lock()
					led.reported[i] = append(led.reported[i], id)
					led.mu.Unlock()
					wl.Applied(i, resp.GetDesiredReplicas())
				}
			}()
		}
		time.Sleep(time.Duration(200+rng.IntN(1300)) * time.Millisecond)
		p.kill9(t)
		cancel()
		wg.Wait()

		lastSeen = verifyFile(t, it, db, wl, led)
		for _, ids := range led.reported {
			totalReported += len(ids)
		}
		totalDecided += len(led.decided)
	}
	t.Logf("%d kills; verified %d targets' latest acknowledged decisions and %d acknowledged scale reports", iterations, totalDecided, totalReported)
}

// verifyFile opens the store a killed process left and checks it against the ledger; it
// returns each ledger target's stored last decision time.
func verifyFile(t *testing.T, it int, db string, wl *bench.Workload, led *ledger) map[int]time.Time {
	t.Helper()
	st, err := boltstore.Open(db, boltstore.Options{})
	if err != nil {
		t.Fatalf("iteration %d: open the file the killed process left: %v", it, err)
	}
	defer st.Close()
	if err := st.Check(); err != nil {
		t.Fatalf("iteration %d: %v", it, err)
	}
	seen := map[int]time.Time{}
	for i, acked := range led.decided {
		ref := wl.Ref(i)
		tgt, err := st.Get(t.Context(), store.Key{Cluster: ref.Cluster, Namespace: ref.Namespace, Name: ref.Name})
		if err != nil {
			t.Fatalf("iteration %d: bench-%d was acknowledged and is gone: %v", it, i, err)
		}
		if tgt.LastDecision == nil || tgt.LastDecision.Decision.Time.Before(acked) {
			t.Errorf("iteration %d: bench-%d: stored last decision %+v older than the acknowledged one at %v", it, i, tgt.LastDecision, acked)
			continue
		}
		seen[i] = tgt.LastDecision.Decision.Time
		for _, id := range led.reported[i] {
			if !tgt.HasReported(id) {
				t.Errorf("iteration %d: bench-%d: acknowledged ReportScale of %s is not recorded", it, i, id)
			}
		}
		for _, id := range led.scaled[i] {
			pending := slices.ContainsFunc(tgt.Pending, func(p store.PendingDecision) bool { return p.RecommendationID == id })
			if !pending && !tgt.HasReported(id) {
				t.Errorf("iteration %d: bench-%d: acknowledged scale decision %s is neither pending nor reported", it, i, id)
			}
		}
	}
	return seen
}

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return n
}
