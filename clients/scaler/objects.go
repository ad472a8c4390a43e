package scaler

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hpa-recommender/hpa-recommender/clients/internal/pbconv"
)

// Sources of autoscalers (Config.Sources, --source).
const (
	// SourceManifests is the manifests directory.
	SourceManifests = "manifests"
	// SourceHPA is autoscaling/v2 HorizontalPodAutoscaler objects.
	SourceHPA = "hpa"
	// SourceCustom is the CentralHorizontalPodAutoscaler custom resource.
	SourceCustom = "custom"
)

// sourceOrder is the order sources are merged in: when two name the same namespace/name, the
// first one's autoscaler is kept.
var sourceOrder = []string{SourceManifests, SourceHPA, SourceCustom}

// hpaResource is autoscaling/v2 horizontalpodautoscalers.
var hpaResource = autoscalingv2.SchemeGroupVersion.WithResource("horizontalpodautoscalers")

// Object is set on an Autoscaler that is a Kubernetes object (the hpa and custom sources): the
// scaler writes its status subresource and records events on it. Autoscaler.HPA holds its
// metadata (UID, generation, resourceVersion), spec and status as read.
type Object struct {
	// Source is SourceHPA or SourceCustom.
	Source string
	// APIVersion and Kind name the object's type in events.
	APIVersion, Kind string
	// custom are the custom resource's own status fields as read (explanation, reference,
	// targets); zero for an HPA object.
	custom customFields
}

// writtenStatus is the object as the scaler's last status write returned it, and the
// resourceVersion it was written over: while the informer still shows that version, the
// written object is the newer one.
type writtenStatus struct {
	from   string
	obj    *autoscalingv2.HorizontalPodAutoscaler
	custom customFields
}

// writeStatus applies ch to a's status subresource, as the in-tree controller's
// updateStatusIfNeeded does: nothing is written when the status would not change. A custom
// resource's status also gets the explanation and the REFERENCE and TARGETS columns
// (customFields), which count as change like the rest; an HPA's never does. A conflict
// (someone else wrote the object) is retried once over a fresh read; a failure is an event
// FailedUpdateStatus on the object, never an error of the sync.
func (s *Scaler) writeStatus(ctx context.Context, log *slog.Logger, a *Autoscaler, ts *targetState, ch *statusChange) {
	if a.Object == nil || ch.empty() {
		return
	}
	base, custom := a.HPA, a.Object.custom
	if w := ts.written; w != nil && w.obj.UID == base.UID && w.from == base.ResourceVersion {
		base, custom = w.obj, w.custom
	}
	for attempt := 0; ; attempt++ {
		next := nextStatus(base.Status, base.Generation, ch, s.now())
		nextCustom := custom
		if a.Object.Source == SourceCustom {
			nextCustom = nextCustomFields(custom, &base.Spec, &next, ch)
		}
		if apiequality.Semantic.DeepEqual(base.Status, next) && nextCustom == custom {
			s.tel.statusWrites.WithLabelValues("unchanged").Inc()
			return
		}
		obj := base.DeepCopy()
		obj.Status = next
		written, wcustom, err := s.kube.updateObjectStatus(ctx, a.Object, obj, nextCustom)
		if err == nil {
			s.tel.statusWrites.WithLabelValues("written").Inc()
			ts.written = &writtenStatus{from: base.ResourceVersion, obj: written, custom: wcustom}
			return
		}
		if apierrors.IsConflict(err) && attempt == 0 {
			fresh, fcustom, gerr := s.kube.getObject(ctx, a.Object, a.Namespace, a.Name)
			if gerr == nil && fresh.UID == a.HPA.UID {
				base, custom = fresh, fcustom
				continue
			}
			if gerr != nil {
				err = fmt.Errorf("%w (re-reading it failed: %v)", err, gerr)
			}
		}
		s.tel.statusWrites.WithLabelValues("error").Inc()
		log.Warn("status write failed", "error", err)
		s.event(a, nil, corev1.EventTypeWarning, ReasonFailedUpdateStatus, "%v", err)
		return
	}
}

// updateObjectStatus writes obj's status (and, for the custom resource, its own fields f) to
// its status subresource and returns the object as written.
func (k *Kube) updateObjectStatus(ctx context.Context, o *Object, obj *autoscalingv2.HorizontalPodAutoscaler, f customFields) (*autoscalingv2.HorizontalPodAutoscaler, customFields, error) {
	switch o.Source {
	case SourceHPA:
		if k.Client == nil {
			return nil, customFields{}, fmt.Errorf("no Kubernetes client to write the status of %s", obj.Name)
		}
		out, err := k.Client.AutoscalingV2().HorizontalPodAutoscalers(obj.Namespace).UpdateStatus(ctx, obj, metav1.UpdateOptions{FieldManager: fieldManager})
		return out, customFields{}, err
	case SourceCustom:
		return k.updateCustomStatus(ctx, obj, f)
	}
	return nil, customFields{}, fmt.Errorf("unknown source %q", o.Source)
}

// getObject reads the autoscaler object namespace/name afresh.
func (k *Kube) getObject(ctx context.Context, o *Object, namespace, name string) (*autoscalingv2.HorizontalPodAutoscaler, customFields, error) {
	switch o.Source {
	case SourceHPA:
		if k.Client == nil {
			return nil, customFields{}, fmt.Errorf("no Kubernetes client to read %s/%s", namespace, name)
		}
		out, err := k.Client.AutoscalingV2().HorizontalPodAutoscalers(namespace).Get(ctx, name, metav1.GetOptions{})
		return out, customFields{}, err
	case SourceCustom:
		return k.getCustom(ctx, namespace, name)
	}
	return nil, customFields{}, fmt.Errorf("unknown source %q", o.Source)
}

// fieldManager names the scaler's writes in managedFields.
const fieldManager = "hpa-scaler"

// hpaAutoscaler is the Autoscaler of an autoscaling/v2 HorizontalPodAutoscaler object.
func hpaAutoscaler(h *autoscalingv2.HorizontalPodAutoscaler) *Autoscaler {
	return &Autoscaler{
		Namespace: h.Namespace,
		Name:      h.Name,
		HPA:       h,
		Spec:      pbconv.SpecToProto(&h.Spec),
		Shadow:    strings.EqualFold(h.Annotations[ModeAnnotation], ModeShadow),
		Controls:  newControls(h.Namespace, h),
		Source:    "horizontalpodautoscalers.autoscaling/" + h.Namespace + "/" + h.Name,
		Object:    &Object{Source: SourceHPA, APIVersion: "autoscaling/v2", Kind: "HorizontalPodAutoscaler"},
	}
}
