package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/hpa-recommender/hpa-recommender/internal/apiconv"
	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
	"github.com/hpa-recommender/hpa-recommender/recommender"
	"github.com/hpa-recommender/hpa-recommender/store"
)

// defaultCluster names the cluster of a target whose request leaves it empty on a server
// running without authentication.
const defaultCluster = "default"

// Page sizes of ListTargets.
const (
	defaultPageSize = 100
	maxPageSize     = 1000
)

// maxPending bounds the decisions kept awaiting ReportScale per target.
const maxPending = 16

// targetKey validates a TargetRef; an empty cluster is the default cluster.
func targetKey(ref *pb.TargetRef, field string) (store.Key, []apiconv.FieldViolation) {
	k := store.Key{Cluster: ref.GetCluster(), Namespace: ref.GetNamespace(), Name: ref.GetName()}
	if k.Cluster == "" {
		k.Cluster = defaultCluster
	}
	return k, apiconv.TargetRefViolations(ref, field)
}

func newRecommendationID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Recommend decides for one target as one upstream reconcile would at the server's clock.
func (s *Server) Recommend(ctx context.Context, req *pb.RecommendRequest) (*pb.RecommendResponse, error) {
	resp, err := s.recommend(ctx, req)
	return resp, s.toStatus(ctx, "Recommend", err)
}

func (s *Server) recommend(ctx context.Context, req *pb.RecommendRequest) (*pb.RecommendResponse, error) {
	key, violations, err := s.authorizedKey(ctx, req.GetTarget(), "target")
	if err != nil {
		return nil, err
	}
	if ok, wait := s.limiter.allow(key.Cluster); !ok {
		return nil, &rateLimited{cluster: key.Cluster, retryAfter: wait}
	}
	in, opts, cv := apiconv.DecisionInput(req, s.cfg.Defaults, apiconv.Limits{MaxPods: s.cfg.MaxPods})
	violations = append(violations, cv...)
	if len(violations) > 0 {
		return nil, &invalidArgument{violations}
	}
	now := s.now()
	if req.GetDryRun() {
		cur, err := s.store.Get(ctx, key)
		if err != nil && !isNotFound(err) {
			return nil, err
		}
		d, _ := decide(now, opts, in, cur)
		return apiconv.DecisionToProto(&d), nil
	}
	id := newRecommendationID()
	var decision recommender.Decision
	var scaled bool
	_, err = s.store.Update(ctx, key, func(cur *store.Target) (*store.Target, error) {
		d, next := decide(now, opts, in, cur)
		next.Key = key
		next.LastSeen = now
		next.FirstSeen = now
		if cur != nil {
			next.FirstSeen = cur.FirstSeen
		}
		next.Spec = *in.Spec
		rid := ""
		if d.Scale() {
			rid = id
			next.Pending = append(next.Pending, store.PendingDecision{
				RecommendationID: id, Time: now, CurrentReplicas: d.CurrentReplicas, DesiredReplicas: d.DesiredReplicas,
			})
			if len(next.Pending) > maxPending {
				next.Pending = slices.Clone(next.Pending[len(next.Pending)-maxPending:])
			}
		}
		next.LastDecision = &store.LastDecision{RecommendationID: rid, Decision: d}
		if s.decisionLog {
			appendDecision(next, logEntry(&d, rid))
		}
		decision, scaled = d, d.Scale()
		return next, nil
	})
	if err != nil {
		return nil, err
	}
	resp := apiconv.DecisionToProto(&decision)
	if scaled {
		resp.RecommendationId = id
	}
	return resp, nil
}

// targetNotFound is the NotFound of an unknown target, naming it whole (cluster/namespace/name),
// the same in every method.
func targetNotFound(key store.Key) error { return &notFound{fmt.Sprintf("target %s not found", key)} }

func isNotFound(err error) bool { return err != nil && errors.Is(err, store.ErrNotFound) }

// decide runs the engine on a stored target (nil: first sight). Before deciding, the previous
// decision, if it is still pending and its desired count now shows as the current count, is
// taken as applied (its ReportScale never came). Only the previous decision: an older pending
// one was already seen not applied by the call after it (and a retried Recommend whose first
// answer was lost leaves such an older twin behind, which must not count a second time). It
// returns the decision and the target to store, which shares nothing with cur.
func decide(now time.Time, opts recommender.Options, in recommender.Input, cur *store.Target) (recommender.Decision, *store.Target) {
	next := &store.Target{}
	if cur != nil {
		next.Pending = slices.Clone(cur.Pending)
		next.Reported = slices.Clone(cur.Reported)
		next.State = cur.State
		next.RecentDecisions, next.DecisionLog = cur.RecentDecisions, cur.DecisionLog
		if n := len(next.Pending); n > 0 {
			p := next.Pending[n-1]
			previous := cur.LastDecision != nil && cur.LastDecision.RecommendationID == p.RecommendationID
			if previous && p.DesiredReplicas == in.CurrentReplicas && p.CurrentReplicas != p.DesiredReplicas {
				pd := recommender.Decision{Time: p.Time, CurrentReplicas: p.CurrentReplicas, DesiredReplicas: p.DesiredReplicas}
				next.State = recommender.RecordRescaleFor(p.Time, opts, &cur.Spec, next.State, &pd, true, "")
				next.Pending = next.Pending[:n-1]
				next.MarkReported(p.RecommendationID)
			}
		}
	}
	d, st := recommender.Decide(now, opts, in, next.State)
	st.History = recommender.Prune(st.History, now, opts)
	next.State = st
	return d, next
}

// ReportScale records the outcome of the scale write for a decision.
func (s *Server) ReportScale(ctx context.Context, req *pb.ReportScaleRequest) (*pb.ReportScaleResponse, error) {
	resp, err := s.reportScale(ctx, req)
	return resp, s.toStatus(ctx, "ReportScale", err)
}

func (s *Server) reportScale(ctx context.Context, req *pb.ReportScaleRequest) (*pb.ReportScaleResponse, error) {
	key, violations, err := s.authorizedKey(ctx, req.GetTarget(), "target")
	if err != nil {
		return nil, err
	}
	id := req.GetRecommendationId()
	if id == "" {
		violations = append(violations, apiconv.FieldViolation{Field: "recommendationId", Description: "Required value: the recommendationId a Recommend returned"})
	}
	if !req.GetSucceeded() && req.GetError() == "" {
		violations = append(violations, apiconv.FieldViolation{Field: "error", Description: "Required value: say why the scale write failed"})
	}
	if len(violations) > 0 {
		return nil, &invalidArgument{violations}
	}
	now := s.now()
	recorded := false
	_, err = s.store.Update(ctx, key, func(cur *store.Target) (*store.Target, error) {
		recorded = false
		if cur == nil {
			return nil, targetNotFound(key)
		}
		if cur.HasReported(id) {
			return nil, nil
		}
		i := slices.IndexFunc(cur.Pending, func(p store.PendingDecision) bool { return p.RecommendationID == id })
		if i < 0 {
			return nil, &notFound{fmt.Sprintf("recommendation %q of target %s not found (unknown, or older than the last %d decisions)", id, key, maxPending)}
		}
		p := cur.Pending[i]
		d := recommender.Decision{Time: p.Time, CurrentReplicas: p.CurrentReplicas, DesiredReplicas: p.DesiredReplicas}
		next := *cur
		next.State = recommender.RecordRescale(p.Time, &cur.Spec, cur.State, &d, req.GetSucceeded(), req.GetError())
		next.Pending = slices.Delete(slices.Clone(cur.Pending), i, i+1)
		next.Reported = slices.Clone(cur.Reported)
		next.MarkReported(id)
		next.LastSeen = now
		if s.decisionLog {
			setOutcome(&next, id, req.GetSucceeded(), req.GetError())
		}
		recorded = true
		return &next, nil
	})
	if err != nil {
		return nil, err
	}
	return &pb.ReportScaleResponse{Recorded: recorded}, nil
}

// Simulate replays a timeline without touching the store.
func (s *Server) Simulate(ctx context.Context, req *pb.SimulateRequest) (*pb.SimulateResponse, error) {
	resp, err := s.simulate(req)
	return resp, s.toStatus(ctx, "Simulate", err)
}

func (s *Server) simulate(req *pb.SimulateRequest) (*pb.SimulateResponse, error) {
	sim, violations := apiconv.SimulationInput(req, s.cfg.Defaults, apiconv.Limits{MaxPods: s.cfg.MaxPods, MaxSteps: s.cfg.MaxSteps})
	if len(violations) > 0 {
		return nil, &invalidArgument{violations}
	}
	return apiconv.RunSimulation(sim), nil
}

// GetTarget returns one target's stored state.
func (s *Server) GetTarget(ctx context.Context, req *pb.GetTargetRequest) (*pb.GetTargetResponse, error) {
	resp, err := s.getTarget(ctx, req)
	return resp, s.toStatus(ctx, "GetTarget", err)
}

func (s *Server) getTarget(ctx context.Context, req *pb.GetTargetRequest) (*pb.GetTargetResponse, error) {
	key, violations, err := s.authorizedKey(ctx, req.GetTarget(), "target")
	if err != nil {
		return nil, err
	}
	if len(violations) > 0 {
		return nil, &invalidArgument{violations}
	}
	t, err := s.store.Get(ctx, key)
	if isNotFound(err) {
		return nil, targetNotFound(key)
	}
	if err != nil {
		return nil, err
	}
	resp := &pb.GetTargetResponse{
		Target:     &pb.TargetRef{Cluster: key.Cluster, Namespace: key.Namespace, Name: key.Name},
		Spec:       apiconv.SpecToProto(&t.Spec),
		History:    apiconv.HistoryToProto(&t.State),
		Conditions: apiconv.ConditionsToProto(t.State.Conditions),
		LastSeen:   timestamppb.New(t.LastSeen),
		FirstSeen:  optTime(t.FirstSeen),
	}
	if ld := t.LastDecision; ld != nil {
		r := apiconv.DecisionToProto(&ld.Decision)
		r.RecommendationId = ld.RecommendationID
		resp.LastDecision = &pb.LastDecision{Time: timestamppb.New(ld.Decision.Time), Response: r}
	}
	for _, p := range t.Pending {
		resp.PendingDecisions = append(resp.PendingDecisions, &pb.PendingDecision{
			RecommendationId: p.RecommendationID, Time: timestamppb.New(p.Time),
			CurrentReplicas: p.CurrentReplicas, DesiredReplicas: p.DesiredReplicas,
		})
	}
	return resp, nil
}

// ListTargets lists stored targets, filtered and paginated.
func (s *Server) ListTargets(ctx context.Context, req *pb.ListTargetsRequest) (*pb.ListTargetsResponse, error) {
	resp, err := s.listTargets(ctx, req)
	return resp, s.toStatus(ctx, "ListTargets", err)
}

func (s *Server) listTargets(ctx context.Context, req *pb.ListTargetsRequest) (*pb.ListTargetsResponse, error) {
	cluster, err := s.authorizedListCluster(ctx, req.GetCluster())
	if err != nil {
		return nil, err
	}
	size := int(req.GetPageSize())
	switch {
	case size < 0:
		return nil, &invalidArgument{[]apiconv.FieldViolation{{Field: "pageSize", Description: "Invalid value: must be greater than or equal to 0"}}}
	case size == 0:
		size = defaultPageSize
	case size > maxPageSize:
		size = maxPageSize
	}
	if req.GetNamespace() != "" && cluster == "" {
		// A namespace is a namespace of one cluster: the one an empty target.cluster means,
		// as in every other method. An admin names it (it has no cluster of its own).
		if s.authEnabled() {
			return nil, &invalidArgument{[]apiconv.FieldViolation{{Field: "cluster", Description: "Required value: an admin names the cluster of a namespace filter"}}}
		}
		cluster = defaultCluster
	}
	sums, next, err := s.store.List(ctx, store.ListOptions{Cluster: cluster, Namespace: req.GetNamespace(), PageSize: size, PageToken: req.GetPageToken()})
	if err != nil {
		return nil, err
	}
	resp := &pb.ListTargetsResponse{NextPageToken: next}
	for _, t := range sums {
		if cluster != "" && t.Key.Cluster != cluster {
			continue // never another tenant's names, whatever the page token
		}
		resp.Targets = append(resp.Targets, &pb.TargetSummary{
			Target:          &pb.TargetRef{Cluster: t.Key.Cluster, Namespace: t.Key.Namespace, Name: t.Key.Name},
			CurrentReplicas: t.CurrentReplicas,
			DesiredReplicas: t.DesiredReplicas,
			LastSeen:        timestamppb.New(t.LastSeen),
			FirstSeen:       optTime(t.FirstSeen),
		})
	}
	return resp, nil
}

// DeleteTarget forgets a target.
func (s *Server) DeleteTarget(ctx context.Context, req *pb.DeleteTargetRequest) (*pb.DeleteTargetResponse, error) {
	key, violations, err := s.authorizedKey(ctx, req.GetTarget(), "target")
	if err != nil {
		return nil, s.toStatus(ctx, "DeleteTarget", err)
	}
	if len(violations) > 0 {
		return nil, s.toStatus(ctx, "DeleteTarget", &invalidArgument{violations})
	}
	if err := s.store.Delete(ctx, key); err != nil {
		if isNotFound(err) {
			err = targetNotFound(key)
		}
		return nil, s.toStatus(ctx, "DeleteTarget", err)
	}
	return &pb.DeleteTargetResponse{}, nil
}

// optTime is t, or absent when t is zero (not known).
func optTime(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}
