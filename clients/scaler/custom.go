package scaler

import (
	"context"
	"fmt"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/hpa-recommender/hpa-recommender/clients/internal/pbconv"
	"github.com/hpa-recommender/hpa-recommender/clients/scaler/api/v1alpha1"
)

// customAPIVersion is the custom resource's apiVersion.
var customAPIVersion = v1alpha1.SchemeGroupVersion.String()

// customFields are the custom resource's status fields an HPA's status does not have. The
// zero value is an object of another source (or a custom resource never written).
type customFields struct {
	// explanation is status.explanation, the last decision's message.
	explanation string
	// reference and targets are status.reference and status.targets, what the REFERENCE and
	// TARGETS columns of `kubectl get hpa` would show (columns.go).
	reference, targets string
}

// nextCustomFields are the custom fields of a custom resource of spec whose status becomes
// next after ch: reference and targets are printed from spec and next; the explanation
// changes only when ch recreates the status (a decision, or a sync that made none).
func nextCustomFields(old customFields, spec *autoscalingv2.HorizontalPodAutoscalerSpec, next *autoscalingv2.HorizontalPodAutoscalerStatus, ch *statusChange) customFields {
	f := customFields{
		explanation: old.explanation,
		reference:   hpaReference(spec.ScaleTargetRef),
		targets:     hpaTargets(spec.Metrics, next.CurrentMetrics),
	}
	if ch.recreate {
		f.explanation = ch.explanation
	}
	return f
}

// fromCustom converts a CentralHorizontalPodAutoscaler read through the dynamic client to the
// HPA it has the shape of, and the status fields the HPA has not.
func fromCustom(u *unstructured.Unstructured) (*autoscalingv2.HorizontalPodAutoscaler, customFields, error) {
	var c v1alpha1.CentralHorizontalPodAutoscaler
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.UnstructuredContent(), &c); err != nil {
		return nil, customFields{}, fmt.Errorf("%s %s/%s: %w", v1alpha1.Kind, u.GetNamespace(), u.GetName(), err)
	}
	f := customFields{explanation: c.Status.Explanation, reference: c.Status.Reference, targets: c.Status.Targets}
	return &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: c.ObjectMeta, Spec: c.Spec, Status: c.Status.HorizontalPodAutoscalerStatus}, f, nil
}

// toCustom is the inverse of fromCustom.
func toCustom(h *autoscalingv2.HorizontalPodAutoscaler, f customFields) (*unstructured.Unstructured, error) {
	c := &v1alpha1.CentralHorizontalPodAutoscaler{
		TypeMeta:   metav1.TypeMeta{APIVersion: customAPIVersion, Kind: v1alpha1.Kind},
		ObjectMeta: h.ObjectMeta,
		Spec:       h.Spec,
		Status: v1alpha1.CentralHorizontalPodAutoscalerStatus{
			HorizontalPodAutoscalerStatus: h.Status,
			Reference:                     f.reference,
			Targets:                       f.targets,
			Explanation:                   f.explanation,
		},
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(c)
	if err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// customAutoscaler is the Autoscaler of a CentralHorizontalPodAutoscaler object.
func customAutoscaler(u *unstructured.Unstructured) (*Autoscaler, error) {
	h, f, err := fromCustom(u)
	if err != nil {
		return nil, err
	}
	return &Autoscaler{
		Namespace: h.Namespace,
		Name:      h.Name,
		HPA:       h,
		Spec:      pbconv.SpecToProto(&h.Spec),
		Shadow:    strings.EqualFold(h.Annotations[ModeAnnotation], ModeShadow),
		Controls:  newControls(h.Namespace, h),
		Source:    v1alpha1.Resource + "." + v1alpha1.Group + "/" + h.Namespace + "/" + h.Name,
		Object:    &Object{Source: SourceCustom, APIVersion: customAPIVersion, Kind: v1alpha1.Kind, custom: f},
	}, nil
}

func (k *Kube) updateCustomStatus(ctx context.Context, obj *autoscalingv2.HorizontalPodAutoscaler, f customFields) (*autoscalingv2.HorizontalPodAutoscaler, customFields, error) {
	if k.Dynamic == nil {
		return nil, customFields{}, fmt.Errorf("no dynamic client to write the status of %s", obj.Name)
	}
	u, err := toCustom(obj, f)
	if err != nil {
		return nil, customFields{}, err
	}
	out, err := k.Dynamic.Resource(v1alpha1.GroupVersionResource).Namespace(obj.Namespace).UpdateStatus(ctx, u, metav1.UpdateOptions{FieldManager: fieldManager})
	if err != nil {
		return nil, customFields{}, err
	}
	return fromCustom(out)
}

func (k *Kube) getCustom(ctx context.Context, namespace, name string) (*autoscalingv2.HorizontalPodAutoscaler, customFields, error) {
	if k.Dynamic == nil {
		return nil, customFields{}, fmt.Errorf("no dynamic client to read %s/%s", namespace, name)
	}
	out, err := k.Dynamic.Resource(v1alpha1.GroupVersionResource).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, customFields{}, err
	}
	return fromCustom(out)
}
