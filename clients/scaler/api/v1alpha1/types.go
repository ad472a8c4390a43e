package v1alpha1

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CentralHorizontalPodAutoscaler is an autoscaler decided by the central hpa-recommender
// service and carried out by hpa-scaler: an autoscaling/v2 HorizontalPodAutoscaler in all but
// apiVersion and kind. The validation rules repeat what the API server checks for an HPA.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=chpa,categories=all
// +kubebuilder:printcolumn:name="Reference",type=string,JSONPath=`.status.reference`,description="The scale target as kind/name, as kubectl get hpa prints it (status.reference, written by hpa-scaler)"
// +kubebuilder:printcolumn:name="Targets",type=string,JSONPath=`.status.targets`,description="Each metric's current/target value, as kubectl get hpa prints them (status.targets, written by hpa-scaler)"
// +kubebuilder:printcolumn:name="MinPods",type=integer,JSONPath=`.spec.minReplicas`
// +kubebuilder:printcolumn:name="MaxPods",type=integer,JSONPath=`.spec.maxReplicas`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.status.currentReplicas`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="!has(self.spec.minReplicas) || self.spec.minReplicas <= self.spec.maxReplicas",message="spec.minReplicas must be less than or equal to spec.maxReplicas",fieldPath=".spec.minReplicas"
// +kubebuilder:validation:XValidation:rule="self.spec.maxReplicas >= 1",message="spec.maxReplicas must be greater than or equal to 1",fieldPath=".spec.maxReplicas"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.minReplicas) || self.spec.minReplicas >= 0",message="spec.minReplicas must be greater than or equal to 0",fieldPath=".spec.minReplicas"
// +kubebuilder:validation:XValidation:rule="size(self.spec.scaleTargetRef.kind) > 0 && size(self.spec.scaleTargetRef.name) > 0",message="spec.scaleTargetRef needs kind and name",fieldPath=".spec.scaleTargetRef"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.metrics) || self.spec.metrics.all(m, (m.type == 'Resource') == has(m.resource) && (m.type == 'ContainerResource') == has(m.containerResource) && (m.type == 'Pods') == has(m.pods) && (m.type == 'Object') == has(m.object) && (m.type == 'External') == has(m.external))",message="each spec.metrics entry must set exactly the source its type names",fieldPath=".spec.metrics"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.metrics) || self.spec.metrics.all(m, m.type in ['Resource', 'ContainerResource', 'Pods', 'Object', 'External'])",message="spec.metrics[*].type must be Resource, ContainerResource, Pods, Object or External",fieldPath=".spec.metrics"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.metrics) || self.spec.metrics.all(m, (!has(m.resource) || m.resource.target.type != 'Value') && (!has(m.containerResource) || m.containerResource.target.type != 'Value'))",message="Resource and ContainerResource metric targets must be Utilization or AverageValue",fieldPath=".spec.metrics"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.behavior) || !has(self.spec.behavior.scaleUp) || ((!has(self.spec.behavior.scaleUp.stabilizationWindowSeconds) || (self.spec.behavior.scaleUp.stabilizationWindowSeconds >= 0 && self.spec.behavior.scaleUp.stabilizationWindowSeconds <= 3600)) && (!has(self.spec.behavior.scaleUp.selectPolicy) || self.spec.behavior.scaleUp.selectPolicy in ['Max', 'Min', 'Disabled']) && (!has(self.spec.behavior.scaleUp.policies) || self.spec.behavior.scaleUp.policies.all(p, p.value >= 1 && p.periodSeconds >= 1 && p.periodSeconds <= 1800 && p.type in ['Pods', 'Percent'])))",message="behavior.scaleUp: stabilizationWindowSeconds in [0, 3600]; selectPolicy Max, Min or Disabled; each policy's type Pods or Percent, value >= 1, periodSeconds in [1, 1800]",fieldPath=".spec.behavior.scaleUp"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.behavior) || !has(self.spec.behavior.scaleDown) || ((!has(self.spec.behavior.scaleDown.stabilizationWindowSeconds) || (self.spec.behavior.scaleDown.stabilizationWindowSeconds >= 0 && self.spec.behavior.scaleDown.stabilizationWindowSeconds <= 3600)) && (!has(self.spec.behavior.scaleDown.selectPolicy) || self.spec.behavior.scaleDown.selectPolicy in ['Max', 'Min', 'Disabled']) && (!has(self.spec.behavior.scaleDown.policies) || self.spec.behavior.scaleDown.policies.all(p, p.value >= 1 && p.periodSeconds >= 1 && p.periodSeconds <= 1800 && p.type in ['Pods', 'Percent'])))",message="behavior.scaleDown: stabilizationWindowSeconds in [0, 3600]; selectPolicy Max, Min or Disabled; each policy's type Pods or Percent, value >= 1, periodSeconds in [1, 1800]",fieldPath=".spec.behavior.scaleDown"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.metrics) || self.spec.metrics.all(m, !has(m.resource) || !has(m.resource.target.averageUtilization) || m.resource.target.averageUtilization >= 1)",message="averageUtilization must be greater than 0",fieldPath=".spec.metrics"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.metrics) || self.spec.metrics.all(m, !has(m.containerResource) || !has(m.containerResource.target.averageUtilization) || m.containerResource.target.averageUtilization >= 1)",message="averageUtilization must be greater than 0",fieldPath=".spec.metrics"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.metrics) || self.spec.metrics.all(m, !has(m.pods) || !has(m.pods.target.averageUtilization) || m.pods.target.averageUtilization >= 1)",message="averageUtilization must be greater than 0",fieldPath=".spec.metrics"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.metrics) || self.spec.metrics.all(m, !has(m.object) || !has(m.object.target.averageUtilization) || m.object.target.averageUtilization >= 1)",message="averageUtilization must be greater than 0",fieldPath=".spec.metrics"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.metrics) || self.spec.metrics.all(m, !has(m.external) || !has(m.external.target.averageUtilization) || m.external.target.averageUtilization >= 1)",message="averageUtilization must be greater than 0",fieldPath=".spec.metrics"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.metrics) || self.spec.metrics.all(m, !has(m.resource) || m.resource.target.type in ['Utilization', 'Value', 'AverageValue'])",message="a metric target's type must be Utilization, Value or AverageValue",fieldPath=".spec.metrics"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.metrics) || self.spec.metrics.all(m, !has(m.resource) || (m.resource.target.type == 'Utilization' ? has(m.resource.target.averageUtilization) : m.resource.target.type == 'Value' ? has(m.resource.target.value) : has(m.resource.target.averageValue)))",message="the target must set the value its type names (Utilization: averageUtilization, Value: value, AverageValue: averageValue)",fieldPath=".spec.metrics"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.metrics) || self.spec.metrics.all(m, !has(m.containerResource) || m.containerResource.target.type in ['Utilization', 'Value', 'AverageValue'])",message="a metric target's type must be Utilization, Value or AverageValue",fieldPath=".spec.metrics"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.metrics) || self.spec.metrics.all(m, !has(m.containerResource) || (m.containerResource.target.type == 'Utilization' ? has(m.containerResource.target.averageUtilization) : m.containerResource.target.type == 'Value' ? has(m.containerResource.target.value) : has(m.containerResource.target.averageValue)))",message="the target must set the value its type names (Utilization: averageUtilization, Value: value, AverageValue: averageValue)",fieldPath=".spec.metrics"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.metrics) || self.spec.metrics.all(m, !has(m.pods) || m.pods.target.type in ['Utilization', 'Value', 'AverageValue'])",message="a metric target's type must be Utilization, Value or AverageValue",fieldPath=".spec.metrics"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.metrics) || self.spec.metrics.all(m, !has(m.pods) || (m.pods.target.type == 'Utilization' ? has(m.pods.target.averageUtilization) : m.pods.target.type == 'Value' ? has(m.pods.target.value) : has(m.pods.target.averageValue)))",message="the target must set the value its type names (Utilization: averageUtilization, Value: value, AverageValue: averageValue)",fieldPath=".spec.metrics"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.metrics) || self.spec.metrics.all(m, !has(m.object) || m.object.target.type in ['Utilization', 'Value', 'AverageValue'])",message="a metric target's type must be Utilization, Value or AverageValue",fieldPath=".spec.metrics"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.metrics) || self.spec.metrics.all(m, !has(m.object) || (m.object.target.type == 'Utilization' ? has(m.object.target.averageUtilization) : m.object.target.type == 'Value' ? has(m.object.target.value) : has(m.object.target.averageValue)))",message="the target must set the value its type names (Utilization: averageUtilization, Value: value, AverageValue: averageValue)",fieldPath=".spec.metrics"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.metrics) || self.spec.metrics.all(m, !has(m.external) || m.external.target.type in ['Utilization', 'Value', 'AverageValue'])",message="a metric target's type must be Utilization, Value or AverageValue",fieldPath=".spec.metrics"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.metrics) || self.spec.metrics.all(m, !has(m.external) || (m.external.target.type == 'Utilization' ? has(m.external.target.averageUtilization) : m.external.target.type == 'Value' ? has(m.external.target.value) : has(m.external.target.averageValue)))",message="the target must set the value its type names (Utilization: averageUtilization, Value: value, AverageValue: averageValue)",fieldPath=".spec.metrics"
type CentralHorizontalPodAutoscaler struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is autoscaling/v2's HorizontalPodAutoscalerSpec, field for field.
	// +required
	Spec autoscalingv2.HorizontalPodAutoscalerSpec `json:"spec"`

	// status is the autoscaling/v2 HorizontalPodAutoscalerStatus hpa-scaler writes, plus the
	// last decision's explanation.
	// +optional
	Status CentralHorizontalPodAutoscalerStatus `json:"status,omitempty"`
}

// CentralHorizontalPodAutoscalerStatus is the HPA status plus the decision's explanation and
// the two strings the REFERENCE and TARGETS printer columns show: a printer column is one
// JSONPath, so what `kubectl get hpa` computes from spec and status is written here.
type CentralHorizontalPodAutoscalerStatus struct {
	autoscalingv2.HorizontalPodAutoscalerStatus `json:",inline"`

	// reference is the scale target as the REFERENCE column of `kubectl get hpa` prints it:
	// spec.scaleTargetRef's kind/name, such as Deployment/web. hpa-scaler writes it with the
	// rest of the status; empty until its first status write.
	// +optional
	Reference string `json:"reference,omitempty"`

	// targets is each metric's current value against its target, as the TARGETS column of
	// `kubectl get hpa` prints them: "cpu: 90%/60%" for a Resource or ContainerResource
	// Utilization target, "memory: 500Mi/1Gi" for an AverageValue one, "10/20" for a Pods,
	// Object or External metric ("(avg)" appended for an AverageValue target of the last two),
	// <unknown> for a current value not measured, and after the first two metrics
	// "+ N more...". hpa-scaler writes it from spec.metrics (cpu at 80% when empty, as the API
	// server defaults an HPA) and status.currentMetrics with the rest of the status.
	// +optional
	Targets string `json:"targets,omitempty"`

	// explanation is the last decision's message: what was decided and why.
	// +optional
	Explanation string `json:"explanation,omitempty"`
}

// CentralHorizontalPodAutoscalerList is a list of CentralHorizontalPodAutoscaler.
//
// +kubebuilder:object:root=true
type CentralHorizontalPodAutoscalerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CentralHorizontalPodAutoscaler `json:"items"`
}
