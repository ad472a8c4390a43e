package scaler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/hpa-recommender/hpa-recommender/clients/internal/local"
	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
	"github.com/hpa-recommender/hpa-recommender/recommender"
)

// Recommender is what the scaler needs of the service; *goclient.Client and
// pb.RecommenderServiceClient satisfy it. Recommend must not be retried by the implementation
// unless the request is a dry run (a repeat would record a second recommendation).
type Recommender interface {
	Recommend(ctx context.Context, req *pb.RecommendRequest, opts ...grpc.CallOption) (*pb.RecommendResponse, error)
	ReportScale(ctx context.Context, req *pb.ReportScaleRequest, opts ...grpc.CallOption) (*pb.ReportScaleResponse, error)
}

// Deps are the Scaler's collaborators.
type Deps struct {
	// Kube reads and writes the cluster. Required.
	Kube *Kube
	// Recommender is the service. Required.
	Recommender Recommender
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Registry receives the scaler's Prometheus metrics; a new one when nil.
	Registry *prometheus.Registry
	// Now is the clock of the local fallback and of staleness (default time.Now).
	Now func() time.Time
}

// Scaler syncs autoscalers: it gathers, asks, scales and reports.
type Scaler struct {
	cfg   Config
	kube  *Kube
	rec   Recommender
	log   *slog.Logger
	now   func() time.Time
	reg   *prometheus.Registry
	tel   *telemetry
	local *local.Engine

	mu          sync.Mutex
	autoscalers map[string]*Autoscaler
	targets     map[string]*targetState
	// selectors are the pod selectors of the autoscalers as their last sync read them, by
	// key; an autoscaler whose pods another one's selector also matches does not scale
	// (upstream's AmbiguousSelector; safety.go).
	selectors map[string]knownSelector
	// hpas are every HPA object in the watched namespaces (nil: the in-tree check is off).
	hpas      *hpaIndex
	loaded    bool
	fallbacks int
	// bySource are the autoscalers of each source as published, by key (a source is absent
	// until it first publishes); expected are the sources Run loads (readiness waits for
	// each); taken are the keys more than one source has; nudged are keys to sync at once (an
	// object's generation changed).
	bySource map[string]map[string]*Autoscaler
	expected []string
	taken    map[string]bool
	nudged   map[string]bool
	// byNamespace are the loaded autoscalers of each namespace, by key: the safety checks
	// compare an autoscaler with those of its own namespace only.
	byNamespace map[string]map[string]*Autoscaler

	isLeader atomic.Bool
	lastTick atomic.Int64 // unix nanoseconds of the sync loop's last pass
}

// targetState is what the scaler remembers of one autoscaler between syncs.
type targetState struct {
	mu sync.Mutex // one sync of a target at a time
	// pending are scale outcomes the service has not acknowledged yet, oldest first; npending
	// is its length, readable without mu.
	pending  []*pb.ReportScaleRequest
	npending atomic.Int32
	// lastAnswer is when the service last answered a Recommend for the target (initially the
	// first attempt, so an outage at start-up also waits FallbackAfter).
	lastAnswer time.Time
	// unreachable is true during an outage (for one event per transition).
	unreachable bool
	// fallback is true while decisions are local (atomic: SetAutoscalers reads it without mu).
	fallback atomic.Bool
	// local mirrors the service's stored state (kept only with FallbackAfter > 0).
	local recommender.State
	// written is the autoscaler object as the last status write returned it (objects only).
	written *writtenStatus
	// foreignManager is the other manager last seen writing the HPA object's status.
	foreignManager string

	// The per-object controls (annotations.go): failedSyncs is the run of consecutive syncs
	// whose metrics all failed; lastGood the last count decided from working metrics (when
	// haveGood); metricsFallback and paused are true while they last (one event per
	// transition); problems are the annotation problems last reported.
	failedSyncs     int
	lastGood        int32
	haveGood        bool
	metricsFallback bool
	paused          bool
	problems        string
}

// maxPendingReports bounds the undelivered outcomes kept per target; the service infers an
// applied decision from the next Recommend's currentReplicas anyway.
const maxPendingReports = 8

// New returns a Scaler; Run starts it, SyncOne syncs one autoscaler.
func New(cfg Config, deps Deps) (*Scaler, error) {
	if deps.Kube == nil || deps.Recommender == nil {
		return nil, errors.New("scaler: Kube and Recommender are required")
	}
	s := &Scaler{
		cfg:         cfg,
		kube:        deps.Kube,
		rec:         deps.Recommender,
		log:         deps.Logger,
		now:         deps.Now,
		reg:         deps.Registry,
		local:       local.New(),
		autoscalers: map[string]*Autoscaler{},
		targets:     map[string]*targetState{},
		selectors:   map[string]knownSelector{},
		bySource:    map[string]map[string]*Autoscaler{},
		byNamespace: map[string]map[string]*Autoscaler{},
		taken:       map[string]bool{},
		nudged:      map[string]bool{},
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.reg == nil {
		s.reg = prometheus.NewRegistry()
	}
	s.local.Now = s.now
	o := cfg.Options
	if o.KubernetesVersion == KubernetesVersionAuto {
		return nil, errors.New("scaler: resolve --kubernetes-version=auto (ResolveKubernetesVersion) before New")
	}
	s.local.Options.KubernetesVersion = o.KubernetesVersion
	if o.Tolerance != nil {
		s.local.Options.Tolerance = *o.Tolerance
	}
	if o.CPUInitializationPeriod != nil {
		s.local.Options.CPUInitializationPeriod = *o.CPUInitializationPeriod
	}
	if o.InitialReadinessDelay != nil {
		s.local.Options.InitialReadinessDelay = *o.InitialReadinessDelay
	}
	if o.DownscaleStabilizationWindow != nil {
		s.local.Options.DownscaleStabilizationWindow = *o.DownscaleStabilizationWindow
	}
	s.tel = newTelemetry(s.reg)
	return s, nil
}

// Registry is the registry the scaler's metrics are on.
func (s *Scaler) Registry() *prometheus.Registry { return s.reg }

// SetAutoscalers replaces the autoscalers of the manifests source; the state of one that is
// gone is dropped.
func (s *Scaler) SetAutoscalers(as []*Autoscaler) { s.setSource(SourceManifests, as) }

// setSource replaces the autoscalers of one source (keys are unique within a source: the
// first is kept) and merges every source's, in sourceOrder: a namespace/name already taken by
// an earlier source is not loaded again (the service knows a target by cluster, namespace and
// name), and says so once in the log. An object whose generation changed is synced at once.
// It costs the size of the source; setObject publishes one object of a source.
func (s *Scaler) setSource(src string, as []*Autoscaler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	prev := s.bySource[src]
	next := make(map[string]*Autoscaler, len(as))
	for _, a := range as {
		if _, dup := next[a.Key()]; !dup {
			next[a.Key()] = a
		}
	}
	s.bySource[src] = next
	for _, a := range as {
		s.mergeLocked(a.Key())
	}
	for key := range prev {
		if _, ok := next[key]; !ok {
			s.mergeLocked(key)
		}
	}
	s.loaded = true
	for _, name := range s.expected {
		if _, ok := s.bySource[name]; !ok {
			s.loaded = false
		}
	}
	s.tel.autoscalers.Set(float64(len(s.autoscalers)))
}

// setObject publishes one change of a source that setSource has published: a is now the
// autoscaler of key in src, nil when src no longer has it. It merges that key alone, as
// setSource does every key.
func (s *Scaler) setObject(src, key string, a *Autoscaler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a == nil {
		delete(s.bySource[src], key)
	} else {
		s.bySource[src][key] = a
	}
	s.mergeLocked(key)
	s.tel.autoscalers.Set(float64(len(s.autoscalers)))
}

// mergeLocked loads the autoscaler of key from the first source in sourceOrder that has one,
// logging once that a later source's is ignored; nudges it when its generation or annotations
// changed; and, when no source has key any more, forgets its state.
func (s *Scaler) mergeLocked(key string) {
	var a *Autoscaler
	taken := false
	for _, name := range sourceOrder {
		o, ok := s.bySource[name][key]
		switch {
		case !ok:
		case a == nil:
			a = o
		default:
			taken = true
			if !s.taken[key] {
				s.log.Error("autoscaler name taken by another source; ignored", "autoscaler", key, "source", o.Source, "kept", a.Source)
			}
		}
	}
	if taken {
		s.taken[key] = true
	} else {
		delete(s.taken, key)
	}
	old, loaded := s.autoscalers[key]
	if a == nil {
		if loaded {
			s.unloadLocked(old)
		}
		return
	}
	if loaded && a.Object != nil && old.Object != nil && old.HPA.Generation != a.HPA.Generation {
		s.nudged[key] = true
	}
	if loaded && !maps.Equal(old.HPA.Annotations, a.HPA.Annotations) {
		s.nudged[key] = true // a pause, a fallback or a period takes effect at once
	}
	s.autoscalers[key] = a
	ns := s.byNamespace[a.Namespace]
	if ns == nil {
		ns = map[string]*Autoscaler{}
		s.byNamespace[a.Namespace] = ns
	}
	ns[key] = a
}

// unloadLocked drops a loaded autoscaler and the state kept for it.
func (s *Scaler) unloadLocked(a *Autoscaler) {
	key := a.Key()
	if ts := s.targets[key]; ts != nil && ts.fallback.Swap(false) {
		s.fallbacks--
		s.tel.fallbackTargets.Set(float64(s.fallbacks))
	}
	delete(s.targets, key)
	delete(s.selectors, key)
	s.tel.forget(a.Namespace, a.Name)
	delete(s.autoscalers, key)
	if ns := s.byNamespace[a.Namespace]; ns != nil {
		delete(ns, key)
		if len(ns) == 0 {
			delete(s.byNamespace, a.Namespace)
		}
	}
}

// takeNudged returns and forgets the keys to sync at once.
func (s *Scaler) takeNudged() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.nudged))
	for k := range s.nudged {
		out = append(out, k)
	}
	clear(s.nudged)
	return out
}

// Autoscaler returns the loaded autoscaler with key "namespace/name".
func (s *Scaler) Autoscaler(key string) (*Autoscaler, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.autoscalers[key]
	return a, ok
}

// periods returns the sync period of every loaded autoscaler, by key: its sync-period
// annotation, else Config.SyncPeriod.
func (s *Scaler) periods() map[string]time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]time.Duration, len(s.autoscalers))
	for k, a := range s.autoscalers {
		out[k] = s.cfg.SyncPeriod
		if p := a.Controls.SyncPeriod; p > 0 {
			out[k] = p
		}
	}
	return out
}

func (s *Scaler) target(key string) *targetState {
	s.mu.Lock()
	defer s.mu.Unlock()
	ts, ok := s.targets[key]
	if !ok {
		ts = &targetState{lastAnswer: s.now()}
		s.targets[key] = ts
	}
	return ts
}

func (s *Scaler) setFallback(ts *targetState, on bool) {
	if ts.fallback.Swap(on) == on {
		return
	}
	s.mu.Lock()
	if on {
		s.fallbacks++
	} else {
		s.fallbacks--
	}
	s.tel.fallbackTargets.Set(float64(s.fallbacks))
	s.mu.Unlock()
}

func (s *Scaler) targetRef(a *Autoscaler) *pb.TargetRef {
	return &pb.TargetRef{Cluster: s.cfg.Cluster, Namespace: a.Namespace, Name: a.Name}
}

func (s *Scaler) options() *pb.Options {
	o := s.cfg.Options
	if o == (OptionFlags{}) {
		return nil
	}
	out := &pb.Options{Tolerance: o.Tolerance}
	if v := o.KubernetesVersion; v != "" {
		out.KubernetesVersion = &v
	}
	if d := o.CPUInitializationPeriod; d != nil {
		out.CpuInitializationPeriod = durationpb.New(*d)
	}
	if d := o.InitialReadinessDelay; d != nil {
		out.InitialReadinessDelay = durationpb.New(*d)
	}
	if d := o.DownscaleStabilizationWindow; d != nil {
		out.DownscaleStabilizationWindow = durationpb.New(*d)
	}
	return out
}

// rpcContext bounds one call to the service.
func (s *Scaler) rpcContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.cfg.RPCTimeout)
}

// unreachable reports whether err means the service could not be asked (as opposed to an
// answer refusing the request).
func unreachable(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled, codes.Aborted, codes.Unknown:
		return true
	}
	return false
}

// SyncOne syncs the loaded autoscaler with key "namespace/name" once.
func (s *Scaler) SyncOne(ctx context.Context, key string) error {
	a, ok := s.Autoscaler(key)
	if !ok {
		return fmt.Errorf("no autoscaler %s", key)
	}
	return s.syncOne(ctx, a)
}

// gathered is what one sync read of the cluster.
type gathered struct {
	scale    *autoscalingv1.Scale
	resource schema.GroupResource
	req      *pb.RecommendRequest
	fetchErr []string // per metric: the fetch error, "" when fetched
	// selectorProblem is true when no metric could be fetched for want of a usable selector
	// (SelectorRequired, InvalidSelector, AmbiguousSelector).
	selectorProblem bool
	// status collects what the sync learns for the autoscaler object's status.
	status *statusChange
	// hold, when set, is why the sync does not act (safety.go); the rest is not gathered.
	hold *hold
}

// scaleError is a failure to read the target's scale subresource (upstream's FailedGetScale).
type scaleError struct{ err error }

func (e *scaleError) Error() string { return "get scale: " + e.err.Error() }
func (e *scaleError) Unwrap() error { return e.err }

// syncOne is one reconcile of a: read the scale, the pods and the metrics; ask (or, after a
// long enough outage and when configured, decide locally); write the scale when told to;
// report the outcome.
func (s *Scaler) syncOne(ctx context.Context, a *Autoscaler) (err error) {
	start := time.Now()
	defer func() {
		s.tel.syncDuration.Observe(time.Since(start).Seconds())
		if err != nil {
			s.tel.syncs.WithLabelValues("error").Inc()
		} else {
			s.tel.syncs.WithLabelValues("ok").Inc()
			s.tel.lastSync.WithLabelValues(a.Namespace, a.Name).SetToCurrentTime()
		}
	}()
	ts := s.target(a.Key())
	ts.mu.Lock()
	defer ts.mu.Unlock()
	a = s.asShadowIfForeign(a, ts)
	log := s.log.With("autoscaler", a.Key(), "target", a.HPA.Spec.ScaleTargetRef.Kind+"/"+a.HPA.Spec.ScaleTargetRef.Name)
	shadow := s.cfg.DryRun || a.Shadow
	// What this sync learns goes to the autoscaler object's status at the end (objects only;
	// shadow mode writes nothing).
	ch := &statusChange{}
	if !shadow {
		defer func() {
			if ctx.Err() == nil {
				s.writeStatus(ctx, log, a, ts, ch)
			}
		}()
	}

	s.checkAnnotations(log, a, ts, ch)
	holding := a.Controls.holding()
	if !holding && ts.paused {
		ts.paused = false
		log.Info("pause ended")
		s.event(a, nil, corev1.EventTypeNormal, ReasonScalingResumed, "the pause annotations were removed; the autoscaler decides again")
	}

	// Outcomes of earlier decisions go first; a failure here never blocks this sync.
	s.flushReports(ctx, log, ts)

	// A paused autoscaler asks with dryRun: the service explains, and records nothing.
	g, err := s.gather(ctx, a, shadow || holding, shadow)
	if err != nil {
		if se := (*scaleError)(nil); errors.As(err, &se) {
			ch.set(condAbleToScale, corev1.ConditionFalse, ReasonFailedGetScale, "the HPA controller was unable to get the target's current scale: %v", se.err)
		}
		return err
	}
	g.status = ch
	s.tel.current.WithLabelValues(a.Namespace, a.Name).Set(float64(g.scale.Spec.Replicas))
	if h := g.hold; h != nil {
		// Another controller scales the same pods: do not ask, do not scale, pause or not
		// (safety.go).
		log.Debug("not scaling", "reason", h.reason, "message", h.message)
		s.holdSync(a, g.scale, ch, h)
		return nil
	}
	countMetricFailures(ts, g)
	if holding {
		return s.syncPaused(ctx, log, a, ts, g, shadow)
	}

	rctx, cancel := s.rpcContext(ctx)
	resp, err := s.rec.Recommend(rctx, g.req)
	cancel()
	if err != nil {
		s.tel.serviceErrors.WithLabelValues(status.Code(err).String()).Inc()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !unreachable(err) {
			s.tel.serviceReachable.Set(1) // it answered, with a refusal
			s.event(a, g.scale, corev1.EventTypeWarning, ReasonFailedGetRecommendation, "the hpa-recommender service refused the request: %v", status.Convert(err).Message())
			ch.noDecision(g.scale.Spec.Replicas)
			ch.set(condScalingActive, corev1.ConditionFalse, ReasonFailedGetRecommendation, "the hpa-recommender service refused the request: %v", status.Convert(err).Message())
			return fmt.Errorf("recommend: %w", err)
		}
		s.tel.serviceReachable.Set(0)
		return s.serviceDown(ctx, log, a, ts, g, shadow, err)
	}
	s.tel.serviceReachable.Set(1)
	ts.lastAnswer = s.now()
	if ts.unreachable {
		ts.unreachable = false
		s.setFallback(ts, false)
		log.Info("the hpa-recommender service answers again; its stored history is authoritative again")
		s.event(a, g.scale, corev1.EventTypeNormal, ReasonRecommenderAvailable, "the hpa-recommender service answers again; decisions resume from its history")
	}
	var mirror *local.Result
	if s.cfg.FallbackAfter > 0 && !shadow {
		// Keep a local copy of what the service stores, for a later outage.
		if _, res, lerr := s.local.DecideWithState(s.now(), g.req, ts.local); lerr == nil {
			ts.local, mirror = res.State, res
		}
	}
	mode := modeService
	if shadow {
		mode = modeShadow
	}
	return s.act(ctx, log, a, ts, g, resp, mode, mirror)
}

// gather reads the scale, the pods and every metric, and builds the request.
// dryRun asks without recording; a shadow autoscaler takes no part in the safety checks.
func (s *Scaler) gather(ctx context.Context, a *Autoscaler, dryRun, shadow bool) (*gathered, error) {
	sc, gr, err := s.kube.getScale(ctx, a.Namespace, a.HPA.Spec.ScaleTargetRef)
	if err != nil {
		s.event(a, nil, corev1.EventTypeWarning, ReasonFailedGetScale, "%v", err)
		return nil, &scaleError{err}
	}
	g := &gathered{scale: sc, resource: gr}
	if !shadow {
		if h := s.inTreeConflict(a); h != nil {
			s.recordSelector(a, nil)
			g.hold = h
			return g, nil
		}
	}
	req := &pb.RecommendRequest{
		Target:          s.targetRef(a),
		Spec:            a.requestSpec(),
		CurrentReplicas: sc.Spec.Replicas,
		StatusReplicas:  &sc.Status.Replicas,
		Options:         s.options(),
		DryRun:          dryRun,
	}
	g.req = req
	metrics := a.HPA.Spec.Metrics
	g.fetchErr = make([]string, len(metrics))
	// The selector: upstream needs it for every metric; without one every metric fails, and
	// the service still corrects a count outside [min, max], as upstream does.
	var selector labels.Selector
	podNames := sets.New[string]()
	selErr := ""
	switch {
	case sc.Status.Selector == "":
		selErr = "selector is required"
		s.event(a, sc, corev1.EventTypeWarning, ReasonSelectorRequired, "%s", selErr)
	default:
		selector, err = labels.Parse(sc.Status.Selector)
		if err != nil {
			selErr = fmt.Sprintf("couldn't convert selector into a corresponding internal selector object: %v", err)
			s.event(a, sc, corev1.EventTypeWarning, ReasonInvalidSelector, "%s", selErr)
		}
	}
	if selErr == "" {
		pods, err := s.kube.Pods.Pods(a.Namespace).List(selector)
		if err != nil {
			return nil, fmt.Errorf("list pods: %w", err)
		}
		if shadow {
			s.recordSelector(a, nil) // a shadow autoscaler scales nothing: no ambiguity
		} else if h := s.ambiguity(ctx, a, sc.Status.Selector, selector, pods); h != nil {
			g.hold = h
			return g, nil
		}
		for _, p := range pods {
			req.Pods = append(req.Pods, podState(p))
			podNames.Insert(p.Name)
		}
	} else {
		s.recordSelector(a, nil)
	}
	g.selectorProblem = selErr != ""
	for i := range metrics {
		var obs *pb.MetricObservation
		q, fromProm := a.Controls.PrometheusQueries[i]
		switch {
		case selErr != "":
			obs = errObservation(selErr)
		case fromProm:
			obs = s.kube.prometheusObservation(ctx, q, &metrics[i], podNames)
		default:
			obs = s.kube.observe(ctx, a.Namespace, selector, &metrics[i])
		}
		if obs.Error != "" {
			g.fetchErr[i] = obs.Error
			s.tel.metricErrors.WithLabelValues(string(metrics[i].Type)).Inc()
		}
		req.Metrics = append(req.Metrics, obs)
	}
	if len(metrics) == 0 {
		// Upstream defaults an empty list to 80% CPU: fetch what the default metric needs.
		def := defaultMetric()
		obs := errObservation(selErr)
		if selErr == "" {
			obs = s.kube.observe(ctx, a.Namespace, selector, def)
		}
		if obs.Error != "" {
			s.tel.metricErrors.WithLabelValues(string(def.Type)).Inc()
		}
		req.Metrics = append(req.Metrics, obs)
	}
	return g, nil
}
