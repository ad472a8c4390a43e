package scaler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"google.golang.org/grpc/status"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"

	"github.com/hpa-recommender/hpa-recommender/clients/internal/local"
	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
	"github.com/hpa-recommender/hpa-recommender/recommender"
)

// serviceDown handles a Recommend that got no answer: fail static, or decide locally once the
// target has gone FallbackAfter without an answer.
func (s *Scaler) serviceDown(ctx context.Context, log *slog.Logger, a *Autoscaler, ts *targetState, g *gathered, shadow bool, cause error) error {
	stale := s.now().Sub(ts.lastAnswer)
	useLocal := s.cfg.FallbackAfter > 0 && stale >= s.cfg.FallbackAfter
	if !ts.unreachable || (useLocal && !ts.fallback.Load()) {
		msg := "the hpa-recommender service is unreachable; not scaling (fail static)"
		if useLocal {
			dir := "scale-up only"
			if s.cfg.FallbackScaleDown {
				dir = "up and down"
			}
			msg = fmt.Sprintf("the hpa-recommender service has not answered for %s; deciding locally (%s)", stale.Round(time.Second), dir)
		} else if s.cfg.FallbackAfter > 0 {
			msg += fmt.Sprintf("; deciding locally after %s without an answer", s.cfg.FallbackAfter)
		}
		log.Warn(msg, "error", cause)
		s.event(a, g.scale, corev1.EventTypeWarning, ReasonRecommenderUnavailable, "%s: %s", msg, status.Convert(cause).Message())
	}
	ts.unreachable = true
	if !useLocal {
		if g.status != nil {
			g.status.noDecision(g.scale.Spec.Replicas)
			g.status.set(condScalingActive, corev1.ConditionFalse, ReasonRecommenderUnavailable, "the hpa-recommender service is unreachable; not scaling (fail static)")
		}
		// Fail static: say what could not be fetched, as the in-tree controller would, and
		// leave the target as it is.
		for i, e := range g.fetchErr {
			if e != "" {
				s.event(a, g.scale, corev1.EventTypeWarning, metricFailureReason(string(a.HPA.Spec.Metrics[i].Type)), "%s", e)
			}
		}
		return fmt.Errorf("recommend: service unreachable: %w", cause)
	}
	s.setFallback(ts, true)
	req := g.req
	resp, res, err := s.local.DecideWithState(s.now(), req, ts.local)
	if err != nil {
		s.event(a, g.scale, corev1.EventTypeWarning, ReasonFailedGetRecommendation, "local decision refused the request: %v", status.Convert(err).Message())
		return fmt.Errorf("local decision: %w", err)
	}
	if !shadow {
		ts.local = res.State
	}
	mode := modeFallback
	if shadow {
		mode = modeFallbackShadow
	}
	return s.act(ctx, log, a, ts, g, resp, mode, res)
}

// act carries out a decision: events for its metrics, then the scale write and its report
// (or, in shadow mode, only the log line and the counters).
func (s *Scaler) act(ctx context.Context, log *slog.Logger, a *Autoscaler, ts *targetState, g *gathered, resp *pb.RecommendResponse, mode string, mirror *local.Result) error {
	cur, desired := resp.GetCurrentReplicas(), resp.GetDesiredReplicas()
	local := mode == modeFallback || mode == modeFallbackShadow
	shadow := mode == modeShadow || mode == modeFallbackShadow
	s.tel.decisions.WithLabelValues(mode, direction(cur, desired)).Inc()
	s.tel.desired.WithLabelValues(a.Namespace, a.Name, mode).Set(float64(desired))
	if mode == modeShadow && ts.foreignManager != "" {
		s.compareWithInTree(log, a, g, resp)
	}
	s.metricEvents(a, g.scale, resp)
	ch := g.status
	if ch == nil {
		ch = &statusChange{}
	}
	if err := ch.fromResponse(resp); err != nil {
		log.Warn("currentMetrics not shown in the status", "error", err)
	}
	if metricsFailed(resp) {
		// No metric gave a proposal: upstream keeps the previous desiredReplicas.
		ch.keepDesired = true
	}
	if mode == modeService || mode == modeShadow {
		if done, err := s.metricsFallback(ctx, log, a, ts, g, resp, ch, shadow); done {
			return err
		}
	}
	if s.pausedDirection(ctx, log, a, ts, resp, ch, shadow) {
		return nil
	}
	if !resp.GetScale() || desired == cur {
		log.Debug("no change", "mode", mode, "replicas", cur, "explanation", resp.GetExplanation().GetMessage())
		return nil
	}
	reason := rescaleReason(resp)
	suffix := ""
	if local {
		suffix = " (decided locally: the hpa-recommender service is unreachable)"
	}
	if shadow {
		log.Info("shadow: would scale", "mode", mode, "from", cur, "to", desired, "reason", reason, "explanation", resp.GetExplanation().GetMessage())
		return nil
	}
	if local && desired < cur && !s.cfg.FallbackScaleDown {
		s.tel.scaleWrites.WithLabelValues(mode, "suppressed").Inc()
		log.Info("local decision to scale down not applied (scale-up only while the service is unreachable)", "from", cur, "to", desired)
		s.event(a, g.scale, corev1.EventTypeNormal, ReasonLocalDecisionSuppressed, "New size: %d; reason: %s; not applied: local decisions only scale up", desired, reason)
		return nil
	}
	err := s.kube.updateScale(ctx, g.resource, g.scale, cur, desired)
	now := s.now()
	ch.rescaleOutcome(a.HPA, now, cur, desired, err)
	if err != nil {
		result := "failure"
		if errors.Is(err, errScaleChanged) {
			result = "changed"
		}
		s.tel.scaleWrites.WithLabelValues(mode, result).Inc()
		s.rescaleEvent(a, g.scale, desired, reason, err, suffix)
		log.Warn("scale write failed", "mode", mode, "from", cur, "to", desired, "error", err)
		if mirror != nil {
			ts.local = recommender.RecordRescale(now, mirror.Spec, ts.local, &mirror.Decision, false, err.Error())
		}
		if id := resp.GetRecommendationId(); id != "" {
			s.queueReport(ctx, log, ts, &pb.ReportScaleRequest{Target: s.targetRef(a), RecommendationId: id, Succeeded: false, Error: err.Error()})
		}
		return fmt.Errorf("scale %s from %d to %d: %w", a.Key(), cur, desired, err)
	}
	s.tel.scaleWrites.WithLabelValues(mode, "success").Inc()
	s.rescaleEvent(a, g.scale, desired, reason, nil, suffix)
	log.Info("scaled", "mode", mode, "from", cur, "to", desired, "reason", reason, "explanation", resp.GetExplanation().GetMessage())
	if mirror != nil {
		d := recommender.Decision{Time: now, CurrentReplicas: cur, DesiredReplicas: desired}
		ts.local = recommender.RecordRescale(now, mirror.Spec, ts.local, &d, true, "")
	}
	if id := resp.GetRecommendationId(); id != "" {
		s.queueReport(ctx, log, ts, &pb.ReportScaleRequest{Target: s.targetRef(a), RecommendationId: id, Succeeded: true})
	}
	return nil
}

// metricEvents emits upstream's per-metric failure events and, when no metric could be used,
// FailedComputeMetricsReplicas.
func (s *Scaler) metricEvents(a *Autoscaler, sc *autoscalingv1.Scale, resp *pb.RecommendResponse) {
	ex := resp.GetExplanation()
	var invalid int
	var first string
	for _, m := range ex.GetMetrics() {
		if m.GetError() == "" {
			continue
		}
		invalid++
		if first == "" {
			first = m.GetError()
		}
		typ := ""
		if i := int(m.GetIndex()); i >= 0 && i < len(a.HPA.Spec.Metrics) {
			typ = string(a.HPA.Spec.Metrics[i].Type)
		} else if len(a.HPA.Spec.Metrics) == 0 {
			typ = "Resource"
		}
		s.event(a, sc, corev1.EventTypeWarning, metricFailureReason(typ), "%s", m.GetError())
	}
	if invalid > 0 && metricsFailed(resp) {
		s.event(a, sc, corev1.EventTypeWarning, ReasonFailedComputeMetricsReplicas,
			"invalid metrics (%d invalid out of %d), first error is: %s", invalid, len(ex.GetMetrics()), first)
	}
}

// metricsFailed reports whether no metric gave a proposal (upstream's computeReplicasForMetrics
// returning -1): ScalingActive is False for a reason other than ScalingDisabled.
func metricsFailed(resp *pb.RecommendResponse) bool {
	if resp.GetExplanation().GetWinningMetric() >= 0 {
		return false
	}
	for _, c := range resp.GetConditions() {
		if c.GetType() == recommender.ConditionScalingActive && c.GetStatus() == recommender.StatusFalse && c.GetReason() != "ScalingDisabled" {
			return true
		}
	}
	return false
}

// defaultMetric is the metric upstream defaults an empty spec.metrics to: 80% average CPU
// utilization.
func defaultMetric() *autoscalingv2.MetricSpec {
	u := int32(80)
	return &autoscalingv2.MetricSpec{
		Type: autoscalingv2.ResourceMetricSourceType,
		Resource: &autoscalingv2.ResourceMetricSource{
			Name:   corev1.ResourceCPU,
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &u},
		},
	}
}
