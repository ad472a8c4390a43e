package scaler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"google.golang.org/grpc/status"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

// Conditions and event reasons of the per-object controls (annotations.go).
const (
	// condAnnotationsValid is False while an annotation is invalid; once the annotations are
	// fixed it turns True (it is not added to objects that never had a problem).
	condAnnotationsValid = autoscalingv2.HorizontalPodAutoscalerConditionType("AnnotationsValid")
	// condFallback is True while the metrics fallback decides (KEDA's condition name); False
	// once it ends.
	condFallback       = autoscalingv2.HorizontalPodAutoscalerConditionType("Fallback")
	condScalingLimited = autoscalingv2.ScalingLimited

	// ReasonInvalidAnnotation: an hpa-recommender.io annotation has an invalid value (event
	// and AnnotationsValid False); the message names each and how it is read meanwhile.
	ReasonInvalidAnnotation = "InvalidAnnotation"
	reasonValidAnnotations  = "ValidAnnotations"
	// ReasonScalingPaused: the autoscaler is paused (event when the pause starts; the reason
	// of ScalingActive False while it lasts). ReasonScalingResumed: the pause ended.
	ReasonScalingPaused  = "ScalingPaused"
	ReasonScalingResumed = "ScalingResumed"
	// reasonScaleInPaused and reasonScaleOutPaused replace ScalingLimited's reason when the
	// decision wanted the paused direction.
	reasonScaleInPaused  = "ScaleInPaused"
	reasonScaleOutPaused = "ScaleOutPaused"
	// ReasonFallbackActive: the metrics of the autoscaler all failed for fallback-after syncs;
	// the count is the fallback's (event when it starts; Fallback True while it lasts).
	// ReasonFallbackEnded: a metric works again (event; Fallback False).
	ReasonFallbackActive = "FallbackActive"
	ReasonFallbackEnded  = "FallbackEnded"

	// modePaused and modeMetricsFallback label the scale writes of paused-replicas and of the
	// metrics fallback.
	modePaused          = "paused"
	modeMetricsFallback = "metrics_fallback"
)

// replace records condition t, dropping any set earlier in the same sync (the service's),
// so the object's condition goes straight to this one.
func (c *statusChange) replace(t autoscalingv2.HorizontalPodAutoscalerConditionType, st corev1.ConditionStatus, reason, format string, args ...any) {
	c.conditions = slices.DeleteFunc(c.conditions, func(h autoscalingv2.HorizontalPodAutoscalerCondition) bool { return h.Type == t })
	c.set(t, st, reason, format, args...)
}

// checkAnnotations puts a's annotation problems on its status (AnnotationsValid) and, once per
// distinct set of problems, in an event and the log.
func (s *Scaler) checkAnnotations(log *slog.Logger, a *Autoscaler, ts *targetState, ch *statusChange) {
	probs := a.Controls.Problems
	if len(probs) == 0 {
		ts.problems = ""
		ch.resolve(condAnnotationsValid, corev1.ConditionTrue, reasonValidAnnotations, "the hpa-recommender.io annotations are valid")
		return
	}
	msg := strings.Join(probs, "; ")
	ch.set(condAnnotationsValid, corev1.ConditionFalse, ReasonInvalidAnnotation, "%s", msg)
	if ts.problems != msg {
		ts.problems = msg
		log.Warn("invalid annotations", "problems", msg)
		s.event(a, nil, corev1.EventTypeWarning, ReasonInvalidAnnotation, "%s", msg)
	}
}

// pauseMessage says how a is paused.
func pauseMessage(c *Controls) string {
	if n := c.PausedReplicas; n != nil {
		return fmt.Sprintf("scaling is paused by annotation %s: the target is held at %d replicas", PausedReplicasAnnotation, *n)
	}
	return fmt.Sprintf("scaling is paused by annotation %s: the target is held at its current count", PausedAnnotation)
}

// syncPaused finishes the sync of a paused autoscaler: the service is asked with dryRun (it
// records nothing), so the status keeps showing the current metrics and what it would decide;
// the target is held at its count, or scaled once to paused-replicas. The pause does not need
// the service: when it cannot be asked, the pause still applies.
func (s *Scaler) syncPaused(ctx context.Context, log *slog.Logger, a *Autoscaler, ts *targetState, g *gathered, shadow bool) error {
	ctl := &a.Controls
	ch := g.status
	cur := g.scale.Spec.Replicas
	hold := cur
	if n := ctl.PausedReplicas; n != nil {
		hold = *n
	}
	msg := pauseMessage(ctl)
	rctx, cancel := s.rpcContext(ctx)
	resp, err := s.rec.Recommend(rctx, g.req)
	cancel()
	var would string
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		s.tel.serviceErrors.WithLabelValues(status.Code(err).String()).Inc()
		log.Debug("paused: the service's dry run failed", "error", err)
		ch.noDecision(cur)
		would = "the hpa-recommender service could not be asked what it would decide: " + status.Convert(err).Message()
	} else {
		if err := ch.fromResponse(resp); err != nil {
			log.Warn("currentMetrics not shown in the status", "error", err)
		}
		would = fmt.Sprintf("unpaused, it would scale to %d: %s", resp.GetDesiredReplicas(), resp.GetExplanation().GetMessage())
	}
	ch.desired, ch.keepDesired = hold, false
	ch.replace(condScalingActive, corev1.ConditionFalse, ReasonScalingPaused, "%s", msg)
	ch.explanation = msg + "; " + would
	if !ts.paused {
		ts.paused = true
		log.Info("paused", "how", msg)
		s.event(a, g.scale, corev1.EventTypeNormal, ReasonScalingPaused, "%s", msg)
	}
	if hold == cur {
		return nil
	}
	if shadow {
		log.Info("shadow: would scale", "mode", modePaused, "from", cur, "to", hold, "reason", msg)
		return nil
	}
	return s.writeScale(ctx, log, a, g, ch, cur, hold, modePaused,
		fmt.Sprintf("paused at %d by annotation %s", hold, PausedReplicasAnnotation))
}

// writeScale writes a count the scaler chose itself (paused-replicas, the metrics fallback),
// with upstream's events and status. There is no service decision to report.
func (s *Scaler) writeScale(ctx context.Context, log *slog.Logger, a *Autoscaler, g *gathered, ch *statusChange, cur, desired int32, mode, reason string) error {
	err := s.kube.updateScale(ctx, g.resource, g.scale, cur, desired)
	ch.rescaleOutcome(a.HPA, s.now(), cur, desired, err)
	if err != nil {
		result := "failure"
		if errors.Is(err, errScaleChanged) {
			result = "changed"
		}
		s.tel.scaleWrites.WithLabelValues(mode, result).Inc()
		s.rescaleEvent(a, g.scale, desired, reason, err, "")
		log.Warn("scale write failed", "mode", mode, "from", cur, "to", desired, "error", err)
		return fmt.Errorf("scale %s from %d to %d: %w", a.Key(), cur, desired, err)
	}
	s.tel.scaleWrites.WithLabelValues(mode, "success").Inc()
	s.rescaleEvent(a, g.scale, desired, reason, nil, "")
	log.Info("scaled", "mode", mode, "from", cur, "to", desired, "reason", reason)
	return nil
}

// countMetricFailures updates the target's run of consecutive syncs whose metrics all failed
// to be fetched. A selector problem (SelectorRequired, InvalidSelector, AmbiguousSelector) is
// not a metric failure: the fallback never scales a target whose pods it cannot tell apart.
func countMetricFailures(ts *targetState, g *gathered) {
	all := len(g.req.GetMetrics()) > 0 && !g.selectorProblem
	for _, m := range g.req.GetMetrics() {
		if m.GetError() == "" {
			all = false
		}
	}
	if all {
		ts.failedSyncs++
	} else {
		ts.failedSyncs = 0
	}
}

// metricsFallback applies a's metrics fallback to the service's answer resp. It returns true
// when the fallback decided the sync (its error is the scale write's).
func (s *Scaler) metricsFallback(ctx context.Context, log *slog.Logger, a *Autoscaler, ts *targetState, g *gathered, resp *pb.RecommendResponse, ch *statusChange, shadow bool) (bool, error) {
	if !metricsFailed(resp) {
		ts.lastGood, ts.haveGood = resp.GetDesiredReplicas(), true
	}
	f := a.Controls.Fallback
	if f == nil || ts.failedSyncs < f.After {
		if ts.metricsFallback {
			ts.metricsFallback = false
			log.Info("metrics fallback ended")
			s.event(a, g.scale, corev1.EventTypeNormal, ReasonFallbackEnded, "a metric can be fetched again; the autoscaler decides from its metrics")
		}
		ch.resolve(condFallback, corev1.ConditionFalse, ReasonFallbackEnded, "the metrics fallback is not active")
		return false, nil
	}
	cur := resp.GetCurrentReplicas()
	lastGood := int32(-1)
	if ts.haveGood {
		lastGood = ts.lastGood
	}
	minR := int32(1)
	if m := a.HPA.Spec.MinReplicas; m != nil {
		minR = *m
	}
	n := fallbackReplicas(f, cur, lastGood, minR, a.HPA.Spec.MaxReplicas)
	msg := fmt.Sprintf("every metric failed in the last %d syncs: the fallback (annotation %s: %q) sets %d replicas", ts.failedSyncs, FallbackReplicasAnnotation, f.String(), n)
	ch.replace(condFallback, corev1.ConditionTrue, ReasonFallbackActive, "%s", msg)
	ch.desired, ch.keepDesired = n, false
	ch.explanation = msg + "; " + ch.explanation
	if !ts.metricsFallback {
		ts.metricsFallback = true
		log.Warn("metrics fallback", "replicas", n, "failed_syncs", ts.failedSyncs)
		s.event(a, g.scale, corev1.EventTypeWarning, ReasonFallbackActive, "%s", msg)
	}
	var err error
	switch {
	case n == cur:
	case shadow:
		log.Info("shadow: would scale", "mode", modeMetricsFallback, "from", cur, "to", n, "reason", msg)
		return true, nil
	default:
		err = s.writeScale(ctx, log, a, g, ch, cur, n, modeMetricsFallback,
			fmt.Sprintf("metrics fallback (annotation %s: %q) after %d syncs whose metrics all failed", FallbackReplicasAnnotation, f.String(), ts.failedSyncs))
	}
	// The service's own decision (a count outside [min, max] corrected) was not carried out
	// as such: say so, once, as its outcome.
	if id := resp.GetRecommendationId(); id != "" && resp.GetScale() && resp.GetDesiredReplicas() != cur && !shadow {
		ok := err == nil && n == resp.GetDesiredReplicas()
		rep := &pb.ReportScaleRequest{Target: s.targetRef(a), RecommendationId: id, Succeeded: ok}
		if !ok {
			rep.Error = fmt.Sprintf("not applied: the metrics fallback set %d replicas", n)
		}
		s.queueReport(ctx, log, ts, rep)
	}
	return true, err
}

// pausedDirection holds a decision whose direction is paused (paused-scale-in or
// paused-scale-out). The service already decides with that direction's selectPolicy Disabled;
// this covers what upstream does regardless of policies (a count outside [min, max] is
// corrected) and says why on ScalingLimited. It returns true when the decision is held.
func (s *Scaler) pausedDirection(ctx context.Context, log *slog.Logger, a *Autoscaler, ts *targetState, resp *pb.RecommendResponse, ch *statusChange, shadow bool) bool {
	cur, desired := resp.GetCurrentReplicas(), resp.GetDesiredReplicas()
	in, out := a.Controls.PausedScaleIn, a.Controls.PausedScaleOut
	for _, c := range resp.GetConditions() {
		if autoscalingv2.HorizontalPodAutoscalerConditionType(c.GetType()) != condScalingLimited || c.GetStatus() != string(corev1.ConditionTrue) {
			continue
		}
		// With the direction's policy Disabled, its rate limit is the current count: a
		// limited decision is one that wanted the paused direction.
		switch {
		case in && c.GetReason() == "ScaleDownLimit":
			ch.replace(condScalingLimited, corev1.ConditionTrue, reasonScaleInPaused, "the desired count is lower, but scale-in is paused by annotation %s", PausedScaleInAnnotation)
		case out && c.GetReason() == "ScaleUpLimit":
			ch.replace(condScalingLimited, corev1.ConditionTrue, reasonScaleOutPaused, "the desired count is higher, but scale-out is paused by annotation %s", PausedScaleOutAnnotation)
		}
	}
	if !resp.GetScale() || desired == cur || (desired < cur && !in) || (desired > cur && !out) {
		return false
	}
	reason, key := reasonScaleInPaused, PausedScaleInAnnotation
	if desired > cur {
		reason, key = reasonScaleOutPaused, PausedScaleOutAnnotation
	}
	msg := fmt.Sprintf("the decision to scale from %d to %d is not applied: annotation %s", cur, desired, key)
	ch.replace(condScalingLimited, corev1.ConditionTrue, reason, "%s", msg)
	ch.desired = cur
	log.Info("decision held: its direction is paused", "from", cur, "to", desired, "annotation", key)
	if id := resp.GetRecommendationId(); id != "" && !shadow {
		s.queueReport(ctx, log, ts, &pb.ReportScaleRequest{Target: s.targetRef(a), RecommendationId: id, Succeeded: false, Error: msg})
	}
	return true
}
