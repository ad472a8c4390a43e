package main_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/hpa-recommender/hpa-recommender/internal/apiconv"
	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
	"github.com/hpa-recommender/hpa-recommender/recommender"
)

// These tests run several hpa-recommender processes on one etcd and check that they behave as
// one service: a target's history is shared (whichever replica a call lands on), ReportScale is
// idempotent across replicas, and killing a replica loses nothing it acknowledged.

var (
	etcdOnce     sync.Once
	etcdServer   *embed.Etcd
	etcdEndpoint string
	etcdErr      error
)

// sharedEtcd returns the client URL of a single-member etcd embedded in the test process,
// started on first use and shared by this file's tests (each uses its own key prefix). It lives
// until TestMain stops it (stopSharedEtcd); its data sits next to the built binary, which
// TestMain then removes.
func sharedEtcd(t *testing.T) string {
	t.Helper()
	etcdOnce.Do(func() {
		cfg := embed.NewConfig()
		cfg.Dir = filepath.Join(filepath.Dir(binary), "etcd")
		cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
		cfg.UnsafeNoFsync = true // throwaway data
		free, err := url.Parse("http://127.0.0.1:0")
		if err != nil {
			etcdErr = err
			return
		}
		cfg.ListenClientUrls = []url.URL{*free}
		cfg.ListenPeerUrls = []url.URL{*free}
		e, err := embed.StartEtcd(cfg)
		if err != nil {
			etcdErr = err
			return
		}
		select {
		case <-e.Server.ReadyNotify():
			etcdServer = e
			etcdEndpoint = "http://" + e.Clients[0].Addr().String()
		case err := <-e.Err():
			e.Close()
			etcdErr = err
		case <-time.After(60 * time.Second):
			e.Close()
			etcdErr = errors.New("embedded etcd not ready after 60s")
		}
	})
	if etcdErr != nil {
		t.Fatalf("start embedded etcd: %v", etcdErr)
	}
	return etcdEndpoint
}

// rawEtcd is a plain client of the etcd at endpoint, closed when the test ends: to look under
// the replicas.
func rawEtcd(t *testing.T, endpoint string) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// stopSharedEtcd stops the shared etcd, if one was started, before its data directory goes:
// a running etcd treats a vanished data directory as fatal and exits the process, which
// failed a test binary once after every test had passed.
func stopSharedEtcd() {
	if etcdServer != nil {
		etcdServer.Close()
	}
}

// replica is one running hpa-recommender with its client.
type replica struct {
	p      *process
	client pb.RecommenderServiceClient
}

// startReplicas starts n hpa-recommender processes on the shared etcd under one prefix: name
// followed by a suffix of this run alone (the etcd outlives one test: go test -count=N runs it
// again), each with the extra flags. It returns the replicas and that prefix.
func startReplicas(t *testing.T, n int, name string, extra ...string) (reps []*replica, prefix string) {
	t.Helper()
	endpoint := sharedEtcd(t)
	prefix = fmt.Sprintf("%s-%d", name, time.Now().UnixNano())
	reps = make([]*replica, n)
	for i := range reps {
		p := startBinary(t, append([]string{"--store", "etcd", "--etcd-endpoints", endpoint, "--etcd-prefix", prefix}, extra...)...)
		reps[i] = &replica{p: p, client: pb.NewRecommenderServiceClient(dial(t, p.addr))}
	}
	return reps, prefix
}

// mrSpec builds an HPA spec with one External metric "queue" (AverageValue 10 per pod) and the
// given behavior (protojson).
func mrSpec(t *testing.T, behavior string) *pb.HorizontalPodAutoscalerSpec {
	t.Helper()
	spec := &pb.HorizontalPodAutoscalerSpec{}
	js := `{"minReplicas": 1, "maxReplicas": 30,
	  "metrics": [{"type": "External", "external": {"metric": {"name": "queue"}, "target": {"type": "AverageValue", "averageValue": "10"}}}],
	  "behavior": ` + behavior + `}`
	if err := protojson.Unmarshal([]byte(js), spec); err != nil {
		t.Fatal(err)
	}
	return spec
}

func queue(v int) []*pb.MetricObservation {
	return []*pb.MetricObservation{{Values: []string{fmt.Sprint(v)}}}
}

// event is a scale event as the history stores it.
type event struct {
	at     time.Time
	change int32
}

func (e event) String() string {
	return fmt.Sprintf("%d@%s", e.change, e.at.Format("15:04:05.000000000"))
}

func eventsOf(evs []*pb.ScaleEvent) []event {
	out := []event{}
	for _, e := range evs {
		out = append(out, event{e.GetTime().AsTime(), e.GetChange()})
	}
	return out
}

// storeEvent models R-HIST's event storage: a new event takes the slot of the last event
// older than the direction's longest policy period, else it is appended.
func storeEvent(events []event, e event, longestPeriod time.Duration) []event {
	cutoff := e.at.Add(-longestPeriod)
	idx := -1
	for i, old := range events {
		if old.at.Before(cutoff) {
			idx = i
		}
	}
	if idx >= 0 {
		events[idx] = e
		return events
	}
	return append(events, e)
}

// step is one acknowledged Recommend of a target's timeline.
type step struct {
	value   int
	current int32
	resp    *pb.RecommendResponse
}

// TestReplicasShareHistoryThroughEtcd drives 8 targets in parallel through timelines whose
// every call goes to a random one of 3 replicas sharing etcd, and checks that each target ends
// up exactly as if one process had served it: every decision equals a Simulate replay of the
// same observations at the same decision times, the stored history equals the replay's, every
// recorded scale is stored exactly once (with the slot reuse of the short policy periods
// modelled), and a ReportScale sent twice to two replicas at once is recorded by exactly one.
func TestReplicasShareHistoryThroughEtcd(t *testing.T) {
	const (
		nTargets = 8
		nSteps   = 18
	)
	replicas, _ := startReplicas(t, 3, "/mr-share")
	// Policy periods of 2s against ~300ms between steps: the limits bind, events expire and
	// their slots are reused; a 1s scale-down window holds some scale-downs back.
	const behavior = `{
	  "scaleUp": {"stabilizationWindowSeconds": 0, "policies": [{"type": "Pods", "value": 3, "periodSeconds": 2}]},
	  "scaleDown": {"stabilizationWindowSeconds": 1, "policies": [{"type": "Pods", "value": 2, "periodSeconds": 2}]}
	}`
	const upPeriod, downPeriod = 2 * time.Second, 2 * time.Second
	const downWindow = time.Second // the longest stabilization window
	spec := mrSpec(t, behavior)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)

	type result struct {
		ref        *pb.TargetRef
		initial    int32
		steps      []step
		up, down   []event // modelled stored events
		recordedUp int     // ReportScale answered recorded=true, per direction
		recordedDn int
		doubles    int // ReportScales sent twice at once
	}
	results := make([]*result, nTargets)
	var wg sync.WaitGroup
	for i := range nTargets {
		res := &result{ref: &pb.TargetRef{Cluster: "mr", Namespace: "share", Name: fmt.Sprintf("t%d", i)}, initial: 3}
		results[i] = res
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(i)))
			current := res.initial
			value := 30
			for s := range nSteps {
				// A random walk over the queue length, with jumps so both directions and both
				// rate limits come into play.
				switch rng.IntN(4) {
				case 0:
					value = []int{5 + rng.IntN(30), 100 + rng.IntN(150)}[rng.IntN(2)]
				default:
					value = max(1, value+rng.IntN(80)-40)
				}
				rep := replicas[rng.IntN(len(replicas))]
				resp, err := rep.client.Recommend(t.Context(), &pb.RecommendRequest{
					Target: res.ref, Spec: spec, CurrentReplicas: current, Metrics: queue(value)})
				if err != nil {
					t.Errorf("%s step %d: Recommend: %v", res.ref.Name, s, err)
					return
				}
				res.steps = append(res.steps, step{value: value, current: current, resp: resp})
				if resp.Scale {
					report := &pb.ReportScaleRequest{Target: res.ref, RecommendationId: resp.RecommendationId, Succeeded: true}
					n := 1
					if rng.IntN(3) == 0 {
						n = 2
						res.doubles++
					}
					first := rng.IntN(len(replicas))
					recorded := make([]bool, n)
					errs := make([]error, n)
					var rwg sync.WaitGroup
					for k := range n {
						rwg.Add(1)
						go func() {
							defer rwg.Done()
							r, err := replicas[(first+k)%len(replicas)].client.ReportScale(t.Context(), report)
							recorded[k], errs[k] = r.GetRecorded(), err
						}()
					}
					rwg.Wait()
					if err := errors.Join(errs...); err != nil {
						t.Errorf("%s step %d: ReportScale: %v", res.ref.Name, s, err)
						return
					}
					if got := countTrue(recorded); got != 1 {
						t.Errorf("%s step %d: %d ReportScale calls to different replicas answered recorded=%v; want exactly one true",
							res.ref.Name, s, n, recorded)
					}
					ev := event{resp.DecisionTime.AsTime(), resp.DesiredReplicas - current}
					if ev.change > 0 {
						res.recordedUp++
						res.up = storeEvent(res.up, ev, upPeriod)
					} else {
						ev.change = -ev.change
						res.recordedDn++
						res.down = storeEvent(res.down, ev, downPeriod)
					}
					current = resp.DesiredReplicas
				}
				time.Sleep(time.Duration(200+rng.IntN(200)) * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}

	var totalUp, totalDown, totalDoubles, limited, reused int
	for _, res := range results {
		name := res.ref.Name
		rep := replicas[rand.IntN(len(replicas))]
		got, err := rep.client.GetTarget(t.Context(), &pb.GetTargetRequest{Target: res.ref})
		if err != nil {
			t.Fatalf("%s: GetTarget: %v", name, err)
		}
		// Decisions: one process fed the same observations at the same times.
		sreq := &pb.SimulateRequest{Spec: spec, InitialReplicas: res.initial}
		var live []int32
		for _, s := range res.steps {
			sreq.Steps = append(sreq.Steps, &pb.SimulateStep{Time: s.resp.DecisionTime, CurrentReplicas: proto.Int32(s.current), Metrics: queue(s.value)})
			live = append(live, s.resp.DesiredReplicas)
			if s.resp.GetExplanation().GetLimitingPolicy() != "" {
				limited++
			}
		}
		sim, err := rep.client.Simulate(t.Context(), sreq)
		if err != nil {
			t.Fatalf("%s: Simulate: %v", name, err)
		}
		var want []int32
		for _, s := range sim.Steps {
			want = append(want, s.DesiredReplicas)
		}
		if diff := cmp.Diff(want, live); diff != "" {
			t.Errorf("%s: decisions through 3 replicas differ from a single replay (-replay +live):\n%s", name, diff)
		}
		// Events: every recorded scale exactly once, where the model of slot reuse puts it.
		gotUp, gotDown := eventsOf(got.GetHistory().GetScaleUpEvents()), eventsOf(got.GetHistory().GetScaleDownEvents())
		if diff := cmp.Diff(append([]event{}, res.up...), gotUp, cmp.Comparer(func(a, b event) bool { return a.at.Equal(b.at) && a.change == b.change })); diff != "" {
			t.Errorf("%s: stored scale-up events differ from the %d recorded ReportScales (-want +got):\n%s", name, res.recordedUp, diff)
		}
		if diff := cmp.Diff(append([]event{}, res.down...), gotDown, cmp.Comparer(func(a, b event) bool { return a.at.Equal(b.at) && a.change == b.change })); diff != "" {
			t.Errorf("%s: stored scale-down events differ from the %d recorded ReportScales (-want +got):\n%s", name, res.recordedDn, diff)
		}
		if reusedHere := res.recordedUp + res.recordedDn - len(gotUp) - len(gotDown); reusedHere >= 0 {
			reused += reusedHere
		}
		// The stored history is the replay's: the same events, and the same recommendations as
		// far as any decision can tell. The lists themselves differ: the service prunes after
		// every call (recommender.Prune), which changes which expired slot the next
		// recommendation reuses; Simulate returns its history unpruned.
		last := res.steps[len(res.steps)-1].resp
		end := last.DecisionTime.AsTime()
		if diff := cmp.Diff(windowRecs(t, sim.GetHistory(), end, downWindow), windowRecs(t, got.GetHistory(), end, downWindow)); diff != "" {
			t.Errorf("%s: stored recommendations decide differently from a single replay's (-replay +stored):\n%s", name, diff)
		}
		if diff := cmp.Diff(withoutRecommendations(sim.GetHistory()), withoutRecommendations(got.GetHistory()), protocmp.Transform()); diff != "" {
			t.Errorf("%s: stored events differ from a single replay's (-replay +stored):\n%s", name, diff)
		}
		if ld := got.GetLastDecision(); !ld.GetTime().AsTime().Equal(last.DecisionTime.AsTime()) || ld.GetResponse().GetDesiredReplicas() != last.DesiredReplicas {
			t.Errorf("%s: last decision %v, want the last acknowledged one (%v, %d)", name, ld, last.DecisionTime.AsTime(), last.DesiredReplicas)
		}
		if n := len(got.GetPendingDecisions()); n != 0 {
			t.Errorf("%s: %d decisions still pending after every scale was reported: %v", name, n, got.GetPendingDecisions())
		}
		totalUp += res.recordedUp
		totalDown += res.recordedDn
		totalDoubles += res.doubles
	}
	t.Logf("%d targets x %d steps: %d scale-ups, %d scale-downs recorded (%d event slots reused), %d decisions rate-limited, %d ReportScales sent twice",
		nTargets, nSteps, totalUp, totalDown, reused, limited, totalDoubles)
	// The timeline must exercise what the test claims to check.
	if totalUp == 0 || totalDown == 0 || limited == 0 || totalDoubles == 0 {
		t.Errorf("timeline too tame: %d scale-ups, %d scale-downs, %d rate-limited, %d doubled reports", totalUp, totalDown, limited, totalDoubles)
	}
	for _, r := range replicas {
		r.p.term(t)
	}
}

// windowRecs returns what of h's recommendations a decision at at can read with stabilization
// windows up to window: those newer than at-window, less the ones that later ones equal or
// bracket (they are never a window's maximum or minimum), in time order.
func windowRecs(t *testing.T, h *pb.History, at time.Time, window time.Duration) []recommender.Recommendation {
	t.Helper()
	st, violations := apiconv.StateFromProto("history", h)
	if len(violations) > 0 {
		t.Fatalf("history does not convert: %v", violations)
	}
	var recent []recommender.Recommendation
	for _, r := range st.History.Recommendations {
		if r.Time.After(at.Add(-window)) {
			recent = append(recent, r)
		}
	}
	kept := recommender.Prune(recommender.History{Recommendations: recent}, at, recommender.DefaultOptions()).Recommendations
	slices.SortFunc(kept, func(a, b recommender.Recommendation) int { return a.Time.Compare(b.Time) })
	return kept
}

// withoutRecommendations is a copy of h without its recommendations: its events and flags.
func withoutRecommendations(h *pb.History) *pb.History {
	c := proto.CloneOf(h)
	c.Recommendations = nil
	return c
}

// dominated reports whether recs hold, after at, recommendations at or above replicas and at or
// below it: then a recommendation of replicas at at changes no window's maximum or minimum.
func dominated(recs []*pb.HistoryRecommendation, at time.Time, replicas int32) bool {
	above, below := false, false
	for _, r := range recs {
		if r.GetTime().AsTime().After(at) {
			above = above || r.GetReplicas() >= replicas
			below = below || r.GetReplicas() <= replicas
		}
	}
	return above && below
}

func countTrue(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// ack is one acknowledged Recommend.
type ack struct {
	at       time.Time
	current  int32
	desired  int32
	proposal int32
	id       string
	reported bool // a ReportScale for it was acknowledged (recorded true or false)
}

// TestKillingOneReplicaLosesNothingAcknowledged loads 3 replicas sharing etcd with 6 targets
// calling Recommend and ReportScale on random replicas, kills one replica with SIGKILL in the
// middle, and retries every failed call on another replica. Afterwards every target's last
// decision is its last acknowledged Recommend, and everything acknowledged that the history
// must still hold is there exactly once: recommendations and scale events younger than the
// stabilization window and policy period (5s) at the end, which spans the kill; older entries
// may legitimately have had their slots reused. No stored event in that span is one nobody
// acknowledged.
func TestKillingOneReplicaLosesNothingAcknowledged(t *testing.T) {
	const (
		nTargets = 6
		run      = 9 * time.Second
		killAt   = 4500 * time.Millisecond
		window   = 5 * time.Second // the stabilization window and policy periods below
	)
	replicas, _ := startReplicas(t, 3, "/mr-kill")
	spec := mrSpec(t, `{
	  "scaleUp": {"stabilizationWindowSeconds": 0, "policies": [{"type": "Pods", "value": 4, "periodSeconds": 5}]},
	  "scaleDown": {"stabilizationWindowSeconds": 5, "policies": [{"type": "Pods", "value": 3, "periodSeconds": 5}]}
	}`)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	victim := rand.IntN(len(replicas))

	start := time.Now()
	var mu sync.Mutex
	failed := 0 // calls that failed and were retried on another replica
	// call runs fn on random replicas until one answers; it gives up (failing the test) after
	// 30 attempts or when the test ends. onFail, when set, gets the span of every failed attempt.
	call := func(rng *rand.Rand, what string, onFail func(from, to time.Time), fn func(ctx context.Context, c pb.RecommenderServiceClient) error) bool {
		var errs []error
		for range 30 {
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			from := time.Now()
			err := fn(ctx, replicas[rng.IntN(len(replicas))].client)
			cancel()
			if err == nil {
				return true
			}
			if onFail != nil {
				onFail(from, time.Now())
			}
			errs = append(errs, err)
			mu.Lock()
			failed++
			mu.Unlock()
			if t.Context().Err() != nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Errorf("%s: no replica answered: %v", what, errors.Join(errs...))
		return false
	}

	acks := make([][]ack, nTargets)
	// lostRecommends are the spans of failed Recommend attempts per target: each may or may not
	// have been applied.
	lostRecommends := make([][][2]time.Time, nTargets)
	lastEnd := make([]time.Time, nTargets)
	refs := make([]*pb.TargetRef, nTargets)
	var wg sync.WaitGroup
	for i := range nTargets {
		refs[i] = &pb.TargetRef{Cluster: "mr", Namespace: "kill", Name: fmt.Sprintf("t%d", i)}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { lastEnd[i] = time.Now() }()
			rng := rand.New(rand.NewPCG(seed, uint64(i)))
			ref := refs[i]
			current := int32(3)
			for s := 0; time.Since(start) < run; s++ {
				// High, then low long enough for the scale-down window to pass, then high again.
				value := 20 + rng.IntN(30)
				if el := time.Since(start); el < time.Second || el > 6500*time.Millisecond {
					value = 80 + rng.IntN(120)
				}
				req := &pb.RecommendRequest{Target: ref, Spec: spec, CurrentReplicas: current, Metrics: queue(value)}
				var resp *pb.RecommendResponse
				lost := func(from, to time.Time) { lostRecommends[i] = append(lostRecommends[i], [2]time.Time{from, to}) }
				if !call(rng, fmt.Sprintf("%s step %d Recommend", ref.Name, s), lost, func(ctx context.Context, c pb.RecommenderServiceClient) error {
					var err error
					resp, err = c.Recommend(ctx, req)
					return err
				}) {
					return
				}
				a := ack{at: resp.DecisionTime.AsTime(), current: current, desired: resp.DesiredReplicas,
					proposal: resp.GetExplanation().GetProposal(), id: resp.RecommendationId}
				if resp.Scale {
					rreq := &pb.ReportScaleRequest{Target: ref, RecommendationId: resp.RecommendationId, Succeeded: true}
					if !call(rng, fmt.Sprintf("%s step %d ReportScale", ref.Name, s), nil, func(ctx context.Context, c pb.RecommenderServiceClient) error {
						_, err := c.ReportScale(ctx, rreq)
						return err
					}) {
						return
					}
					a.reported = true
					current = resp.DesiredReplicas
				}
				acks[i] = append(acks[i], a)
				time.Sleep(time.Duration(60+rng.IntN(80)) * time.Millisecond)
			}
		}()
	}
	select {
	case <-time.After(killAt - time.Since(start)):
	case <-t.Context().Done():
	}
	replicas[victim].p.kill9(t)
	killedAt := time.Now()
	wg.Wait()
	if t.Failed() {
		return
	}
	if failed == 0 {
		t.Errorf("no call failed: the kill hit no load, the test proves nothing")
	}

	alive := replicas[(victim+1)%len(replicas)].client
	var checkedRecs, checkedEvents, upEvents, downEvents, acked int
	for i, ref := range refs {
		name := ref.Name
		got, err := alive.GetTarget(t.Context(), &pb.GetTargetRequest{Target: ref})
		if err != nil {
			t.Fatalf("%s: GetTarget: %v", name, err)
		}
		as := acks[i]
		acked += len(as)
		last := as[len(as)-1]
		ld := got.GetLastDecision()
		if !ld.GetTime().AsTime().Equal(last.at) || ld.GetResponse().GetDesiredReplicas() != last.desired || ld.GetResponse().GetRecommendationId() != last.id {
			t.Errorf("%s: last decision %v, want the last acknowledged one (%v, %d, %q)", name, ld, last.at, last.desired, last.id)
		}
		tail := lastEnd[i].Add(-window)
		if !tail.Before(killedAt) {
			t.Logf("%s: the checked span starts after the kill (%v after it)", name, tail.Sub(killedAt))
		}
		recs := got.GetHistory().GetRecommendations()
		stored := map[bool][]event{true: eventsOf(got.GetHistory().GetScaleUpEvents()), false: eventsOf(got.GetHistory().GetScaleDownEvents())}
		want := map[bool][]event{}
		for _, a := range as {
			if a.at.Before(tail) {
				continue
			}
			n := 0
			for _, r := range recs {
				if r.GetTime().AsTime().Equal(a.at) {
					n++
					if r.GetReplicas() != a.proposal {
						t.Errorf("%s: recommendation at %v is %d, the acknowledged decision proposed %d", name, a.at, r.GetReplicas(), a.proposal)
					}
				}
			}
			if n == 0 && dominated(recs, a.at, a.proposal) {
				// Pruned, as it must be: later recommendations equal or bracket it, so it can
				// decide no stabilization window (recommender.Prune).
				n = 1
			}
			if n != 1 {
				t.Errorf("%s: acknowledged recommendation at %v stored %d times, want once (or pruned as dominated)", name, a.at, n)
			}
			checkedRecs++
			if a.reported {
				up := a.desired > a.current
				e := event{a.at, a.desired - a.current}
				if !up {
					e.change = -e.change
				}
				want[up] = append(want[up], e)
			}
		}
		for _, up := range []bool{true, false} {
			dir := map[bool]string{true: "scale-up", false: "scale-down"}[up]
			var inTail []event
			for _, e := range stored[up] {
				if e.at.Before(tail) {
					continue
				}
				inTail = append(inTail, e)
			}
			slices.SortFunc(inTail, func(a, b event) int { return a.at.Compare(b.at) })
			if diff := cmp.Diff(want[up], inTail, cmp.Comparer(func(a, b event) bool { return a.at.Equal(b.at) && a.change == b.change })); diff != "" {
				t.Errorf("%s: stored %s events since %v differ from the acknowledged ReportScales (-acknowledged +stored):\n%s", name, dir, tail, diff)
			}
			checkedEvents += len(want[up])
			if up {
				upEvents += len(want[up])
			} else {
				downEvents += len(want[up])
			}
		}
	}
	t.Logf("killed replica %d at %v; %d calls failed and were retried; %d Recommends acknowledged; checked %d recommendations and %d scale events (%d up, %d down) in the last %v",
		victim, killedAt.Sub(start).Round(time.Millisecond), failed, acked, checkedRecs, checkedEvents, upEvents, downEvents, window)
	if checkedEvents == 0 {
		t.Errorf("no scale event in the checked span: the timeline proves nothing")
	}
	for i, r := range replicas {
		if i != victim {
			r.p.term(t)
		}
	}
}

// TestEtcdCompactionByTheBinary: two replicas with --etcd-compaction-interval 200ms compact
// etcd's history as their decisions write it (an early revision can no longer be read, the
// target still can), say so in their logs, and never warn that a compaction failed, though
// each also meets the other's; with the interval 0 a replica warns that it never compacts.
func TestEtcdCompactionByTheBinary(t *testing.T) {
	endpoint := sharedEtcd(t)
	prefix := fmt.Sprintf("/mr-compact-%d", time.Now().UnixNano())
	var reps []*process
	for range 2 {
		reps = append(reps, startBinary(t, "--store", "etcd", "--etcd-endpoints", endpoint, "--etcd-prefix", prefix,
			"--etcd-compaction-interval", "200ms", "--log-level", "debug", "--metrics-listen", "127.0.0.1:0"))
	}
	raw := rawEtcd(t, endpoint)
	first, err := raw.Get(t.Context(), prefix, clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	ref := &pb.TargetRef{Cluster: "mr", Namespace: "compact", Name: "web"}
	for i := range 6 {
		c := pb.NewRecommenderServiceClient(dial(t, reps[i%2].addr))
		if _, err := c.Recommend(t.Context(), &pb.RecommendRequest{Target: ref, Spec: mrSpec(t, "{}"), CurrentReplicas: 3, Metrics: queue(40 + i)}); err != nil {
			t.Fatal(err)
		}
	}
	early := first.Header.Revision
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		_, err := raw.Get(t.Context(), prefix, clientv3.WithRev(early), clientv3.WithCountOnly())
		if errors.Is(err, rpctypes.ErrCompacted) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("revision %d still readable 20 s after the decisions (%v):\n%s", early, err, reps[0].stderr.String())
		}
	}
	if _, err := pb.NewRecommenderServiceClient(dial(t, reps[0].addr)).GetTarget(t.Context(), &pb.GetTargetRequest{Target: ref}); err != nil {
		t.Errorf("GetTarget after compaction: %v", err)
	}
	time.Sleep(time.Second) // more ticks, each replica meeting the other's compactions
	compacted := 0
	for _, p := range reps {
		log := p.stderr.String()
		if !strings.Contains(log, "compacting etcd's history, keeping one interval of it") || strings.Contains(log, "compacting etcd's history failed") {
			t.Errorf("replica log: want the compaction announced and no failure:\n%s", log)
		}
		compacted += strings.Count(log, `msg="compacted etcd's history"`)
	}
	if compacted == 0 {
		t.Error("neither replica logged a compaction")
	}
	done := 0
	for _, p := range reps {
		if v := runtimeMetric(t, p.metrics, `hpa_recommender_store_compactions_total{result="failed"}`); v != "0" {
			t.Errorf("failed compactions on /metrics: %s, want 0", v)
		}
		n, err := strconv.Atoi(runtimeMetric(t, p.metrics, `hpa_recommender_store_compactions_total{result="done"}`))
		if err != nil {
			t.Fatal(err)
		}
		done += n
		if rev := runtimeMetric(t, p.metrics, "hpa_recommender_store_compacted_revision"); n > 0 && rev == "0" {
			t.Errorf("%d compactions but compacted revision %s", n, rev)
		}
	}
	if done == 0 {
		t.Error("no compaction counted on either replica's /metrics")
	}
	off := startBinary(t, "--store", "etcd", "--etcd-endpoints", endpoint, "--etcd-prefix", prefix, "--etcd-compaction-interval", "0")
	if !strings.Contains(off.stderr.String(), "not compacting etcd's history (--etcd-compaction-interval 0)") {
		t.Errorf("with the interval 0, no warning:\n%s", off.stderr.String())
	}
}
