package recommender

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	pathvalidation "k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// FieldError is one violation found by ValidateSpec or ValidateInput.
type FieldError struct {
	// Field is the protojson (lowerCamelCase) path of the offending field, e.g.
	// "spec.metrics[0].resource.target.averageUtilization".
	Field string
	// Description is the Kubernetes error body, e.g.
	// "Invalid value: 0: must be greater than 0" or "Required value: must specify a metric name".
	Description string
}

// Limits bounds the size of a decision request. A zero field means no limit.
type Limits struct {
	// MaxPods bounds len(Input.Pods) and the number of pod samples in each observation.
	MaxPods int
}

// Supported values are listed sorted, as upstream's field.NotSupported lists them; they are
// slice literals at the call sites because the package keeps no variables.

// Upper bounds the API server enforces on behavior (PR #133576, which would raise them, was
// closed unmerged; §10).
const (
	maxStabilizationWindowSeconds int32 = 3600
	maxPolicyPeriodSeconds        int32 = 1800
)

// ValidateSpec reports every violation in spec as the Kubernetes 1.37 API server would for an
// autoscaling/v2 HorizontalPodAutoscalerSpec (HPA-ALGORITHM.md §10, HPAScaleToZero and
// HPAConfigurableTolerance on), on the spec as the user wrote it, before SetDefaults.
// Paths are below path ("spec" gives "spec.minReplicas"; "" gives "minReplicas").
//
// Differences from upstream, all deliberate:
//   - scaleTargetRef is optional: only a non-empty reference is checked (kind and name
//     required, valid path segments); apiVersion is not checked.
//   - An empty behavior.*.policies list is not reported: the API layer maps "policies: []"
//     to absent, which SetDefaults fills, so only present policies are checked.
//   - metric.selector is checked as a label selector (the controller would otherwise fail the
//     metric at every reconcile); upstream's API validation does not look at it.
//   - An empty metric or target type gives one "Required value" error, not also an
//     "Unsupported value" one; the source of a metric whose type is unknown is not checked.
//   - A lone source of the wrong type (type Pods, only resource set) is reported as Forbidden
//     besides the Required error for the missing one; the source of the declared type is the
//     one checked, where upstream checks the first one set.
//
// Like upstream it does not check that target.type agrees with the target fields that are set.
func ValidateSpec(spec *Spec, path string) []FieldError {
	if spec == nil {
		return []FieldError{{Field: path, Description: field.ErrorTypeRequired.String()}}
	}
	return toFieldErrors(validateSpec(spec, validateRoot(path)))
}

// ValidateInput reports every violation in a decision request: its spec (ValidateSpec under
// path "spec") and everything ValidateObservations checks. With path "" the fields read
// "spec.maxReplicas", "currentReplicas", "pods[3].name", "metrics"; any other path is a prefix
// ("steps[2]" gives "steps[2].pods[3].name").
func ValidateInput(in *Input, path string, limits Limits) []FieldError {
	if in == nil {
		return []FieldError{{Field: path, Description: field.ErrorTypeRequired.String()}}
	}
	root := validateRoot(path)
	var errs field.ErrorList
	if in.Spec == nil {
		errs = append(errs, field.Required(root.Child("spec"), ""))
	} else {
		errs = append(errs, validateSpec(in.Spec, root.Child("spec"))...)
	}
	errs = append(errs, validateObservations(in, root, limits)...)
	return toFieldErrors(errs)
}

// ValidateObservations reports the violations ValidateInput finds outside the spec, for callers
// that check one spec against many sets of observations (Simulate's steps); in.Spec is read
// only for its metrics' number and types. It checks:
//   - currentReplicas and statusReplicas are >= 0;
//   - metrics has exactly one observation per spec.metrics entry; an empty spec.metrics means
//     the one default cpu metric (SetDefaults), so exactly one observation is expected then;
//   - pods: at most limits.MaxPods, names set and unique, phase one of Running, Pending,
//     Succeeded, Failed, Unknown (an empty phase is invalid: the API always sets one), container
//     names set and unique within the pod, requests not negative;
//   - podValues of each observation: at most limits.MaxPods, pod set and unique, window >= 0
//     (zero means DefaultMetricWindow);
//   - each observation without an error carries only what its metric's type reads: podValues
//     for Resource, ContainerResource and Pods, value for Object, values for External.
//
// Pod samples naming pods absent from pods are allowed (upstream ignores them), and so is an
// observation with nothing set ("no metrics returned", an invalid metric as upstream).
func ValidateObservations(in *Input, path string, limits Limits) []FieldError {
	if in == nil {
		return []FieldError{{Field: path, Description: field.ErrorTypeRequired.String()}}
	}
	return toFieldErrors(validateObservations(in, validateRoot(path), limits))
}

// validateRoot returns the parent path of the top-level fields: nil for "", so that children
// print without a leading dot.
func validateRoot(path string) *field.Path {
	if path == "" {
		return nil
	}
	return field.NewPath(path)
}

func toFieldErrors(errs field.ErrorList) []FieldError {
	if len(errs) == 0 {
		return nil
	}
	out := make([]FieldError, len(errs))
	for i, e := range errs {
		out[i] = FieldError{Field: e.Field, Description: e.ErrorBody()}
	}
	return out
}

func validateSpec(spec *Spec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	// HPAScaleToZero is on in 1.37: the lower bound is 0.
	if spec.MinReplicas != nil && *spec.MinReplicas < 0 {
		errs = append(errs, field.Invalid(p.Child("minReplicas"), *spec.MinReplicas,
			"must be greater than or equal to 0"))
	}
	if spec.MaxReplicas < 1 {
		errs = append(errs, field.Invalid(p.Child("maxReplicas"), spec.MaxReplicas, "must be greater than 0"))
	}
	if spec.MinReplicas != nil && spec.MaxReplicas < *spec.MinReplicas {
		errs = append(errs, field.Invalid(p.Child("maxReplicas"), spec.MaxReplicas,
			"must be greater than or equal to `minReplicas`"))
	}
	if spec.ScaleTargetRef != (ObjectReference{}) {
		errs = append(errs, validateObjectReference(spec.ScaleTargetRef, p.Child("scaleTargetRef"))...)
	}
	errs = append(errs, validateMetrics(spec.Metrics, p.Child("metrics"), spec.MinReplicas)...)
	if spec.Behavior != nil {
		errs = append(errs, validateScalingRules(spec.Behavior.ScaleUp, p.Child("behavior", "scaleUp"))...)
		errs = append(errs, validateScalingRules(spec.Behavior.ScaleDown, p.Child("behavior", "scaleDown"))...)
	}
	return errs
}

// validateObjectReference is upstream's ValidateCrossVersionObjectReference.
func validateObjectReference(ref ObjectReference, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validatePathSegment(ref.Kind, p.Child("kind"))...)
	errs = append(errs, validatePathSegment(ref.Name, p.Child("name"))...)
	return errs
}

func validatePathSegment(value string, p *field.Path) field.ErrorList {
	if value == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	var errs field.ErrorList
	for _, msg := range pathvalidation.IsValidPathSegmentName(value) {
		errs = append(errs, field.Invalid(p, value, msg))
	}
	return errs
}

func validateMetrics(metrics []MetricSpec, p *field.Path, minReplicas *int32) field.ErrorList {
	var errs field.ErrorList
	scalesFromZero := false
	for i := range metrics {
		errs = append(errs, validateMetricSpec(&metrics[i], p.Index(i))...)
		if metrics[i].Type == MetricObject || metrics[i].Type == MetricExternal {
			scalesFromZero = true
		}
	}
	// An empty metrics list defaults to cpu, which cannot scale to zero either.
	if minReplicas != nil && *minReplicas == 0 && !scalesFromZero {
		errs = append(errs, field.Forbidden(p,
			"must specify at least one Object or External metric to support scaling to zero replicas"))
	}
	return errs
}

func validateMetricSpec(m *MetricSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	expected := ""
	switch m.Type {
	case "":
		errs = append(errs, field.Required(p.Child("type"), "must specify a metric source type"))
	case MetricObject:
		expected = "object"
		if m.Object != nil {
			errs = append(errs, validateObjectSource(m.Object, p.Child(expected))...)
		}
	case MetricPods:
		expected = "pods"
		if m.Pods != nil {
			errs = append(errs, validatePodsSource(m.Pods, p.Child(expected))...)
		}
	case MetricResource:
		expected = "resource"
		if m.Resource != nil {
			errs = append(errs, validateResourceSource(m.Resource.Name, "", false, m.Resource.Target, p.Child(expected))...)
		}
	case MetricContainerResource:
		expected = "containerResource"
		if m.ContainerResource != nil {
			c := m.ContainerResource
			errs = append(errs, validateResourceSource(c.Name, c.Container, true, c.Target, p.Child(expected))...)
		}
	case MetricExternal:
		expected = "external"
		if m.External != nil {
			errs = append(errs, validateExternalSource(m.External, p.Child(expected))...)
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("type"), m.Type, []string{MetricContainerResource, MetricExternal, MetricObject, MetricPods, MetricResource}))
	}

	present := [...]struct {
		name string
		set  bool
	}{
		{"object", m.Object != nil},
		{"external", m.External != nil},
		{"pods", m.Pods != nil},
		{"resource", m.Resource != nil},
		{"containerResource", m.ContainerResource != nil},
	}
	count, expectedSet := 0, false
	for _, s := range present {
		if s.set {
			count++
			expectedSet = expectedSet || s.name == expected
		}
	}
	if expected != "" && !expectedSet {
		errs = append(errs, field.Required(p.Child(expected), "must populate information for the given metric source"))
	}
	if count > 1 || (count == 1 && expected != "" && !expectedSet) {
		for _, s := range present {
			if s.set && s.name != expected {
				errs = append(errs, field.Forbidden(p.Child(s.name), "must populate the given metric source only"))
			}
		}
	}
	return errs
}

func validateObjectSource(src *ObjectMetricSource, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateObjectReference(src.DescribedObject, p.Child("describedObject"))...)
	errs = append(errs, validateMetricIdentifier(&src.Metric, p.Child("metric"))...)
	errs = append(errs, validateMetricTarget(&src.Target, p.Child("target"))...)
	if src.Target.Value == nil && src.Target.AverageValue == nil {
		errs = append(errs, field.Required(p.Child("target", "averageValue"),
			"must set either a target value or averageValue"))
	}
	return errs
}

func validateExternalSource(src *ExternalMetricSource, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateMetricIdentifier(&src.Metric, p.Child("metric"))...)
	errs = append(errs, validateMetricTarget(&src.Target, p.Child("target"))...)
	if src.Target.Value == nil && src.Target.AverageValue == nil {
		errs = append(errs, field.Required(p.Child("target", "averageValue"),
			"must set either a target value for metric or a per-pod target"))
	}
	if src.Target.Value != nil && src.Target.AverageValue != nil {
		errs = append(errs, field.Forbidden(p.Child("target", "value"),
			"may not set both a target value for metric and a per-pod target"))
	}
	return errs
}

func validatePodsSource(src *PodsMetricSource, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateMetricIdentifier(&src.Metric, p.Child("metric"))...)
	errs = append(errs, validateMetricTarget(&src.Target, p.Child("target"))...)
	if src.Target.AverageValue == nil {
		errs = append(errs, field.Required(p.Child("target", "averageValue"),
			"must specify a positive target averageValue"))
	}
	return errs
}

// validateResourceSource checks a Resource source, or with isContainer a ContainerResource one.
func validateResourceSource(name, container string, isContainer bool, target MetricTarget, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case name == "":
		errs = append(errs, field.Required(p.Child("name"), "must specify a resource name"))
	case isContainer:
		errs = append(errs, validateContainerResourceName(name, p.Child("name"))...)
	}
	if isContainer {
		if container == "" {
			errs = append(errs, field.Required(p.Child("container"), "must specify a container"))
		} else {
			for _, msg := range validateDNS1123Label(container) {
				errs = append(errs, field.Invalid(p.Child("container"), container, msg))
			}
		}
	}
	errs = append(errs, validateMetricTarget(&target, p.Child("target"))...)
	if target.AverageUtilization == nil && target.AverageValue == nil {
		errs = append(errs, field.Required(p.Child("target", "averageUtilization"),
			"must set either a target raw value or a target utilization"))
	}
	if target.AverageUtilization != nil && target.AverageValue != nil {
		errs = append(errs, field.Forbidden(p.Child("target", "averageValue"),
			"may not set both a target raw value and a target utilization"))
	}
	return errs
}

// validateContainerResourceName follows upstream's core/v1 ValidateContainerResourceName: a
// qualified name; unprefixed, one of cpu, memory, ephemeral-storage, hugepages-*; prefixed
// outside kubernetes.io, a valid extended resource name.
func validateContainerResourceName(name string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validateQualifiedName(name) {
		errs = append(errs, field.Invalid(p, name, msg))
	}
	if len(errs) > 0 {
		return errs
	}
	if !strings.Contains(name, "/") {
		switch {
		case name == "cpu", name == "memory", name == "ephemeral-storage", strings.HasPrefix(name, "hugepages-"):
		default:
			errs = append(errs, field.Invalid(p, name, "must be a standard resource for containers"))
		}
	} else if !strings.Contains(name, "kubernetes.io/") &&
		(strings.HasPrefix(name, "requests.") || len(validateQualifiedName("requests."+name)) > 0) {
		errs = append(errs, field.Invalid(p, name, "doesn't follow extended resource name standard"))
	}
	return errs
}

func validateMetricTarget(t *MetricTarget, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch t.Type {
	case "":
		errs = append(errs, field.Required(p.Child("type"), "must specify a metric target type"))
	case TargetUtilization, TargetValue, TargetAverageValue:
	default:
		errs = append(errs, field.Invalid(p.Child("type"), t.Type, "must be either Utilization, Value, or AverageValue"))
	}
	if t.Value != nil && t.Value.Sign() != 1 {
		errs = append(errs, field.Invalid(p.Child("value"), validateQuantityString(t.Value), "must be positive"))
	}
	if t.AverageValue != nil && t.AverageValue.Sign() != 1 {
		errs = append(errs, field.Invalid(p.Child("averageValue"), validateQuantityString(t.AverageValue), "must be positive"))
	}
	if t.AverageUtilization != nil && *t.AverageUtilization < 1 {
		errs = append(errs, field.Invalid(p.Child("averageUtilization"), *t.AverageUtilization, "must be greater than 0"))
	}
	return errs
}

// validateQuantityString formats q without touching q: Quantity.String caches its result in
// the receiver, and validation must not write to the caller's spec.
func validateQuantityString(q *resource.Quantity) string {
	c := q.DeepCopy()
	return c.String()
}

func validateMetricIdentifier(id *MetricIdentifier, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if id.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), "must specify a metric name"))
	} else {
		for _, msg := range pathvalidation.IsValidPathSegmentName(id.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), id.Name, msg))
		}
	}
	if id.Selector != nil {
		errs = append(errs, validateLabelSelector(id.Selector, p.Child("selector"))...)
	}
	return errs
}

// validateLabelSelector is metav1 validation's ValidateLabelSelector (which this package cannot
// import without new modules), with matchLabels visited in sorted key order so the errors are
// deterministic. Like upstream, matchLabels errors are reported at "matchLabels".
func validateLabelSelector(s *LabelSelector, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	labels := p.Child("matchLabels")
	for _, k := range slices.Sorted(maps.Keys(s.MatchLabels)) {
		for _, msg := range validateQualifiedName(k) {
			errs = append(errs, field.Invalid(labels, k, msg))
		}
		v := s.MatchLabels[k]
		for _, msg := range validateLabelValue(v) {
			errs = append(errs, field.Invalid(labels, v, msg))
		}
	}
	for i, r := range s.MatchExpressions {
		rp := p.Child("matchExpressions").Index(i)
		switch r.Operator {
		case "In", "NotIn":
			if len(r.Values) == 0 {
				errs = append(errs, field.Required(rp.Child("values"),
					"must be specified when `operator` is 'In' or 'NotIn'"))
			}
		case "Exists", "DoesNotExist":
			if len(r.Values) > 0 {
				errs = append(errs, field.Forbidden(rp.Child("values"),
					"may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
			}
		default:
			errs = append(errs, field.Invalid(rp.Child("operator"), r.Operator, "not a valid selector operator"))
		}
		for _, msg := range validateQualifiedName(r.Key) {
			errs = append(errs, field.Invalid(rp.Child("key"), r.Key, msg))
		}
		for j, v := range r.Values {
			for _, msg := range validateLabelValue(v) {
				errs = append(errs, field.Invalid(rp.Child("values").Index(j), v, msg))
			}
		}
	}
	return errs
}

func validateScalingRules(r *ScalingRules, p *field.Path) field.ErrorList {
	if r == nil {
		return nil
	}
	var errs field.ErrorList
	if w := r.StabilizationWindowSeconds; w != nil {
		if *w < 0 {
			errs = append(errs, field.Invalid(p.Child("stabilizationWindowSeconds"), *w, "must be greater than or equal to zero"))
		}
		if *w > maxStabilizationWindowSeconds {
			errs = append(errs, field.Invalid(p.Child("stabilizationWindowSeconds"), *w,
				fmt.Sprintf("must be less than or equal to %d", maxStabilizationWindowSeconds)))
		}
	}
	if sp := r.SelectPolicy; sp != nil && *sp != SelectMax && *sp != SelectMin && *sp != SelectDisabled {
		errs = append(errs, field.NotSupported(p.Child("selectPolicy"), *sp, []string{SelectDisabled, SelectMax, SelectMin}))
	}
	for i, pol := range r.Policies {
		pp := p.Child("policies").Index(i)
		if pol.Type != PolicyPods && pol.Type != PolicyPercent {
			errs = append(errs, field.NotSupported(pp.Child("type"), pol.Type, []string{PolicyPercent, PolicyPods}))
		}
		if pol.Value <= 0 {
			errs = append(errs, field.Invalid(pp.Child("value"), pol.Value, "must be greater than zero"))
		}
		if pol.PeriodSeconds <= 0 {
			errs = append(errs, field.Invalid(pp.Child("periodSeconds"), pol.PeriodSeconds, "must be greater than zero"))
		}
		if pol.PeriodSeconds > maxPolicyPeriodSeconds {
			errs = append(errs, field.Invalid(pp.Child("periodSeconds"), pol.PeriodSeconds,
				fmt.Sprintf("must be less than or equal to %d", maxPolicyPeriodSeconds)))
		}
	}
	// HPAConfigurableTolerance is on in 1.37: any tolerance >= 0 is allowed.
	if r.Tolerance != nil && r.Tolerance.Sign() < 0 {
		errs = append(errs, field.Invalid(p.Child("tolerance"), validateQuantityString(r.Tolerance),
			"must be greater than or equal to zero"))
	}
	return errs
}

func validateObservations(in *Input, root *field.Path, limits Limits) field.ErrorList {
	var errs field.ErrorList
	if in.CurrentReplicas < 0 {
		errs = append(errs, field.Invalid(root.Child("currentReplicas"), in.CurrentReplicas, "must be greater than or equal to 0"))
	}
	if in.StatusReplicas < 0 {
		errs = append(errs, field.Invalid(root.Child("statusReplicas"), in.StatusReplicas, "must be greater than or equal to 0"))
	}
	errs = append(errs, validatePods(in.Pods, root.Child("pods"), limits)...)
	if in.Spec != nil {
		if want := len(in.Spec.Metrics); want == 0 && len(in.Metrics) != 1 {
			errs = append(errs, field.Invalid(root.Child("metrics"), len(in.Metrics),
				"must have exactly 1 entry: an empty spec.metrics means the default cpu utilization metric"))
		} else if want > 0 && len(in.Metrics) != want {
			errs = append(errs, field.Invalid(root.Child("metrics"), len(in.Metrics),
				fmt.Sprintf("must have exactly %d entries, one per spec.metrics entry in the same order", want)))
		}
	}
	for i := range in.Metrics {
		o := &in.Metrics[i]
		if in.Spec != nil {
			errs = append(errs, validateObservationShape(o, in.Spec, root, i)...)
		}
		errs = append(errs, validatePodSamples(o.PodSamples, root, i, limits)...)
	}
	return errs
}

// validateObservationShape reports a field of an observation that its metric's type does not
// read: the samples of Resource, ContainerResource and Pods metrics go in podValues, an Object
// metric's in value, an External metric's in values. A misplaced field would otherwise be
// ignored and the metric fail with "no metrics returned". An observation with an error is not
// checked: the error wins over whatever else it carries.
func validateObservationShape(o *Observation, spec *Spec, root *field.Path, i int) field.ErrorList {
	// The metric the observation answers: spec.metrics[i], or the one default cpu metric of an
	// empty spec.metrics.
	var metricType, metric string
	switch {
	case len(spec.Metrics) == 0 && i == 0:
		metricType, metric = MetricResource, "the default cpu metric (spec.metrics is empty)"
	case i < len(spec.Metrics):
		metricType, metric = spec.Metrics[i].Type, fmt.Sprintf("spec.metrics[%d]", i)
	}
	var where string
	podValues, value, values := len(o.PodSamples) > 0, o.Value != nil, len(o.Values) > 0
	switch metricType {
	case MetricResource, MetricContainerResource, MetricPods:
		where, podValues = "podValues (one sample per pod)", false
	case MetricObject:
		where, value = "value", false
	case MetricExternal:
		where, values = "values (summed)", false
	default:
		return nil // an unknown type is the spec's violation
	}
	if o.Error != "" {
		return nil
	}
	var errs field.ErrorList
	for _, f := range []struct {
		name string
		set  bool
	}{{"podValues", podValues}, {"value", value}, {"values", values}} {
		if f.set {
			errs = append(errs, field.Forbidden(root.Child("metrics").Index(i).Child(f.name),
				fmt.Sprintf("%s is a %s metric, whose samples go in %s", metric, metricType, where)))
		}
	}
	return errs
}

// validatePods checks the limit, then every rule of every pod; field paths are built only for
// what it reports.
func validatePods(pods []Pod, p *field.Path, limits Limits) field.ErrorList {
	if limits.MaxPods > 0 && len(pods) > limits.MaxPods {
		// Checking each of too many pods would only make the error list huge.
		return field.ErrorList{field.TooMany(p, len(pods), limits.MaxPods)}
	}
	var errs field.ErrorList
	seen := make(map[string]bool, len(pods))
	names := map[string]bool{} // a pod's container names
	for i := range pods {
		pod := &pods[i]
		switch {
		case pod.Name == "":
			errs = append(errs, field.Required(p.Index(i).Child("name"), ""))
		case seen[pod.Name]:
			errs = append(errs, field.Duplicate(p.Index(i).Child("name"), pod.Name))
		}
		seen[pod.Name] = true
		switch pod.Phase {
		case "":
			errs = append(errs, field.Required(p.Index(i).Child("phase"), ""))
		case PodRunning, PodPending, PodSucceeded, PodFailed, PodUnknown:
		default:
			errs = append(errs, field.NotSupported(p.Index(i).Child("phase"), pod.Phase, []string{PodFailed, PodPending, PodRunning, PodSucceeded, PodUnknown}))
		}
		clear(names)
		errs = validateContainers(errs, pod.Containers, p, i, "containers", names)
		errs = validateContainers(errs, pod.InitContainers, p, i, "initContainers", names)
		errs = validateRequests(errs, pod.Requests, func() *field.Path { return p.Index(i).Child("requests") })
		errs = validateRequests(errs, pod.Overhead, func() *field.Path { return p.Index(i).Child("overhead") })
	}
	return errs
}

// validateContainers appends to errs what is wrong with the containers of pods[pod] in its
// list list ("containers", "initContainers"): names set and unique across a pod's containers
// and init containers, as the API server requires (seen collects them), and requests.
func validateContainers(errs field.ErrorList, cs []Container, pods *field.Path, pod int, list string, seen map[string]bool) field.ErrorList {
	for i := range cs {
		at := func() *field.Path { return pods.Index(pod).Child(list).Index(i) }
		switch name := cs[i].Name; {
		case name == "":
			errs = append(errs, field.Required(at().Child("name"), ""))
		case seen[name]:
			errs = append(errs, field.Duplicate(at().Child("name"), name))
		default:
			seen[name] = true
		}
		errs = validateRequests(errs, cs[i].Requests, func() *field.Path { return at().Child("requests") })
	}
	return errs
}

// validateRequests appends to errs what is wrong with reqs, in key order; path is the map's,
// built only when there is something to report.
func validateRequests(errs field.ErrorList, reqs map[string]resource.Quantity, path func() *field.Path) field.ErrorList {
	valid := true
	for name, q := range reqs {
		valid = valid && name != "" && q.Sign() >= 0
	}
	if valid {
		return errs
	}
	p := path()
	for _, name := range slices.Sorted(maps.Keys(reqs)) {
		if name == "" {
			errs = append(errs, field.Required(p.Key(name), "must specify a resource name"))
			continue
		}
		if q := reqs[name]; q.Sign() < 0 {
			errs = append(errs, field.Invalid(p.Key(name), validateQuantityString(&q), "must be greater than or equal to 0"))
		}
	}
	return errs
}

// validatePodSamples checks the limit, then every rule, of metrics[metric].podValues; field
// paths are built only for what it reports.
func validatePodSamples(samples []PodSample, root *field.Path, metric int, limits Limits) field.ErrorList {
	at := func() *field.Path { return root.Child("metrics").Index(metric).Child("podValues") }
	if limits.MaxPods > 0 && len(samples) > limits.MaxPods {
		return field.ErrorList{field.TooMany(at(), len(samples), limits.MaxPods)}
	}
	var errs field.ErrorList
	var seen map[string]bool
	if len(samples) > 0 {
		seen = make(map[string]bool, len(samples))
	}
	for i := range samples {
		s := &samples[i]
		switch {
		case s.Pod == "":
			errs = append(errs, field.Required(at().Index(i).Child("pod"), ""))
		case seen[s.Pod]:
			errs = append(errs, field.Duplicate(at().Index(i).Child("pod"), s.Pod))
		}
		seen[s.Pod] = true
		if s.Window < 0 {
			errs = append(errs, field.Invalid(at().Index(i).Child("window"), s.Window.String(), "must be greater than or equal to 0"))
		}
	}
	return errs
}

// Name and label checks, as k8s.io/apimachinery/pkg/util/validation words them. That package
// would pull k8s.io/utils and klog into go.mod, so the rules are restated here without regexps.
const (
	validateQualifiedNameMaxLength = 63
	validateLabelValueMaxLength    = 63
	validateDNS1123LabelMaxLength  = 63
	validateDNS1123SubdomainMaxLen = 253

	validateQualifiedNameFmt = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
	validateQualifiedNameMsg = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character" +
		" (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '" + validateQualifiedNameFmt + "')"
	validateLabelValueMsg = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character" +
		" (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(" + validateQualifiedNameFmt + ")?')"
	validateDNS1123LabelFmt = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
	validateDNS1123LabelMsg = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character" +
		" (e.g. 'my-name',  or '123-abc', regex used for validation is '" + validateDNS1123LabelFmt + "')"
	validateDNS1123SubdomainMsg = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character" +
		" (e.g. 'example.com', regex used for validation is '" + validateDNS1123LabelFmt + "(\\." + validateDNS1123LabelFmt + ")*')"
)

func validateMaxLenMsg(n int) string { return fmt.Sprintf("must be no more than %d characters", n) }

func validateIsAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

func validateIsLowerAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || '0' <= c && c <= '9'
}

// validateQualifiedPart reports whether s matches the qualified-name regex (non-empty).
func validateQualifiedPart(s string) bool {
	if s == "" || !validateIsAlnum(s[0]) || !validateIsAlnum(s[len(s)-1]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !validateIsAlnum(c) && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}

// validateDNS1123LabelFormat reports whether s matches the RFC 1123 label regex, ignoring length.
func validateDNS1123LabelFormat(s string) bool {
	if s == "" || !validateIsLowerAlnum(s[0]) || !validateIsLowerAlnum(s[len(s)-1]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !validateIsLowerAlnum(c) && c != '-' {
			return false
		}
	}
	return true
}

func validateDNS1123SubdomainFormat(s string) bool {
	for _, label := range strings.Split(s, ".") {
		if !validateDNS1123LabelFormat(label) {
			return false
		}
	}
	return true
}

// validateQualifiedName is util/validation.IsQualifiedName (label keys, resource names).
func validateQualifiedName(value string) []string {
	var msgs []string
	parts := strings.Split(value, "/")
	var name string
	switch len(parts) {
	case 1:
		name = parts[0]
	case 2:
		prefix := parts[0]
		name = parts[1]
		if prefix == "" {
			msgs = append(msgs, "prefix part must be non-empty")
		} else {
			if len(prefix) > validateDNS1123SubdomainMaxLen {
				msgs = append(msgs, "prefix part "+validateMaxLenMsg(validateDNS1123SubdomainMaxLen))
			}
			if !validateDNS1123SubdomainFormat(prefix) {
				msgs = append(msgs, "prefix part "+validateDNS1123SubdomainMsg)
			}
		}
	default:
		return append(msgs, "a qualified name "+validateQualifiedNameMsg+
			" with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')")
	}
	if name == "" {
		msgs = append(msgs, "name part must be non-empty")
	} else if len(name) > validateQualifiedNameMaxLength {
		msgs = append(msgs, "name part "+validateMaxLenMsg(validateQualifiedNameMaxLength))
	}
	if !validateQualifiedPart(name) {
		msgs = append(msgs, "name part "+validateQualifiedNameMsg)
	}
	return msgs
}

// validateLabelValue is util/validation.IsValidLabelValue.
func validateLabelValue(value string) []string {
	var msgs []string
	if len(value) > validateLabelValueMaxLength {
		msgs = append(msgs, validateMaxLenMsg(validateLabelValueMaxLength))
	}
	if value != "" && !validateQualifiedPart(value) {
		msgs = append(msgs, validateLabelValueMsg)
	}
	return msgs
}

// validateDNS1123Label is util/validation.IsDNS1123Label (container names).
func validateDNS1123Label(value string) []string {
	var msgs []string
	if len(value) > validateDNS1123LabelMaxLength {
		msgs = append(msgs, validateMaxLenMsg(validateDNS1123LabelMaxLength))
	}
	if !validateDNS1123LabelFormat(value) {
		if len(value) <= validateDNS1123SubdomainMaxLen && validateDNS1123SubdomainFormat(value) {
			msgs = append(msgs, "must not contain dots")
		} else {
			msgs = append(msgs, validateDNS1123LabelMsg)
		}
	}
	return msgs
}
