package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The resource's names, as DESIGN.md fixes them.
const (
	Group    = "hpa-recommender.io"
	Version  = "v1alpha1"
	Kind     = "CentralHorizontalPodAutoscaler"
	Resource = "centralhorizontalpodautoscalers"
)

// SchemeGroupVersion is hpa-recommender.io/v1alpha1.
var SchemeGroupVersion = schema.GroupVersion{Group: Group, Version: Version}

// GroupVersionResource is the resource, for dynamic clients and informers.
var GroupVersionResource = SchemeGroupVersion.WithResource(Resource)

// AddToScheme adds the types to a scheme.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(SchemeGroupVersion, &CentralHorizontalPodAutoscaler{}, &CentralHorizontalPodAutoscalerList{})
	metav1.AddToGroupVersion(s, SchemeGroupVersion)
	return nil
}
