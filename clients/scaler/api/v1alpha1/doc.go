// Package v1alpha1 is the CentralHorizontalPodAutoscaler custom resource (group
// hpa-recommender.io, version v1alpha1): an autoscaler with the shape of an autoscaling/v2
// HorizontalPodAutoscaler, for clusters whose in-tree HPA controller cannot be switched off.
// Its spec is autoscaling/v2's HorizontalPodAutoscalerSpec, so an HPA manifest becomes one by
// changing apiVersion and kind; its status is the HPA status plus the decision's explanation.
//
// The CRD manifest (deploy/base/crd) and zz_generated.deepcopy.go are generated from these
// types by controller-gen (`make generate`); never edit them by hand.
//
// It imports k8s.io/api and k8s.io/apimachinery only.
//
// +kubebuilder:object:generate=true
// +groupName=hpa-recommender.io
package v1alpha1
