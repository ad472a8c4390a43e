//go:build crashtest

package main_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hpa-recommender/hpa-recommender/internal/workload"
	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
	"github.com/hpa-recommender/hpa-recommender/store"
	"github.com/hpa-recommender/hpa-recommender/store/boltstore"
	"github.com/hpa-recommender/hpa-recommender/store/etcdstore"
)

// ledger is what the service acknowledged during one life of the process.
type ledger struct {
	mu sync.Mutex
	// decided is the decision time of the latest acknowledged Recommend per target.
	decided map[int]time.Time
	// scaled are the recommendation ids of acknowledged scale decisions per target; reported
	// those whose ReportScale was acknowledged.
	scaled, reported map[int][]string
	// scaledAt is the decision time of each acknowledged scale decision, by id.
	scaledAt map[string]time.Time
	// acked counts the acknowledged calls, Recommend and ReportScale.
	acked int
}

func newLedger() *ledger {
	return &ledger{decided: map[int]time.Time{}, scaled: map[int][]string{}, reported: map[int][]string{}, scaledAt: map[string]time.Time{}}
}

// TestCrashLoop kills the real binary with SIGKILL at random moments while 8 callers load it
// with Recommend and ReportScale, CRASHTEST_ITERATIONS times (default 20), and after each kill
// opens the bbolt file the dead process left and checks that: bbolt's consistency check
// passes; every target has a last decision at least as recent as the last one acknowledged;
// every acknowledged scale decision is pending or reported; every acknowledged ReportScale is
// reported; the decision log holds what was acknowledged (verifyLog). After each restart the service answers GetTarget with what the file holds and
// keeps deciding. Run it with make crashtest; CRASHTEST_SEED repeats a run.
func TestCrashLoop(t *testing.T) {
	iterations := envInt(t, "CRASHTEST_ITERATIONS", 20)
	seed := uint64(envInt(t, "CRASHTEST_SEED", int(time.Now().UnixNano()%1e9)))
	t.Logf("seed %d (CRASHTEST_SEED=%d repeats this run), %d iterations", seed, seed, iterations)
	rng := rand.New(rand.NewPCG(seed, 0))
	db := filepath.Join(t.TempDir(), "crash.db")
	const targets = 40
	wl := workload.NewWorkload("crash", "crash", targets)
	var lastSeen map[int]time.Time // decision times the file held after the previous kill
	var totalDecided, totalReported int
	for it := range iterations {
		p := startBinary(t, "--store", "bolt", "--bolt-path", db)
		cl := pb.NewRecommenderServiceClient(dial(t, p.addr))
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
		wait := runLoad(ctx, wl, led, targets, func() pb.RecommenderServiceClient { return cl })
		time.Sleep(time.Duration(200+rng.IntN(1300)) * time.Millisecond)
		p.kill9(t)
		cancel()
		wait()

		lastSeen = verifyFile(t, it, db, wl, led)
		for _, ids := range led.reported {
			totalReported += len(ids)
		}
		totalDecided += len(led.decided)
	}
	t.Logf("%d kills; verified %d targets' latest acknowledged decisions and %d acknowledged scale reports", iterations, totalDecided, totalReported)
}

// verifyFile opens the bbolt file a killed process left, runs bbolt's consistency check and
// checks the targets against the ledger (verifyStore).
func verifyFile(t *testing.T, it int, db string, wl *workload.Workload, led *ledger) map[int]time.Time {
	t.Helper()
	st, err := boltstore.Open(db, boltstore.Options{})
	if err != nil {
		t.Fatalf("iteration %d: open the file the killed process left: %v", it, err)
	}
	defer st.Close()
	if err := st.Check(); err != nil {
		t.Fatalf("iteration %d: %v", it, err)
	}
	return verifyStore(t, it, st, wl, led)
}

// verifyStore checks a store against what the service acknowledged: every target has a last
// decision at least as recent as the last one acknowledged, every acknowledged scale decision
// is pending or reported, and every acknowledged ReportScale is reported. It returns each
// ledger target's stored last decision time.
func verifyStore(t *testing.T, it int, st store.Store, wl *workload.Workload, led *ledger) map[int]time.Time {
	t.Helper()
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
		verifyLog(t, it, st, i, ref, acked, led)
	}
	return seen
}

// verifyLog checks a target's decision log against what the service acknowledged: its newest
// entry is at least as recent as the last decision acknowledged, every acknowledged scale
// decision no older than the oldest entry kept has its entry, and an acknowledged ReportScale's
// entry says succeeded.
func verifyLog(t *testing.T, it int, st store.Store, i int, ref *pb.TargetRef, acked time.Time, led *ledger) {
	t.Helper()
	key := store.Key{Cluster: ref.Cluster, Namespace: ref.Namespace, Name: ref.Name}
	entries, _, err := st.ListDecisions(t.Context(), key, store.DecisionListOptions{PageSize: store.MaxPageSize})
	if err != nil {
		t.Fatalf("iteration %d: bench-%d: ListDecisions: %v", it, i, err)
	}
	if len(entries) == 0 || entries[0].Until.Before(acked) {
		t.Errorf("iteration %d: bench-%d: the decision log lacks the acknowledged decision at %v", it, i, acked)
		return
	}
	oldest := entries[len(entries)-1].Time
	byID := map[string]store.DecisionEntry{}
	for _, e := range entries {
		if e.RecommendationID != "" {
			byID[e.RecommendationID] = e
		}
	}
	for _, id := range led.scaled[i] {
		if _, ok := byID[id]; !ok && !led.scaledAt[id].Before(oldest) {
			t.Errorf("iteration %d: bench-%d: acknowledged scale decision %s at %v is not in the decision log (oldest entry %v)",
				it, i, id, led.scaledAt[id], oldest)
		}
	}
	for _, id := range led.reported[i] {
		if e, ok := byID[id]; ok && e.Outcome != store.OutcomeSucceeded {
			t.Errorf("iteration %d: bench-%d: acknowledged ReportScale of %s: its log entry says %q", it, i, id, e.Outcome)
		}
	}
}

// runLoad has 8 callers send Recommend, and ReportScale for the decisions that scale, each call
// to the client pick returns, until ctx ends; it records what was acknowledged in led. The
// returned function waits for the callers.
func runLoad(ctx context.Context, wl *workload.Workload, led *ledger, targets int, pick func() pb.RecommenderServiceClient) func() {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1) % int64(targets))
				req := wl.Request(i, time.Now())
				resp, err := pick().Recommend(ctx, req)
				if err != nil {
					continue // the process is gone or going
				}
				led.mu.Lock()
				led.acked++
				if at := resp.GetDecisionTime().AsTime(); at.After(led.decided[i]) {
					led.decided[i] = at
				}
				id := resp.GetRecommendationId()
				if resp.GetScale() {
					led.scaled[i] = append(led.scaled[i], id)
					led.scaledAt[id] = resp.GetDecisionTime().AsTime()
				}
				led.mu.Unlock()
				if !resp.GetScale() {
					continue
				}
				if _, err := pick().ReportScale(ctx, &pb.ReportScaleRequest{Target: req.Target, RecommendationId: id, Succeeded: true}); err != nil {
					continue
				}
				led.mu.Lock()
				led.reported[i] = append(led.reported[i], id)
				led.acked++
				led.mu.Unlock()
				wl.Applied(i, resp.GetDesiredReplicas())
			}
		}()
	}
	return wg.Wait
}

// TestCrashLoopEtcd is TestCrashLoop for one etcd-backed replica of three, each compacting
// etcd's history every 500 ms: callers spread
// over all three, one replica is killed with SIGKILL at a random moment, the other two keep
// serving (the test requires acknowledged calls after the kill), and then the store in etcd
// is checked against everything acknowledged (verifyStore) before the killed replica restarts
// (on a port of its own: the test's callers are given its new address); CRASHTEST_ITERATIONS times (default 20).
func TestCrashLoopEtcd(t *testing.T) {
	iterations := envInt(t, "CRASHTEST_ITERATIONS", 20)
	seed := uint64(envInt(t, "CRASHTEST_SEED", int(time.Now().UnixNano()%1e9)))
	t.Logf("seed %d (CRASHTEST_SEED=%d repeats this run), %d iterations", seed, seed, iterations)
	rng := rand.New(rand.NewPCG(seed, 1))
	// The replicas compact etcd's history every 500 ms, so kills also land during compactions.
	compaction := []string{"--etcd-compaction-interval", "500ms"}
	reps, prefix := startReplicas(t, 3, fmt.Sprintf("/crash-%d", seed), compaction...)
	endpoint := sharedEtcd(t)
	args := append([]string{"--store", "etcd", "--etcd-endpoints", endpoint, "--etcd-prefix", prefix}, compaction...)
	st, err := etcdstore.New(t.Context(), etcdstore.Config{Endpoints: []string{endpoint}, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	raw := rawEtcd(t, endpoint)
	before, err := raw.Get(t.Context(), prefix, clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	const targets = 40
	wl := workload.NewWorkload("crash", "crash", targets)
	var mu sync.Mutex // guards reps' clients while a replica restarts
	var totalDecided, totalReported, afterKill int
	for it := range iterations {
		led := newLedger()
		ctx, cancel := context.WithCancel(t.Context())
		wait := runLoad(ctx, wl, led, targets, func() pb.RecommenderServiceClient {
			mu.Lock()
			defer mu.Unlock()
			return reps[rand.IntN(len(reps))].client // the global source: callers run concurrently
		})
		time.Sleep(time.Duration(200+rng.IntN(1300)) * time.Millisecond)
		mu.Lock()
		victim := rng.IntN(len(reps))
		mu.Unlock()
		reps[victim].p.kill9(t)
		led.mu.Lock()
		before := led.acked
		led.mu.Unlock()
		time.Sleep(500 * time.Millisecond)
		cancel()
		wait()
		if led.acked == before {
			t.Errorf("iteration %d: the surviving replicas acknowledged no call after the kill", it)
		}
		afterKill += led.acked - before

		verifyStore(t, it, st, wl, led)
		for _, ids := range led.reported {
			totalReported += len(ids)
		}
		totalDecided += len(led.decided)

		p := startBinary(t, args...)
		mu.Lock()
		reps[victim] = &replica{p: p, client: pb.NewRecommenderServiceClient(dial(t, p.addr))}
		mu.Unlock()
	}
	t.Logf("%d kills; verified %d targets' latest acknowledged decisions and %d acknowledged scale reports (%d calls acknowledged by the survivors after the kills)",
		iterations, totalDecided, totalReported, afterKill)
	// The kills landed while the replicas compacted: the history of before the load is gone.
	if _, err := raw.Get(t.Context(), prefix, clientv3.WithRev(before.Header.Revision), clientv3.WithCountOnly()); !errors.Is(err, rpctypes.ErrCompacted) {
		t.Errorf("revision %d, before the load, still readable after it (%v): the replicas did not compact", before.Header.Revision, err)
	}
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
