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

// fromCustom converts a CentralHorizontalPodAutoscaler read through the dynamic client to the
// HPA it has the shape of, and its explanation.
func fromCustom(u *unstructured.Unstructured) (*autoscalingv2.HorizontalPodAutoscaler, string, error) {
	var c v1alpha1.CentralHorizontalPodAutoscaler
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.UnstructuredContent(), &c); err != nil {
		return nil, "", fmt.Errorf("%s %s/%s: %w", v1alpha1.Kind, u.GetNamespace(), u.GetName(), err)
	}
	return &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: c.ObjectMeta, Spec: c.Spec, Status: c.Status.HorizontalPodAutoscalerStatus}, c.Status.Explanation, nil
}

// toCustom is the inverse of fromCustom.
func toCustom(h *autoscalingv2.HorizontalPodAutoscaler, explanation string) (*unstructured.Unstructured, error) {
	c := &v1alpha1.CentralHorizontalPodAutoscaler{
		TypeMeta:   metav1.TypeMeta{APIVersion: customAPIVersion, Kind: v1alpha1.Kind},
		ObjectMeta: h.ObjectMeta,
		Spec:       h.Spec,
		Status:     v1alpha1.CentralHorizontalPodAutoscalerStatus{HorizontalPodAutoscalerStatus: h.Status, Explanation: explanation},
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(c)
	if err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// customAutoscaler is the Autoscaler of a CentralHorizontalPodAutoscaler object.
func customAutoscaler(u *unstructured.Unstructured) (*Autoscaler, error) {
	h, expl, err := fromCustom(u)
	if err != nil {
		return nil, err
	}
	return &Autoscaler{
		Namespace: h.Namespace,
		Name:      h.Name,
		HPA:       h,
		Spec:      pbconv.SpecToProto(&h.Spec),
		Shadow:    strings.EqualFold(h.Annotations[ModeAnnotation], ModeShadow),
		Controls:  parseControls(h.Annotations),
		Source:    v1alpha1.Resource + "." + v1alpha1.Group + "/" + h.Namespace + "/" + h.Name,
		Object:    &Object{Source: SourceCustom, APIVersion: customAPIVersion, Kind: v1alpha1.Kind, Explanation: expl},
	}, nil
}

func (k *Kube) updateCustomStatus(ctx context.Context, obj *autoscalingv2.HorizontalPodAutoscaler, explanation string) (*autoscalingv2.HorizontalPodAutoscaler, string, error) {
	if k.Dynamic == nil {
		return nil, "", fmt.Errorf("no dynamic client to write the status of %s", obj.Name)
	}
	u, err := toCustom(obj, explanation)
	if err != nil {
		return nil, "", err
	}
	out, err := k.Dynamic.Resource(v1alpha1.GroupVersionResource).Namespace(obj.Namespace).UpdateStatus(ctx, u, metav1.UpdateOptions{FieldManager: fieldManager})
	if err != nil {
		return nil, "", err
	}
	return fromCustom(out)
}

func (k *Kube) getCustom(ctx context.Context, namespace, name string) (*autoscalingv2.HorizontalPodAutoscaler, string, error) {
	if k.Dynamic == nil {
		return nil, "", fmt.Errorf("no dynamic client to read %s/%s", namespace, name)
	}
	out, err := k.Dynamic.Resource(v1alpha1.GroupVersionResource).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, "", err
	}
	return fromCustom(out)
}
