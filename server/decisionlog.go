package server

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/hpa-recommender/hpa-recommender/internal/apiconv"
	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
	"github.com/hpa-recommender/hpa-recommender/recommender"
	"github.com/hpa-recommender/hpa-recommender/store"
)

// maxRecentDecisions bounds the decision log entries kept in a target's record: the newest,
// and the older ones whose ReportScale is still awaited. Past it the oldest are retired
// anyway (their outcome stays "unreported").
const maxRecentDecisions = 4

// logEntry is the decision log entry of d; rid is its recommendation id ("" without a scale).
func logEntry(d *recommender.Decision, rid string) store.DecisionEntry {
	x := &d.Explanation
	e := store.DecisionEntry{
		Time: d.Time, Until: d.Time, Count: 1, RecommendationID: rid,
		CurrentReplicas: d.CurrentReplicas, DesiredReplicas: d.DesiredReplicas,
		Proposal: x.Proposal, Stabilized: x.Stabilized, Limited: x.Limited, Final: x.Final,
		Message: x.Message, Outcome: store.OutcomeUnreported,
	}
	for _, m := range x.Metrics {
		lm := store.DecisionMetric{Index: m.Index, Name: m.Name, Proposal: m.Proposal, UsageRatio: m.UsageRatio,
			ReadyPods: m.ReadyPods, IgnoredPods: m.IgnoredPods, MissingPods: m.MissingPods, UnreadyPods: m.UnreadyPods,
			Error: m.Error}
		if m.Error == "" && int(m.Index) < len(d.CurrentMetrics) {
			lm.Value = metricValue(&d.CurrentMetrics[m.Index])
		}
		e.Metrics = append(e.Metrics, lm)
	}
	for _, c := range d.Conditions {
		e.Conditions = append(e.Conditions, store.DecisionCondition{Type: c.Type, Status: c.Status, Reason: c.Reason})
	}
	return e
}

// metricValue is a metric's current value as currentMetrics shows it: the average utilization
// in percent when it has one, else the average value, else the value.
func metricValue(m *recommender.MetricStatus) string {
	var v *recommender.MetricValueStatus
	switch {
	case m.Resource != nil:
		v = &m.Resource.Current
	case m.ContainerResource != nil:
		v = &m.ContainerResource.Current
	case m.Pods != nil:
		v = &m.Pods.Current
	case m.Object != nil:
		v = &m.Object.Current
	case m.External != nil:
		v = &m.External.Current
	default:
		return ""
	}
	switch {
	case v.AverageUtilization != nil:
		return strconv.Itoa(int(*v.AverageUtilization))
	case v.AverageValue != nil:
		return v.AverageValue.String()
	case v.Value != nil:
		return v.Value.String()
	}
	return ""
}

// sameRun reports whether e repeats last: neither asked for a scale, and they say the same.
func sameRun(last, e *store.DecisionEntry) bool {
	return last.RecommendationID == "" && e.RecommendationID == "" &&
		last.CurrentReplicas == e.CurrentReplicas && last.DesiredReplicas == e.DesiredReplicas &&
		last.Proposal == e.Proposal && last.Stabilized == e.Stabilized && last.Limited == e.Limited &&
		last.Final == e.Final && last.Message == e.Message && slices.Equal(last.Conditions, e.Conditions)
}

// appendDecision adds e to t's decision log: a decision that repeats the newest entry extends
// its run, any other is a new entry. Then it retires what no later write changes.
func appendDecision(t *store.Target, e store.DecisionEntry) {
	recent := slices.Clone(t.RecentDecisions)
	if n := len(recent); n > 0 && sameRun(&recent[n-1], &e) {
		recent[n-1].Count++
		recent[n-1].Until = e.Time
	} else {
		recent = append(recent, e)
	}
	t.RecentDecisions = recent
	retireDecisions(t)
}

// retireDecisions moves from t's recent entries to its retired ones the oldest entries that no
// later write changes: all but the newest (a run may grow) whose ReportScale is not awaited,
// up to the first that is; and beyond maxRecentDecisions, the oldest whatever they await.
func retireDecisions(t *store.Target) {
	recent := t.RecentDecisions
	n := 0
	for n < len(recent)-1 && (recent[n].RecommendationID == "" || !pending(t, recent[n].RecommendationID)) {
		n++
	}
	n = max(n, len(recent)-maxRecentDecisions)
	if n == 0 {
		return
	}
	t.RetiredDecisions = append(slices.Clone(t.RetiredDecisions), recent[:n]...)
	t.RecentDecisions = slices.Clone(recent[n:])
}

func pending(t *store.Target, id string) bool {
	return slices.ContainsFunc(t.Pending, func(p store.PendingDecision) bool { return p.RecommendationID == id })
}

// setOutcome records the outcome of decision id's scale write on its entry, if the record
// still holds it, and retires what that settles.
func setOutcome(t *store.Target, id string, succeeded bool, errMsg string) {
	i := slices.IndexFunc(t.RecentDecisions, func(e store.DecisionEntry) bool { return e.RecommendationID == id })
	if i >= 0 {
		t.RecentDecisions = slices.Clone(t.RecentDecisions)
		e := &t.RecentDecisions[i]
		if succeeded {
			e.Outcome, e.Error = store.OutcomeSucceeded, ""
		} else {
			e.Outcome, e.Error = store.OutcomeFailed, errMsg
		}
	}
	retireDecisions(t)
}

// ListDecisions returns a target's decision log, newest first.
func (s *Server) ListDecisions(ctx context.Context, req *pb.ListDecisionsRequest) (*pb.ListDecisionsResponse, error) {
	resp, err := s.listDecisions(ctx, req)
	return resp, s.toStatus(ctx, "ListDecisions", err)
}

func (s *Server) listDecisions(ctx context.Context, req *pb.ListDecisionsRequest) (*pb.ListDecisionsResponse, error) {
	key, violations, err := s.authorizedKey(ctx, req.GetTarget(), "target")
	if err != nil {
		return nil, err
	}
	opts := store.DecisionListOptions{PageSize: int(req.GetPageSize()), PageToken: req.GetPageToken()}
	if req.GetPageSize() < 0 {
		violations = append(violations, apiconv.FieldViolation{Field: "pageSize", Description: "Invalid value: must be greater than or equal to 0"})
	}
	for _, f := range []struct {
		name string
		ts   *timestamppb.Timestamp
		to   *time.Time
	}{{"since", req.GetSince(), &opts.Since}, {"until", req.GetUntil(), &opts.Until}} {
		if f.ts == nil {
			continue
		}
		if err := f.ts.CheckValid(); err != nil {
			violations = append(violations, apiconv.FieldViolation{Field: f.name, Description: "Invalid value: " + err.Error()})
			continue
		}
		*f.to = f.ts.AsTime()
	}
	if !opts.Since.IsZero() && !opts.Until.IsZero() && opts.Until.Before(opts.Since) {
		violations = append(violations, apiconv.FieldViolation{Field: "until", Description: "Invalid value: must not be before since"})
	}
	if len(violations) > 0 {
		return nil, &invalidArgument{violations}
	}
	entries, next, err := s.store.ListDecisions(ctx, key, opts)
	switch {
	case isNotFound(err):
		return nil, targetNotFound(key)
	case err != nil && errors.Is(err, store.ErrInvalidArgument):
		return nil, &invalidArgument{[]apiconv.FieldViolation{{Field: "pageToken", Description: "Invalid value: not a nextPageToken of this target's decisions"}}}
	case err != nil:
		return nil, err
	}
	resp := &pb.ListDecisionsResponse{NextPageToken: next}
	for i := range entries {
		resp.Decisions = append(resp.Decisions, entryToProto(&entries[i]))
	}
	return resp, nil
}

func entryToProto(e *store.DecisionEntry) *pb.DecisionLogEntry {
	out := &pb.DecisionLogEntry{
		Time: timestamppb.New(e.Time), Until: timestamppb.New(e.Until), Count: e.Count,
		CurrentReplicas: e.CurrentReplicas, DesiredReplicas: e.DesiredReplicas,
		Proposal: e.Proposal, Stabilized: e.Stabilized, Limited: e.Limited, Final: e.Final,
		Message: e.Message, Outcome: e.Outcome, Error: e.Error, RecommendationId: e.RecommendationID,
	}
	for _, m := range e.Metrics {
		out.Metrics = append(out.Metrics, &pb.DecisionLogMetric{Index: m.Index, Name: m.Name, Proposal: m.Proposal,
			UsageRatio: m.UsageRatio, Value: m.Value, ReadyPods: m.ReadyPods, IgnoredPods: m.IgnoredPods,
			MissingPods: m.MissingPods, UnreadyPods: m.UnreadyPods, Error: m.Error})
	}
	for _, c := range e.Conditions {
		out.Conditions = append(out.Conditions, &pb.DecisionLogCondition{Type: c.Type, Status: c.Status, Reason: c.Reason})
	}
	return out
}
