package recommender

import (
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Metric source types, as Kubernetes spells them in autoscaling/v2.
const (
	MetricResource          = "Resource"
	MetricContainerResource = "ContainerResource"
	MetricPods              = "Pods"
	MetricObject            = "Object"
	MetricExternal          = "External"
)

// Metric target types.
const (
	TargetUtilization  = "Utilization"
	TargetValue        = "Value"
	TargetAverageValue = "AverageValue"
)

// Scaling policy types and select policies.
const (
	PolicyPods    = "Pods"
	PolicyPercent = "Percent"

	SelectMax      = "Max"
	SelectMin      = "Min"
	SelectDisabled = "Disabled"
)

// Pod phases.
const (
	PodPending   = "Pending"
	PodRunning   = "Running"
	PodSucceeded = "Succeeded"
	PodFailed    = "Failed"
	PodUnknown   = "Unknown"
)

// Spec mirrors autoscaling/v2 HorizontalPodAutoscalerSpec. Pointers mark the fields whose
// presence matters upstream.
type Spec struct {
	ScaleTargetRef ObjectReference
	MinReplicas    *int32
	MaxReplicas    int32
	Metrics        []MetricSpec
	Behavior       *Behavior
}

// ObjectReference mirrors CrossVersionObjectReference.
type ObjectReference struct {
	APIVersion string
	Kind       string
	Name       string
}

// MetricSpec mirrors autoscaling/v2 MetricSpec: Type names the one source that is set.
type MetricSpec struct {
	Type              string
	Resource          *ResourceMetricSource
	ContainerResource *ContainerResourceMetricSource
	Pods              *PodsMetricSource
	Object            *ObjectMetricSource
	External          *ExternalMetricSource
}

// ResourceMetricSource mirrors autoscaling/v2 ResourceMetricSource.
type ResourceMetricSource struct {
	Name   string
	Target MetricTarget
}

// ContainerResourceMetricSource mirrors autoscaling/v2 ContainerResourceMetricSource.
type ContainerResourceMetricSource struct {
	Name      string
	Container string
	Target    MetricTarget
}

// PodsMetricSource mirrors autoscaling/v2 PodsMetricSource.
type PodsMetricSource struct {
	Metric MetricIdentifier
	Target MetricTarget
}

// ObjectMetricSource mirrors autoscaling/v2 ObjectMetricSource.
type ObjectMetricSource struct {
	DescribedObject ObjectReference
	Metric          MetricIdentifier
	Target          MetricTarget
}

// ExternalMetricSource mirrors autoscaling/v2 ExternalMetricSource.
type ExternalMetricSource struct {
	Metric MetricIdentifier
	Target MetricTarget
}

// MetricIdentifier names a custom or external metric and optionally narrows it by labels.
type MetricIdentifier struct {
	Name     string
	Selector *LabelSelector
}

// LabelSelector mirrors metav1.LabelSelector.
type LabelSelector struct {
	MatchLabels      map[string]string
	MatchExpressions []LabelSelectorRequirement
}

// LabelSelectorRequirement mirrors metav1.LabelSelectorRequirement.
type LabelSelectorRequirement struct {
	Key      string
	Operator string
	Values   []string
}

// MetricTarget mirrors autoscaling/v2 MetricTarget.
type MetricTarget struct {
	Type               string
	Value              *resource.Quantity
	AverageValue       *resource.Quantity
	AverageUtilization *int32
}

// Behavior mirrors autoscaling/v2 HorizontalPodAutoscalerBehavior.
type Behavior struct {
	ScaleUp   *ScalingRules
	ScaleDown *ScalingRules
}

// ScalingRules mirrors autoscaling/v2 HPAScalingRules.
type ScalingRules struct {
	StabilizationWindowSeconds *int32
	SelectPolicy               *string
	Policies                   []ScalingPolicy
	Tolerance                  *resource.Quantity
}

// ScalingPolicy mirrors autoscaling/v2 HPAScalingPolicy.
type ScalingPolicy struct {
	Type          string
	Value         int32
	PeriodSeconds int32
}

// Pod is what the algorithm needs of one pod matched by the target's selector.
type Pod struct {
	Name  string
	Phase string
	// HasReady is false when the pod has no Ready condition.
	HasReady            bool
	Ready               bool
	ReadyTransitionTime time.Time
	// StartTime is the zero time when the pod has no start time.
	StartTime time.Time
	// Deleting is true when the pod has a deletion timestamp; DeletionTime is that timestamp,
	// kept only to report the inputs back (the algorithm reads Deleting alone).
	Deleting       bool
	DeletionTime   time.Time
	Containers     []Container
	InitContainers []Container
	// Requests are pod-level requests (empty when unset).
	Requests map[string]resource.Quantity
	// Overhead is the pod's spec.overhead (empty when unset); Rules.PodOverheadInRequests
	// decides whether pod-level requests include it.
	Overhead map[string]resource.Quantity
}

// Container is one container of a pod with its resource requests.
type Container struct {
	Name string
	// RestartPolicy is "Always" for a sidecar init container; empty otherwise.
	RestartPolicy string
	Requests      map[string]resource.Quantity
}

// DefaultMetricWindow is the sample window assumed when a per-pod sample carries none.
const DefaultMetricWindow = 60 * time.Second

// PodSample is one per-pod metric sample, in milli-units.
type PodSample struct {
	Pod       string
	Milli     int64
	Timestamp time.Time
	Window    time.Duration
}

// Observation is what the caller fetched for one spec.metrics entry (same index).
// Error wins over any values; an observation with nothing set means "no metrics returned".
type Observation struct {
	PodSamples []PodSample
	// Value is the Object metric value, in milli-units; nil when absent.
	Value *int64
	// Values are the External metric series, in milli-units; they are summed.
	Values []int64
	Error  string
}

// Options are the controller-wide settings upstream takes from kube-controller-manager flags.
type Options struct {
	Tolerance                    float64
	CPUInitializationPeriod      time.Duration
	InitialReadinessDelay        time.Duration
	DownscaleStabilizationWindow time.Duration
	// KubernetesVersion is the release whose rules decide, "1.34" to "1.38" (RulesFor); empty
	// means the newest.
	KubernetesVersion string
	// HPAConfigurableTolerance and HPAScaleToZero set those feature gates as
	// kube-controller-manager's --feature-gates would; nil leaves the release's default
	// (HPAConfigurableTolerance: on from 1.35, locked on from 1.37; HPAScaleToZero: on from
	// 1.37, read by the controller from 1.36).
	HPAConfigurableTolerance *bool
	HPAScaleToZero           *bool
}

// DefaultOptions returns upstream's controller defaults.
func DefaultOptions() Options {
	return Options{
		Tolerance:                    0.1,
		CPUInitializationPeriod:      5 * time.Minute,
		InitialReadinessDelay:        30 * time.Second,
		DownscaleStabilizationWindow: 5 * time.Minute,
	}
}

// Input is everything one reconcile reads besides the stored state.
type Input struct {
	Spec            *Spec
	CurrentReplicas int32
	StatusReplicas  int32
	Pods            []Pod
	Metrics         []Observation
}

// Recommendation is one timestamped entry of the shared recommendation history.
type Recommendation struct {
	Time     time.Time
	Replicas int32
}

// ScaleEvent is one successful scale write in one direction.
type ScaleEvent struct {
	Time   time.Time
	Change int32
}

// History is the per-target memory upstream keeps between reconciles.
type History struct {
	Recommendations []Recommendation
	ScaleUpEvents   []ScaleEvent
	ScaleDownEvents []ScaleEvent
}

// Condition mirrors an HPA status condition.
type Condition struct {
	Type               string
	Status             string
	Reason             string
	Message            string
	LastTransitionTime time.Time
}

// Condition types and statuses.
const (
	ConditionAbleToScale    = "AbleToScale"
	ConditionScalingActive  = "ScalingActive"
	ConditionScalingLimited = "ScalingLimited"
	ConditionScaledToZero   = "ScaledToZero"

	StatusTrue  = "True"
	StatusFalse = "False"
)

// State is what persists for one target between decisions.
type State struct {
	// Seeded is true once the recommendation history exists (upstream: the key is in its map).
	Seeded     bool
	History    History
	Conditions []Condition
}

// MetricStatus mirrors autoscaling/v2 MetricStatus. A failed metric's entry has an empty Type.
type MetricStatus struct {
	Type              string
	Resource          *ResourceMetricStatus
	ContainerResource *ContainerResourceMetricStatus
	Pods              *PodsMetricStatus
	Object            *ObjectMetricStatus
	External          *ExternalMetricStatus
}

// MetricValueStatus mirrors autoscaling/v2 MetricValueStatus.
type MetricValueStatus struct {
	Value              *resource.Quantity
	AverageValue       *resource.Quantity
	AverageUtilization *int32
}

// ResourceMetricStatus mirrors autoscaling/v2 ResourceMetricStatus.
type ResourceMetricStatus struct {
	Name    string
	Current MetricValueStatus
}

// ContainerResourceMetricStatus mirrors autoscaling/v2 ContainerResourceMetricStatus.
type ContainerResourceMetricStatus struct {
	Name      string
	Container string
	Current   MetricValueStatus
}

// PodsMetricStatus mirrors autoscaling/v2 PodsMetricStatus.
type PodsMetricStatus struct {
	Metric  MetricIdentifier
	Current MetricValueStatus
}

// ObjectMetricStatus mirrors autoscaling/v2 ObjectMetricStatus.
type ObjectMetricStatus struct {
	Metric          MetricIdentifier
	Current         MetricValueStatus
	DescribedObject ObjectReference
}

// ExternalMetricStatus mirrors autoscaling/v2 ExternalMetricStatus.
type ExternalMetricStatus struct {
	Metric  MetricIdentifier
	Current MetricValueStatus
}

// MetricExplanation explains one metric's proposal.
type MetricExplanation struct {
	Index       int32
	Name        string
	Proposal    int32
	UsageRatio  float64
	ReadyPods   int32
	IgnoredPods int32
	MissingPods int32
	UnreadyPods int32
	Error       string
}

// Explanation says how a decision was reached, stage by stage.
type Explanation struct {
	Message       string
	Metrics       []MetricExplanation
	WinningMetric int32
	Proposal      int32
	Stabilized    int32
	// StabilizationWindow is the window that decided Stabilized; zero when none did.
	StabilizationWindow time.Duration
	Limited             int32
	LimitingPolicy      string
	Final               int32
	LimitReason         string
}

// Decision is the outcome of one reconcile.
type Decision struct {
	Time            time.Time
	CurrentReplicas int32
	DesiredReplicas int32
	CurrentMetrics  []MetricStatus
	Conditions      []Condition
	Explanation     Explanation
}

// Scale reports whether the decision asks for a scale write.
func (d *Decision) Scale() bool { return d.DesiredReplicas != d.CurrentReplicas }
