package scaler

import (
	"fmt"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

// Event reasons. The first group are the in-tree HPA controller's own; the rest name what only
// this scaler does.
const (
	ReasonSuccessfulRescale            = "SuccessfulRescale"
	ReasonFailedRescale                = "FailedRescale"
	ReasonFailedGetScale               = "FailedGetScale"
	ReasonFailedComputeMetricsReplicas = "FailedComputeMetricsReplicas"
	ReasonSelectorRequired             = "SelectorRequired"
	ReasonInvalidSelector              = "InvalidSelector"
	ReasonAmbiguousSelector            = "AmbiguousSelector"

	// ReasonRecommenderUnavailable: the service did not answer; nothing is scaled (fail
	// static) or the scaler decides locally (the message says which).
	ReasonRecommenderUnavailable = "RecommenderUnavailable"
	// ReasonRecommenderAvailable: the service answers again; its history is authoritative.
	ReasonRecommenderAvailable = "RecommenderAvailable"
	// ReasonFailedGetRecommendation: the service refused the request (e.g. an invalid spec).
	ReasonFailedGetRecommendation = "FailedGetRecommendation"
	// ReasonLocalDecisionSuppressed: a local fallback decision to scale down was not applied.
	ReasonLocalDecisionSuppressed = "LocalScaleDownSuppressed"
	// ReasonInvalidSpec: an autoscaler object could not be read as an autoscaler; it is not
	// loaded until it is fixed.
	ReasonInvalidSpec = "InvalidSpec"
)

// metricFailureReason is upstream's event reason for a metric of type t that failed.
func metricFailureReason(t string) string {
	switch t {
	case "Resource", "ContainerResource", "Pods", "Object", "External":
		return "FailedGet" + t + "Metric"
	default:
		return "InvalidMetricSourceType"
	}
}

func eventScheme() *runtime.Scheme { return scheme.Scheme }

// eventTarget is the object events go on: the autoscaler object itself when there is one (the
// hpa and custom sources), else the scale target, with its UID once the scale has been read.
func eventTarget(a *Autoscaler, sc *autoscalingv1.Scale) *corev1.ObjectReference {
	if o := a.Object; o != nil {
		return &corev1.ObjectReference{APIVersion: o.APIVersion, Kind: o.Kind, Name: a.Name, Namespace: a.Namespace,
			UID: a.HPA.UID, ResourceVersion: a.HPA.ResourceVersion}
	}
	ref := a.HPA.Spec.ScaleTargetRef
	o := &corev1.ObjectReference{APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name, Namespace: a.Namespace}
	if sc != nil {
		o.UID = sc.UID
	}
	return o
}

// event records one event on the autoscaler object, with upstream's message; for a manifest
// (a file, no object of its own) on the scale target, the message naming the autoscaler.
func (s *Scaler) event(a *Autoscaler, sc *autoscalingv1.Scale, eventType, reason, format string, args ...any) {
	if s.kube == nil || s.kube.Events == nil {
		return
	}
	msg := fmt.Sprintf(format, args...)
	if s.cfg.DryRun || a.Shadow {
		// Shadow mode writes nothing to the cluster, events included.
		s.log.Info("shadow: would record event", "autoscaler", a.Key(), "type", eventType, "reason", reason, "message", msg)
		return
	}
	if a.Object != nil {
		s.kube.Events.Event(eventTarget(a, sc), eventType, reason, msg)
		return
	}
	s.kube.Events.Eventf(eventTarget(a, sc), eventType, reason, "HorizontalPodAutoscaler %s: %s", a.Name, msg)
}

// rescaleReason is the reason of a rescale event: the decision's sentence. The in-tree
// controller names only the winning metric ("cpu resource utilization (percentage of request)
// above target") or the bound that was out of range; the sentence also names the values, the
// tolerance and every rule that moved or held the count, the same words as the object's
// status.explanation and the service's decision log.
func rescaleReason(resp *pb.RecommendResponse) string {
	return resp.GetExplanation().GetMessage()
}

// rescaleEvent records the event of a scale write to desired replicas in the in-tree
// controller's words: SuccessfulRescale "New size: N; reason: R", or, when err is set,
// FailedRescale "New size: N; reason: R; error: E"; suffix follows either.
func (s *Scaler) rescaleEvent(a *Autoscaler, sc *autoscalingv1.Scale, desired int32, reason string, err error, suffix string) {
	if err != nil {
		s.event(a, sc, corev1.EventTypeWarning, ReasonFailedRescale, "New size: %d; reason: %s; error: %v%s", desired, reason, err, suffix)
		return
	}
	s.event(a, sc, corev1.EventTypeNormal, ReasonSuccessfulRescale, "New size: %d; reason: %s%s", desired, reason, suffix)
}

func isConflict(err error) bool { return apierrors.IsConflict(err) }
