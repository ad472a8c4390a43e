package scaler

import (
	"context"
	"errors"
	"hash/fnv"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/util/workqueue"
)

// RunDeps are what Run needs besides the Scaler.
type RunDeps struct {
	// LeaseClient holds the Lease for leader election (required when Config.LeaderElect).
	LeaseClient kubernetes.Interface
	// Ready reports whether the caches are synced (nil: always).
	Ready func() bool
	// Listener serves HTTP instead of listening on Config.HTTPListen (tests).
	Listener net.Listener
}

// Run loads the autoscalers of every configured source (the manifests, reloaded on change;
// HorizontalPodAutoscaler and custom resource objects, watched through informers), serves /metrics, /healthz and
// /readyz, and syncs every autoscaler each period while it leads (always, without leader
// election). It blocks until ctx ends.
func (s *Scaler) Run(ctx context.Context, deps RunDeps) error {
	if s.cfg.LeaderElect && deps.LeaseClient == nil {
		return errors.New("scaler: leader election needs a LeaseClient")
	}
	srcs, err := s.cfg.Sources()
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.expected = srcs
	s.mu.Unlock()
	manifests := slices.Contains(srcs, SourceManifests)
	// The digest is taken before the load, so a change landing between the two is seen by the
	// watcher (taking it after, in the watcher, could miss one for good).
	var loaded string
	if manifests {
		loaded, _ = dirDigest(s.cfg.ManifestsDir)
		if as, err := LoadManifests(s.cfg.ManifestsDir); err != nil && as == nil {
			return err
		} else {
			s.logManifestErrors(err)
			s.logManifestWarnings(as)
			s.SetAutoscalers(as)
		}
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for _, src := range srcs {
		if src == SourceManifests {
			continue
		}
		if err := s.startObjectSource(ctx, &wg, src); err != nil {
			return err
		}
	}
	// Every HPA object, for the in-tree conflict check (safety.go); without a client (tests
	// of other parts) the check is off.
	if s.kube.Client != nil {
		if err := s.startHPAWatch(ctx, &wg); err != nil {
			return err
		}
	}

	if deps.Listener != nil || s.cfg.HTTPListen != "" {
		srv := &http.Server{Handler: s.Handler(deps.Ready), ReadHeaderTimeout: 10 * time.Second}
		lis := deps.Listener
		if lis == nil {
			var err error
			if lis, err = net.Listen("tcp", s.cfg.HTTPListen); err != nil {
				return err
			}
		}
		// The address as bound: with port 0 the kernel chose it.
		s.log.Info("serving http", "listen", lis.Addr().String())
		wg.Add(2)
		go func() {
			defer wg.Done()
			if err := srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.log.Error("http server", "error", err)
			}
		}()
		go func() {
			defer wg.Done()
			<-ctx.Done()
			sctx, c := context.WithTimeout(context.Background(), 5*time.Second)
			defer c()
			_ = srv.Shutdown(sctx)
		}()
	}
	if manifests {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.watchManifests(ctx, loaded)
		}()
	}

	if !s.waitHPAWatch(ctx) {
		return nil
	}
	if !s.cfg.LeaderElect {
		s.setLeader(true)
		s.syncLoop(ctx)
		s.setLeader(false)
		return nil
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: s.cfg.LeaderElectionNamespace, Name: s.cfg.LeaderElectionName},
		Client:     deps.LeaseClient.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: s.cfg.Identity},
	}
	for ctx.Err() == nil {
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock:            lock,
			LeaseDuration:   s.cfg.LeaseDuration,
			RenewDeadline:   s.cfg.RenewDeadline,
			RetryPeriod:     s.cfg.RetryPeriod,
			ReleaseOnCancel: true,
			Name:            s.cfg.LeaderElectionName,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(lctx context.Context) {
					s.log.Info("leading: syncing autoscalers", "identity", s.cfg.Identity)
					s.setLeader(true)
					s.syncLoop(lctx)
				},
				OnStoppedLeading: func() {
					s.setLeader(false)
					s.log.Info("not leading: stopped syncing", "identity", s.cfg.Identity)
				},
				OnNewLeader: func(id string) {
					if id != s.cfg.Identity {
						s.log.Info("another replica leads", "leader", id)
					}
				},
			},
		})
		if err != nil {
			return err
		}
		le.Run(ctx) // returns when leadership is lost or ctx ends
	}
	return nil
}

func (s *Scaler) logManifestErrors(err error) {
	if err != nil {
		s.tel.manifestErrors.Set(1)
		s.log.Error("manifests", "error", err)
	} else {
		s.tel.manifestErrors.Set(0)
	}
}

// watchManifests reloads the manifests directory when its contents differ from last, the
// digest of what is loaded. A directory that cannot be read keeps the last good set.
func (s *Scaler) watchManifests(ctx context.Context, last string) {
	t := time.NewTicker(s.cfg.ManifestsReload)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		d, err := dirDigest(s.cfg.ManifestsDir)
		if err != nil || d == last {
			continue
		}
		as, err := LoadManifests(s.cfg.ManifestsDir)
		s.logManifestErrors(err)
		if as == nil && err != nil {
			continue
		}
		last = d
		s.logManifestWarnings(as)
		s.SetAutoscalers(as)
		s.log.Info("manifests reloaded", "autoscalers", len(as))
	}
}

// syncLoop syncs every autoscaler about once per SyncPeriod (or its sync-period annotation)
// with Workers workers until ctx ends. Each target's first sync is spread over the first period by a hash of its key, and
// every next one is SyncPeriod later, jittered by SyncJitter. A target still queued or in
// flight is not queued again, so a slow target never piles up.
func (s *Scaler) syncLoop(ctx context.Context) {
	q := workqueue.NewTypedDelayingQueue[string]()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer q.ShutDown()
	for range s.cfg.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				key, quit := q.Get()
				if quit {
					return
				}
				if err := s.SyncOne(ctx, key); err != nil && ctx.Err() == nil {
					s.log.Debug("sync", "autoscaler", key, "error", err)
					// A refusal that says when to try again (a replica at --max-inflight, a
					// cluster over its rate) is tried again then, not a whole period later.
					if d, ok := retryAfter(err); ok && d < s.cfg.SyncPeriod {
						q.AddAfter(key, d)
					}
				}
				q.Done(key)
			}
		}()
	}
	// The loop ticks at a tenth of the shortest period (an autoscaler's sync-period
	// annotation may be shorter than SyncPeriod), between 10 ms and 1 s.
	tickOf := func(shortest time.Duration) time.Duration {
		return min(time.Second, max(shortest/10, 10*time.Millisecond))
	}
	tick := tickOf(s.cfg.SyncPeriod)
	start := time.Now()
	due := map[string]time.Time{}
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		now := time.Now()
		s.lastTick.Store(now.UnixNano())
		for _, k := range s.takeNudged() {
			due[k] = now
		}
		periods := s.periods()
		shortest := s.cfg.SyncPeriod
		for k, period := range periods {
			shortest = min(shortest, period)
			d, ok := due[k]
			if !ok {
				d = start.Add(time.Duration(spread(k) * float64(period)))
				due[k] = d
			}
			if !now.Before(d) {
				q.Add(k)
				j := 1 + s.cfg.SyncJitter*(2*rand.Float64()-1)
				due[k] = now.Add(time.Duration(float64(period) * j))
			}
		}
		for k := range due {
			if _, live := periods[k]; !live {
				delete(due, k)
			}
		}
		if next := tickOf(shortest); next != tick {
			tick = next
			t.Reset(tick)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// minRetryAfter is the shortest delay retryAfter gives, so that a refusal asking for none
// cannot spin a worker.
const minRetryAfter = 100 * time.Millisecond

// retryAfter is the delay a ResourceExhausted refusal asks for in its RetryInfo, at least
// minRetryAfter.
func retryAfter(err error) (time.Duration, bool) {
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.ResourceExhausted {
		return 0, false
	}
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok && ri.GetRetryDelay().IsValid() {
			return max(ri.GetRetryDelay().AsDuration(), minRetryAfter), true
		}
	}
	return 0, false
}

// spread maps a key to [0, 1) stably.
func spread(key string) float64 {
	h := fnv.New64a()
	h.Write([]byte(key))
	return float64(h.Sum64()%1_000_000) / 1_000_000
}

// Handler serves /metrics, /healthz (the process and, while leading, its sync loop are alive)
// and /readyz (the manifests were loaded and the caches, HPA objects' included, synced).
func (s *Scaler) Handler(ready func() bool) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		if last := s.lastTick.Load(); last != 0 && s.leading() && time.Since(time.Unix(0, last)) > 2*time.Minute {
			http.Error(w, "sync loop stalled", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		loaded := s.loaded && (s.hpas == nil || s.hpas.synced.Load())
		s.mu.Unlock()
		if !loaded || (ready != nil && !ready()) {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ok\n"))
	})
	return mux
}

// leading reports whether the sync loop is meant to be running.
func (s *Scaler) leading() bool { return s.isLeader.Load() }

func (s *Scaler) setLeader(on bool) {
	s.isLeader.Store(on)
	if on {
		s.tel.leader.Set(1)
	} else {
		s.tel.leader.Set(0)
	}
}

// waitHPAWatch waits until the HPA objects have been listed, so that no autoscaler acts before
// the in-tree conflict check can see them; it says every 30 s what it waits for (a missing
// list/watch permission on horizontalpodautoscalers keeps it waiting). False: ctx ended.
func (s *Scaler) waitHPAWatch(ctx context.Context) bool {
	s.mu.Lock()
	x := s.hpas
	s.mu.Unlock()
	if x == nil {
		return true
	}
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for start := time.Now(); !x.synced.Load(); {
		select {
		case <-ctx.Done():
			return false
		case now := <-t.C:
			if now.Sub(start) >= 30*time.Second {
				start = now
				s.log.Warn("waiting for the HorizontalPodAutoscaler cache before syncing (hpa-scaler needs list and watch on horizontalpodautoscalers.autoscaling)")
			}
		}
	}
	return true
}
