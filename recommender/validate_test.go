package recommender

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Test helpers carry a "vt" prefix so they cannot collide with other tests of the package.

func vtInt32(v int32) *int32 { return &v }

func vtString(v string) *string { return &v }

func vtQty(s string) *resource.Quantity {
	q := resource.MustParse(s)
	return &q
}

// vtValidSpec is a spec that uses every field ValidateSpec looks at, all valid.
func vtValidSpec() *Spec {
	return &Spec{
		ScaleTargetRef: ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
		MinReplicas:    vtInt32(2),
		MaxReplicas:    10,
		Metrics: []MetricSpec{
			{Type: MetricResource, Resource: &ResourceMetricSource{
				Name: "cpu", Target: MetricTarget{Type: TargetUtilization, AverageUtilization: vtInt32(60)}}},
			{Type: MetricContainerResource, ContainerResource: &ContainerResourceMetricSource{
				Name: "memory", Container: "app", Target: MetricTarget{Type: TargetAverageValue, AverageValue: vtQty("500Mi")}}},
			{Type: MetricPods, Pods: &PodsMetricSource{
				Metric: MetricIdentifier{Name: "requests_per_second", Selector: &LabelSelector{
					MatchLabels: map[string]string{"app": "web", "example.com/tier": "front"},
					MatchExpressions: []LabelSelectorRequirement{
						{Key: "zone", Operator: "In", Values: []string{"a", "b"}},
						{Key: "canary", Operator: "DoesNotExist"},
					},
				}},
				Target: MetricTarget{Type: TargetAverageValue, AverageValue: vtQty("100")}}},
			{Type: MetricObject, Object: &ObjectMetricSource{
				DescribedObject: ObjectReference{APIVersion: "networking.k8s.io/v1", Kind: "Ingress", Name: "main"},
				Metric:          MetricIdentifier{Name: "hits"},
				Target:          MetricTarget{Type: TargetValue, Value: vtQty("2k"), AverageValue: vtQty("10")}}},
			{Type: MetricExternal, External: &ExternalMetricSource{
				Metric: MetricIdentifier{Name: "queue_depth", Selector: &LabelSelector{
					MatchExpressions: []LabelSelectorRequirement{{Key: "queue", Operator: "NotIn", Values: []string{"dead"}}},
				}},
				Target: MetricTarget{Type: TargetAverageValue, AverageValue: vtQty("30")}}},
		},
		Behavior: &Behavior{
			ScaleUp: &ScalingRules{
				StabilizationWindowSeconds: vtInt32(0),
				SelectPolicy:               vtString(SelectMax),
				Policies:                   []ScalingPolicy{{Type: PolicyPods, Value: 4, PeriodSeconds: 15}, {Type: PolicyPercent, Value: 100, PeriodSeconds: 1800}},
				Tolerance:                  vtQty("0"),
			},
			ScaleDown: &ScalingRules{
				StabilizationWindowSeconds: vtInt32(3600),
				SelectPolicy:               vtString(SelectDisabled),
				Policies:                   []ScalingPolicy{{Type: PolicyPercent, Value: 10, PeriodSeconds: 1}},
				Tolerance:                  vtQty("10"),
			},
		},
	}
}

// vtMinimalSpec is the smallest valid spec: only maxReplicas.
func vtMinimalSpec() *Spec { return &Spec{MaxReplicas: 3} }

func vtErr(field, desc string) FieldError { return FieldError{Field: field, Description: desc} }

const (
	vtPathSegSlash   = "may not contain '/'"
	vtLabelValueMsg  = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
	vtQualifiedMsg   = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
	vtDNSLabelMsg    = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
	vtMetricTypesMsg = `supported values: "ContainerResource", "External", "Object", "Pods", "Resource"`
)

func TestValidateSpec(t *testing.T) {
	m := func(i int) string { return "spec.metrics[" + string(rune('0'+i)) + "]" }
	tests := []struct {
		name   string
		base   func() *Spec // vtValidSpec when nil
		mutate func(s *Spec)
		want   []FieldError
	}{
		// A big valid spec, and the smallest one, have no errors.
		{name: "§10 fully valid big spec", mutate: func(*Spec) {}},
		{name: "§10 minimal spec (maxReplicas only)", base: vtMinimalSpec, mutate: func(*Spec) {}},

		// §10 minReplicas / maxReplicas.
		{name: "§10 minReplicas 0 with an Object metric (HPAScaleToZero)", mutate: func(s *Spec) { s.MinReplicas = vtInt32(0) }},
		{name: "§10 minReplicas 0 with only an External metric", base: vtMinimalSpec, mutate: func(s *Spec) {
			s.MinReplicas = vtInt32(0)
			s.Metrics = []MetricSpec{{Type: MetricExternal, External: &ExternalMetricSource{
				Metric: MetricIdentifier{Name: "q"}, Target: MetricTarget{Type: TargetValue, Value: vtQty("1")}}}}
		}},
		{name: "§10 minReplicas negative", mutate: func(s *Spec) { s.MinReplicas = vtInt32(-1) },
			want: []FieldError{vtErr("spec.minReplicas", "Invalid value: -1: must be greater than or equal to 0")}},
		{name: "§10 minReplicas 0 without Object/External metric", mutate: func(s *Spec) {
			s.MinReplicas = vtInt32(0)
			s.Metrics = s.Metrics[:3]
		}, want: []FieldError{vtErr("spec.metrics", "Forbidden: must specify at least one Object or External metric to support scaling to zero replicas")}},
		{name: "§10 minReplicas 0 with empty metrics (defaults to cpu)", base: vtMinimalSpec, mutate: func(s *Spec) { s.MinReplicas = vtInt32(0) },
			want: []FieldError{vtErr("spec.metrics", "Forbidden: must specify at least one Object or External metric to support scaling to zero replicas")}},
		{name: "§10 maxReplicas 0", base: vtMinimalSpec, mutate: func(s *Spec) { s.MaxReplicas = 0 },
			want: []FieldError{vtErr("spec.maxReplicas", "Invalid value: 0: must be greater than 0")}},
		{name: "§10 maxReplicas equal to minReplicas", mutate: func(s *Spec) { s.MaxReplicas = 2 }},
		{name: "§10 maxReplicas below minReplicas", mutate: func(s *Spec) { s.MaxReplicas = 1 },
			want: []FieldError{vtErr("spec.maxReplicas", "Invalid value: 1: must be greater than or equal to `minReplicas`")}},
		{name: "§10 maxReplicas 0 and below minReplicas gives both", mutate: func(s *Spec) { s.MaxReplicas = 0 },
			want: []FieldError{
				vtErr("spec.maxReplicas", "Invalid value: 0: must be greater than 0"),
				vtErr("spec.maxReplicas", "Invalid value: 0: must be greater than or equal to `minReplicas`"),
			}},

		// §10 scaleTargetRef: optional here, checked when present.
		{name: "§10 scaleTargetRef absent is allowed (DESIGN)", mutate: func(s *Spec) { s.ScaleTargetRef = ObjectReference{} }},
		{name: "§10 scaleTargetRef partial needs kind and name", mutate: func(s *Spec) { s.ScaleTargetRef = ObjectReference{APIVersion: "apps/v1"} },
			want: []FieldError{vtErr("spec.scaleTargetRef.kind", "Required value"), vtErr("spec.scaleTargetRef.name", "Required value")}},
		{name: "§10 scaleTargetRef invalid path segments", mutate: func(s *Spec) { s.ScaleTargetRef = ObjectReference{Kind: "..", Name: "a/b%c"} },
			want: []FieldError{
				vtErr("spec.scaleTargetRef.kind", `Invalid value: "..": may not be '..'`),
				vtErr("spec.scaleTargetRef.name", `Invalid value: "a/b%c": may not contain '/'`),
				vtErr("spec.scaleTargetRef.name", `Invalid value: "a/b%c": may not contain '%'`),
			}},

		// §10 metric type and sub-struct.
		{name: "§10 metric type missing", mutate: func(s *Spec) { s.Metrics[0].Type = "" },
			want: []FieldError{vtErr(m(0)+".type", "Required value: must specify a metric source type")}},
		{name: "§10 metric type unsupported", mutate: func(s *Spec) { s.Metrics[0].Type = "resource" },
			want: []FieldError{vtErr(m(0)+".type", `Unsupported value: "resource": `+vtMetricTypesMsg)}},
		{name: "§10 metric source missing for type", mutate: func(s *Spec) { s.Metrics[2].Pods = nil },
			want: []FieldError{vtErr(m(2)+".pods", "Required value: must populate information for the given metric source")}},
		{name: "§10 metric source of another type", mutate: func(s *Spec) { s.Metrics[2].Type = MetricExternal },
			want: []FieldError{
				vtErr(m(2)+".external", "Required value: must populate information for the given metric source"),
				vtErr(m(2)+".pods", "Forbidden: must populate the given metric source only"),
			}},
		{name: "§10 two metric sources set", mutate: func(s *Spec) { s.Metrics[0].Pods = s.Metrics[2].Pods },
			want: []FieldError{vtErr(m(0)+".pods", "Forbidden: must populate the given metric source only")}},

		// §10 metric.name.
		{name: "§10 metric.name required (Pods)", mutate: func(s *Spec) { s.Metrics[2].Pods.Metric.Name = "" },
			want: []FieldError{vtErr(m(2)+".pods.metric.name", "Required value: must specify a metric name")}},
		{name: "§10 metric.name path segment (Object)", mutate: func(s *Spec) { s.Metrics[3].Object.Metric.Name = "a/b" },
			want: []FieldError{vtErr(m(3)+".object.metric.name", `Invalid value: "a/b": `+vtPathSegSlash)}},
		{name: "§10 metric.name path segment (External)", mutate: func(s *Spec) { s.Metrics[4].External.Metric.Name = "." },
			want: []FieldError{vtErr(m(4)+".external.metric.name", `Invalid value: ".": may not be '.'`)}},

		// §10 targets.
		{name: "§10 target type required", mutate: func(s *Spec) { s.Metrics[0].Resource.Target.Type = "" },
			want: []FieldError{vtErr(m(0)+".resource.target.type", "Required value: must specify a metric target type")}},
		{name: "§10 target type unknown", mutate: func(s *Spec) { s.Metrics[0].Resource.Target.Type = "Average" },
			want: []FieldError{vtErr(m(0)+".resource.target.type", `Invalid value: "Average": must be either Utilization, Value, or AverageValue`)}},
		{name: "§10 target type not cross-checked with the fields set", mutate: func(s *Spec) { s.Metrics[0].Resource.Target.Type = TargetValue }},
		{name: "§10 target value must be > 0", mutate: func(s *Spec) { s.Metrics[3].Object.Target.Value = vtQty("0") },
			want: []FieldError{vtErr(m(3)+".object.target.value", `Invalid value: "0": must be positive`)}},
		{name: "§10 target averageValue must be > 0", mutate: func(s *Spec) { s.Metrics[2].Pods.Target.AverageValue = vtQty("-500m") },
			want: []FieldError{vtErr(m(2)+".pods.target.averageValue", `Invalid value: "-500m": must be positive`)}},
		{name: "§10 target averageValue tiny positive is fine", mutate: func(s *Spec) { s.Metrics[2].Pods.Target.AverageValue = vtQty("1m") }},
		{name: "§10 target averageUtilization 1 is the minimum", mutate: func(s *Spec) { s.Metrics[0].Resource.Target.AverageUtilization = vtInt32(1) }},
		{name: "§10 target averageUtilization 0", mutate: func(s *Spec) { s.Metrics[0].Resource.Target.AverageUtilization = vtInt32(0) },
			want: []FieldError{vtErr(m(0)+".resource.target.averageUtilization", "Invalid value: 0: must be greater than 0")}},

		// §10 Resource.
		{name: "§10 Resource name required", mutate: func(s *Spec) { s.Metrics[0].Resource.Name = "" },
			want: []FieldError{vtErr(m(0)+".resource.name", "Required value: must specify a resource name")}},
		{name: "§10 Resource averageValue instead of utilization", mutate: func(s *Spec) {
			s.Metrics[0].Resource.Target = MetricTarget{Type: TargetAverageValue, AverageValue: vtQty("250m")}
		}},
		{name: "§10 Resource needs utilization or averageValue", mutate: func(s *Spec) {
			s.Metrics[0].Resource.Target = MetricTarget{Type: TargetValue, Value: vtQty("1")}
		}, want: []FieldError{vtErr(m(0)+".resource.target.averageUtilization", "Required value: must set either a target raw value or a target utilization")}},
		{name: "§10 Resource not both utilization and averageValue", mutate: func(s *Spec) { s.Metrics[0].Resource.Target.AverageValue = vtQty("1") },
			want: []FieldError{vtErr(m(0)+".resource.target.averageValue", "Forbidden: may not set both a target raw value and a target utilization")}},

		// §10 ContainerResource.
		{name: "§10 ContainerResource utilization target", mutate: func(s *Spec) {
			s.Metrics[1].ContainerResource.Target = MetricTarget{Type: TargetUtilization, AverageUtilization: vtInt32(50)}
		}},
		{name: "§10 ContainerResource extended resource name", mutate: func(s *Spec) { s.Metrics[1].ContainerResource.Name = "example.com/gpu" }},
		{name: "§10 ContainerResource container required", mutate: func(s *Spec) { s.Metrics[1].ContainerResource.Container = "" },
			want: []FieldError{vtErr(m(1)+".containerResource.container", "Required value: must specify a container")}},
		{name: "§10 ContainerResource container DNS-1123 label", mutate: func(s *Spec) { s.Metrics[1].ContainerResource.Container = "App_1" },
			want: []FieldError{vtErr(m(1)+".containerResource.container", `Invalid value: "App_1": `+vtDNSLabelMsg)}},
		{name: "§10 ContainerResource container with dots", mutate: func(s *Spec) { s.Metrics[1].ContainerResource.Container = "a.b" },
			want: []FieldError{vtErr(m(1)+".containerResource.container", `Invalid value: "a.b": must not contain dots`)}},
		{name: "§10 ContainerResource name required", mutate: func(s *Spec) { s.Metrics[1].ContainerResource.Name = "" },
			want: []FieldError{vtErr(m(1)+".containerResource.name", "Required value: must specify a resource name")}},
		{name: "§10 ContainerResource name not a container resource", mutate: func(s *Spec) { s.Metrics[1].ContainerResource.Name = "pods" },
			want: []FieldError{vtErr(m(1)+".containerResource.name", `Invalid value: "pods": must be a standard resource for containers`)}},
		{name: "§10 ContainerResource needs utilization or averageValue", mutate: func(s *Spec) {
			s.Metrics[1].ContainerResource.Target.AverageValue = nil
		}, want: []FieldError{vtErr(m(1)+".containerResource.target.averageUtilization", "Required value: must set either a target raw value or a target utilization")}},
		{name: "§10 ContainerResource not both", mutate: func(s *Spec) { s.Metrics[1].ContainerResource.Target.AverageUtilization = vtInt32(5) },
			want: []FieldError{vtErr(m(1)+".containerResource.target.averageValue", "Forbidden: may not set both a target raw value and a target utilization")}},

		// §10 Pods.
		{name: "§10 Pods averageValue required", mutate: func(s *Spec) {
			s.Metrics[2].Pods.Target = MetricTarget{Type: TargetValue, Value: vtQty("3")}
		}, want: []FieldError{vtErr(m(2)+".pods.target.averageValue", "Required value: must specify a positive target averageValue")}},

		// §10 Object.
		{name: "§10 Object value only", mutate: func(s *Spec) { s.Metrics[3].Object.Target.AverageValue = nil }},
		{name: "§10 Object averageValue only", mutate: func(s *Spec) { s.Metrics[3].Object.Target.Value = nil }},
		{name: "§10 Object needs value or averageValue", mutate: func(s *Spec) {
			s.Metrics[3].Object.Target = MetricTarget{Type: TargetValue}
		}, want: []FieldError{vtErr(m(3)+".object.target.averageValue", "Required value: must set either a target value or averageValue")}},
		{name: "§10 Object describedObject kind and name", mutate: func(s *Spec) {
			s.Metrics[3].Object.DescribedObject = ObjectReference{APIVersion: "v1", Name: "x/y"}
		}, want: []FieldError{
			vtErr(m(3)+".object.describedObject.kind", "Required value"),
			vtErr(m(3)+".object.describedObject.name", `Invalid value: "x/y": `+vtPathSegSlash),
		}},

		// §10 External.
		{name: "§10 External value only", mutate: func(s *Spec) {
			s.Metrics[4].External.Target = MetricTarget{Type: TargetValue, Value: vtQty("5")}
		}},
		{name: "§10 External needs value or averageValue", mutate: func(s *Spec) { s.Metrics[4].External.Target.AverageValue = nil },
			want: []FieldError{vtErr(m(4)+".external.target.averageValue", "Required value: must set either a target value for metric or a per-pod target")}},
		{name: "§10 External not both", mutate: func(s *Spec) { s.Metrics[4].External.Target.Value = vtQty("5") },
			want: []FieldError{vtErr(m(4)+".external.target.value", "Forbidden: may not set both a target value for metric and a per-pod target")}},

		// Label selectors (stricter than upstream's API validation).
		{name: "selector empty is valid", mutate: func(s *Spec) { s.Metrics[2].Pods.Metric.Selector = &LabelSelector{} }},
		{name: "selector In without values", mutate: func(s *Spec) { s.Metrics[2].Pods.Metric.Selector.MatchExpressions[0].Values = nil },
			want: []FieldError{vtErr(m(2)+".pods.metric.selector.matchExpressions[0].values", "Required value: must be specified when `operator` is 'In' or 'NotIn'")}},
		{name: "selector NotIn without values", mutate: func(s *Spec) { s.Metrics[4].External.Metric.Selector.MatchExpressions[0].Values = []string{} },
			want: []FieldError{vtErr(m(4)+".external.metric.selector.matchExpressions[0].values", "Required value: must be specified when `operator` is 'In' or 'NotIn'")}},
		{name: "selector Exists with values", mutate: func(s *Spec) {
			s.Metrics[2].Pods.Metric.Selector.MatchExpressions[1] = LabelSelectorRequirement{Key: "canary", Operator: "Exists", Values: []string{"x"}}
		}, want: []FieldError{vtErr(m(2)+".pods.metric.selector.matchExpressions[1].values", "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'")}},
		{name: "selector unknown operator", mutate: func(s *Spec) { s.Metrics[2].Pods.Metric.Selector.MatchExpressions[1].Operator = "Gt" },
			want: []FieldError{vtErr(m(2)+".pods.metric.selector.matchExpressions[1].operator", `Invalid value: "Gt": not a valid selector operator`)}},
		{name: "selector bad key and value in an expression", mutate: func(s *Spec) {
			s.Metrics[2].Pods.Metric.Selector.MatchExpressions[0] = LabelSelectorRequirement{Key: "-zone", Operator: "In", Values: []string{"a", "b c"}}
		}, want: []FieldError{
			vtErr(m(2)+".pods.metric.selector.matchExpressions[0].key", `Invalid value: "-zone": `+vtQualifiedMsg),
			vtErr(m(2)+".pods.metric.selector.matchExpressions[0].values[1]", `Invalid value: "b c": `+vtLabelValueMsg),
		}},
		{name: "selector matchLabels bad key and value, sorted", mutate: func(s *Spec) {
			s.Metrics[2].Pods.Metric.Selector.MatchLabels = map[string]string{"z": "ok", "a/b/c": "", "app": strings.Repeat("x", 64)}
		}, want: []FieldError{
			vtErr(m(2)+".pods.metric.selector.matchLabels", `Invalid value: "a/b/c": a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`),
			vtErr(m(2)+".pods.metric.selector.matchLabels", `Invalid value: "`+strings.Repeat("x", 64)+`": must be no more than 63 characters`),
		}},
		{name: "selector key with bad prefix", mutate: func(s *Spec) {
			s.Metrics[2].Pods.Metric.Selector.MatchLabels = map[string]string{"/app": "web", "Example.com/x": "y"}
		}, want: []FieldError{
			vtErr(m(2)+".pods.metric.selector.matchLabels", `Invalid value: "/app": prefix part must be non-empty`),
			vtErr(m(2)+".pods.metric.selector.matchLabels", `Invalid value: "Example.com/x": prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`),
		}},

		// §10 behavior.
		{name: "§10 behavior empty directions are fine", mutate: func(s *Spec) { s.Behavior = &Behavior{} }},
		{name: "§10 behavior explicit empty policies are absent, not an error", mutate: func(s *Spec) {
			s.Behavior.ScaleUp.Policies = nil
			s.Behavior.ScaleDown.Policies = []ScalingPolicy{}
		}},
		{name: "§10 behavior stabilizationWindowSeconds negative", mutate: func(s *Spec) { s.Behavior.ScaleUp.StabilizationWindowSeconds = vtInt32(-1) },
			want: []FieldError{vtErr("spec.behavior.scaleUp.stabilizationWindowSeconds", "Invalid value: -1: must be greater than or equal to zero")}},
		{name: "§10 behavior stabilizationWindowSeconds over 3600", mutate: func(s *Spec) { s.Behavior.ScaleDown.StabilizationWindowSeconds = vtInt32(3601) },
			want: []FieldError{vtErr("spec.behavior.scaleDown.stabilizationWindowSeconds", "Invalid value: 3601: must be less than or equal to 3600")}},
		{name: "§10 behavior selectPolicy Min", mutate: func(s *Spec) { s.Behavior.ScaleUp.SelectPolicy = vtString(SelectMin) }},
		{name: "§10 behavior selectPolicy unsupported", mutate: func(s *Spec) { s.Behavior.ScaleUp.SelectPolicy = vtString("max") },
			want: []FieldError{vtErr("spec.behavior.scaleUp.selectPolicy", `Unsupported value: "max": supported values: "Disabled", "Max", "Min"`)}},
		{name: "§10 behavior policy type unsupported", mutate: func(s *Spec) { s.Behavior.ScaleUp.Policies[1].Type = "Percentage" },
			want: []FieldError{vtErr("spec.behavior.scaleUp.policies[1].type", `Unsupported value: "Percentage": supported values: "Percent", "Pods"`)}},
		{name: "§10 behavior policy value 0", mutate: func(s *Spec) { s.Behavior.ScaleDown.Policies[0].Value = 0 },
			want: []FieldError{vtErr("spec.behavior.scaleDown.policies[0].value", "Invalid value: 0: must be greater than zero")}},
		{name: "§10 behavior policy periodSeconds 0", mutate: func(s *Spec) { s.Behavior.ScaleUp.Policies[1].PeriodSeconds = 0 },
			want: []FieldError{vtErr("spec.behavior.scaleUp.policies[1].periodSeconds", "Invalid value: 0: must be greater than zero")}},
		{name: "§10 behavior policy periodSeconds over 1800", mutate: func(s *Spec) { s.Behavior.ScaleUp.Policies[1].PeriodSeconds = 1801 },
			want: []FieldError{vtErr("spec.behavior.scaleUp.policies[1].periodSeconds", "Invalid value: 1801: must be less than or equal to 1800")}},
		{name: "§10 behavior tolerance negative", mutate: func(s *Spec) { s.Behavior.ScaleDown.Tolerance = vtQty("-50m") },
			want: []FieldError{vtErr("spec.behavior.scaleDown.tolerance", `Invalid value: "-50m": must be greater than or equal to zero`)}},
		{name: "§10 behavior tolerance alone (HPAConfigurableTolerance)", mutate: func(s *Spec) {
			s.Behavior = &Behavior{ScaleUp: &ScalingRules{Tolerance: vtQty("0.05")}}
		}},

		// Errors accumulate.
		{name: "§10 three bad fields give three errors", mutate: func(s *Spec) {
			s.MaxReplicas = 20
			s.MinReplicas = vtInt32(-3)
			s.Metrics[0].Resource.Target.AverageUtilization = vtInt32(0)
			s.Behavior.ScaleUp.Policies[0].Value = -1
		}, want: []FieldError{
			vtErr("spec.minReplicas", "Invalid value: -3: must be greater than or equal to 0"),
			vtErr(m(0)+".resource.target.averageUtilization", "Invalid value: 0: must be greater than 0"),
			vtErr("spec.behavior.scaleUp.policies[0].value", "Invalid value: -1: must be greater than zero"),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := tt.base
			if base == nil {
				base = vtValidSpec
			}
			spec := base()
			tt.mutate(spec)
			got := ValidateSpec(spec, "spec")
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ValidateSpec() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidateSpecPaths(t *testing.T) {
	bad := &Spec{MaxReplicas: 0}
	tests := []struct {
		name string
		spec *Spec
		path string
		want []FieldError
	}{
		{name: "empty path gives bare field names", spec: bad, path: "",
			want: []FieldError{vtErr("maxReplicas", "Invalid value: 0: must be greater than 0")}},
		{name: "a nested prefix", spec: bad, path: "steps[2].spec",
			want: []FieldError{vtErr("steps[2].spec.maxReplicas", "Invalid value: 0: must be greater than 0")}},
		{name: "nil spec is required", spec: nil, path: "spec",
			want: []FieldError{vtErr("spec", "Required value")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ValidateSpec(tt.spec, tt.path)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ValidateSpec() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestValidateSpecNilPointers sets each optional pointer of a spec to nil in turn: nothing may
// panic, and a nil source or rule set is reported or ignored, never dereferenced.
func TestValidateSpecNilPointers(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(s *Spec)
	}{
		{name: "all metric sources nil", mutate: func(s *Spec) {
			for i := range s.Metrics {
				s.Metrics[i] = MetricSpec{Type: s.Metrics[i].Type}
			}
		}},
		{name: "all target pointers nil", mutate: func(s *Spec) {
			s.Metrics[0].Resource.Target = MetricTarget{}
			s.Metrics[1].ContainerResource.Target = MetricTarget{}
			s.Metrics[2].Pods.Target = MetricTarget{}
			s.Metrics[3].Object.Target = MetricTarget{}
			s.Metrics[4].External.Target = MetricTarget{}
		}},
		{name: "selectors nil", mutate: func(s *Spec) {
			s.Metrics[2].Pods.Metric.Selector = nil
			s.Metrics[4].External.Metric.Selector = nil
		}},
		{name: "behavior rule pointers nil", mutate: func(s *Spec) {
			s.Behavior.ScaleUp = &ScalingRules{}
			s.Behavior.ScaleDown = nil
		}},
		{name: "behavior nil", mutate: func(s *Spec) { s.Behavior = nil }},
		{name: "everything zero", mutate: func(s *Spec) { *s = Spec{} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := vtValidSpec()
			tt.mutate(spec)
			_ = ValidateSpec(spec, "spec")
			_ = ValidateInput(&Input{Spec: spec}, "", Limits{})
			_ = SetDefaults(spec)
		})
	}
}

// TestValidateSpecDoesNotWrite checks validation leaves the spec untouched, including the
// string cache inside quantities it formats for messages.
func TestValidateSpecDoesNotWrite(t *testing.T) {
	spec := vtValidSpec()
	spec.Metrics[2].Pods.Target.AverageValue = vtQty("-1")
	spec.Behavior.ScaleUp.Tolerance = vtQty("-0.5")
	before := *spec.Metrics[2].Pods.Target.AverageValue
	beforeTol := *spec.Behavior.ScaleUp.Tolerance
	if errs := ValidateSpec(spec, "spec"); len(errs) != 2 {
		t.Fatalf("ValidateSpec() = %v, want 2 errors", errs)
	}
	if diff := cmp.Diff(before, *spec.Metrics[2].Pods.Target.AverageValue, cmp.AllowUnexported(resource.Quantity{})); diff != "" {
		t.Errorf("averageValue changed (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(beforeTol, *spec.Behavior.ScaleUp.Tolerance, cmp.AllowUnexported(resource.Quantity{})); diff != "" {
		t.Errorf("tolerance changed (-before +after):\n%s", diff)
	}
}

func vtValidInput() *Input {
	ts := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	return &Input{
		Spec:            &Spec{MaxReplicas: 5, Metrics: vtValidSpec().Metrics[:2]},
		CurrentReplicas: 2,
		StatusReplicas:  2,
		Pods: []Pod{
			{Name: "web-a", Phase: PodRunning, HasReady: true, Ready: true,
				Containers:     []Container{{Name: "app", Requests: map[string]resource.Quantity{"cpu": resource.MustParse("500m")}}},
				InitContainers: []Container{{Name: "proxy", RestartPolicy: "Always"}},
				Requests:       map[string]resource.Quantity{"memory": resource.MustParse("1Gi")}},
			{Name: "web-b", Phase: PodPending},
		},
		Metrics: []Observation{
			{PodSamples: []PodSample{{Pod: "web-a", Milli: 250, Timestamp: ts, Window: time.Minute}, {Pod: "gone", Milli: 1, Timestamp: ts}}},
			{Error: "unavailable"},
		},
	}
}

func TestValidateInput(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(in *Input)
		path   string
		limits Limits
		want   []FieldError
	}{
		{name: "valid input", mutate: func(*Input) {}},
		{name: "valid at the pod limit", mutate: func(*Input) {}, limits: Limits{MaxPods: 2}},
		{name: "spec errors under spec", mutate: func(in *Input) { in.Spec.MaxReplicas = 0 },
			want: []FieldError{vtErr("spec.maxReplicas", "Invalid value: 0: must be greater than 0")}},
		{name: "spec required", mutate: func(in *Input) { in.Spec = nil },
			want: []FieldError{vtErr("spec", "Required value")}},
		{name: "replicas zero are fine", mutate: func(in *Input) { in.CurrentReplicas, in.StatusReplicas = 0, 0 }},
		{name: "replicas negative", mutate: func(in *Input) { in.CurrentReplicas, in.StatusReplicas = -1, -2 },
			want: []FieldError{
				vtErr("currentReplicas", "Invalid value: -1: must be greater than or equal to 0"),
				vtErr("statusReplicas", "Invalid value: -2: must be greater than or equal to 0"),
			}},
		{name: "one observation per spec metric", mutate: func(in *Input) { in.Metrics = in.Metrics[:1] },
			want: []FieldError{vtErr("metrics", "Invalid value: 1: must have exactly 2 entries, one per spec.metrics entry in the same order")}},
		{name: "empty spec.metrics expects one observation (default cpu)", mutate: func(in *Input) {
			in.Spec.Metrics = nil
			in.Metrics = in.Metrics[:1]
		}},
		{name: "empty spec.metrics with no observation", mutate: func(in *Input) {
			in.Spec.Metrics = nil
			in.Metrics = nil
		}, want: []FieldError{vtErr("metrics", "Invalid value: 0: must have exactly 1 entry: an empty spec.metrics means the default cpu utilization metric")}},
		{name: "pod name required and unique", mutate: func(in *Input) {
			in.Pods = append(in.Pods, Pod{Name: "web-a", Phase: PodRunning}, Pod{Phase: PodRunning})
		}, want: []FieldError{
			vtErr("pods[2].name", `Duplicate value: "web-a"`),
			vtErr("pods[3].name", "Required value"),
		}},
		{name: "pod phases", mutate: func(in *Input) {
			in.Pods = append(in.Pods, Pod{Name: "s", Phase: PodSucceeded}, Pod{Name: "f", Phase: PodFailed}, Pod{Name: "u", Phase: PodUnknown})
		}},
		{name: "pod phase empty or unknown", mutate: func(in *Input) { in.Pods[0].Phase = ""; in.Pods[1].Phase = "running" },
			want: []FieldError{
				vtErr("pods[0].phase", "Required value"),
				vtErr("pods[1].phase", `Unsupported value: "running": supported values: "Failed", "Pending", "Running", "Succeeded", "Unknown"`),
			}},
		{name: "container names required and unique across init containers", mutate: func(in *Input) {
			in.Pods[0].InitContainers = append(in.Pods[0].InitContainers, Container{Name: "app"}, Container{})
		}, want: []FieldError{
			vtErr("pods[0].initContainers[1].name", `Duplicate value: "app"`),
			vtErr("pods[0].initContainers[2].name", "Required value"),
		}},
		{name: "negative requests", mutate: func(in *Input) {
			in.Pods[0].Containers[0].Requests["cpu"] = resource.MustParse("-1")
			in.Pods[0].Requests[""] = resource.MustParse("1")
		}, want: []FieldError{
			vtErr("pods[0].containers[0].requests[cpu]", `Invalid value: "-1": must be greater than or equal to 0`),
			vtErr("pods[0].requests[]", "Required value: must specify a resource name"),
		}},
		{name: "too many pods", mutate: func(in *Input) {}, limits: Limits{MaxPods: 1},
			want: []FieldError{
				vtErr("pods", "Too many: 2: must have at most 1 item"),
				vtErr("metrics[0].podValues", "Too many: 2: must have at most 1 item"),
			}},
		{name: "pod sample pod required and unique, window not negative", mutate: func(in *Input) {
			in.Metrics[0].PodSamples = append(in.Metrics[0].PodSamples, PodSample{Pod: "web-a"}, PodSample{Window: -time.Second})
		}, want: []FieldError{
			vtErr("metrics[0].podValues[2].pod", `Duplicate value: "web-a"`),
			vtErr("metrics[0].podValues[3].pod", "Required value"),
			vtErr("metrics[0].podValues[3].window", `Invalid value: "-1s": must be greater than or equal to 0`),
		}},
		{name: "zero window means the default", mutate: func(in *Input) { in.Metrics[0].PodSamples[0].Window = 0 }},
		{name: "prefix path for simulate steps", path: "steps[1]", mutate: func(in *Input) { in.CurrentReplicas = -1; in.Pods[1].Name = "" },
			want: []FieldError{
				vtErr("steps[1].currentReplicas", "Invalid value: -1: must be greater than or equal to 0"),
				vtErr("steps[1].pods[1].name", "Required value"),
			}},
		{name: "errors accumulate across spec and observations", mutate: func(in *Input) {
			in.Spec.MaxReplicas = -1
			in.CurrentReplicas = -1
			in.Pods[1].Phase = "Lost"
		}, want: []FieldError{
			vtErr("spec.maxReplicas", "Invalid value: -1: must be greater than 0"),
			vtErr("currentReplicas", "Invalid value: -1: must be greater than or equal to 0"),
			vtErr("pods[1].phase", `Unsupported value: "Lost": supported values: "Failed", "Pending", "Running", "Succeeded", "Unknown"`),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := vtValidInput()
			tt.mutate(in)
			got := ValidateInput(in, tt.path, tt.limits)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ValidateInput() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidateObservationsSkipsSpec(t *testing.T) {
	in := vtValidInput()
	in.Spec.MaxReplicas = 0 // a spec error ValidateObservations must not report
	in.StatusReplicas = -1
	got := ValidateObservations(in, "steps[0]", Limits{})
	want := []FieldError{vtErr("steps[0].statusReplicas", "Invalid value: -1: must be greater than or equal to 0")}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ValidateObservations() mismatch (-want +got):\n%s", diff)
	}
	if got := ValidateInput(nil, "", Limits{}); len(got) != 1 {
		t.Errorf("ValidateInput(nil) = %v, want one error", got)
	}
}

// vtFuzzReader hands out fuzz bytes; it returns zeros once they run out.
type vtFuzzReader struct{ b []byte }

func (r *vtFuzzReader) byte() byte {
	if len(r.b) == 0 {
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *vtFuzzReader) bool() bool   { return r.byte()&1 == 1 }
func (r *vtFuzzReader) int32() int32 { return int32(int8(r.byte())) * int32(r.byte()%64+1) }

func (r *vtFuzzReader) pick(options ...string) string { return options[int(r.byte())%len(options)] }

func (r *vtFuzzReader) maybeInt32() *int32 {
	if !r.bool() {
		return nil
	}
	return vtInt32(r.int32())
}

func (r *vtFuzzReader) maybeString(options ...string) *string {
	if !r.bool() {
		return nil
	}
	return vtString(r.pick(options...))
}

func (r *vtFuzzReader) maybeQty() *resource.Quantity {
	if !r.bool() {
		return nil
	}
	return vtQty(r.pick("0", "1", "-1", "500m", "1.5Gi", "10k", "-0.05", "0.05"))
}

func (r *vtFuzzReader) name() string {
	return r.pick("", "a", "web", "a/b", ".", "..", "x%y", "App_1", "a.b", "cpu", "memory", "pods", "example.com/gpu", "-bad", strings.Repeat("n", 70))
}

func (r *vtFuzzReader) target() MetricTarget {
	return MetricTarget{
		Type:               r.pick("", TargetUtilization, TargetValue, TargetAverageValue, "bogus"),
		Value:              r.maybeQty(),
		AverageValue:       r.maybeQty(),
		AverageUtilization: r.maybeInt32(),
	}
}

func (r *vtFuzzReader) identifier() MetricIdentifier {
	id := MetricIdentifier{Name: r.name()}
	if r.bool() {
		sel := &LabelSelector{}
		if r.bool() {
			sel.MatchLabels = map[string]string{r.name(): r.name(), r.name(): r.name()}
		}
		for n := r.byte() % 3; n > 0; n-- {
			req := LabelSelectorRequirement{Key: r.name(), Operator: r.pick("In", "NotIn", "Exists", "DoesNotExist", "", "Gt")}
			for k := r.byte() % 3; k > 0; k-- {
				req.Values = append(req.Values, r.name())
			}
			sel.MatchExpressions = append(sel.MatchExpressions, req)
		}
		id.Selector = sel
	}
	return id
}

func (r *vtFuzzReader) rules() *ScalingRules {
	if !r.bool() {
		return nil
	}
	rules := &ScalingRules{
		StabilizationWindowSeconds: r.maybeInt32(),
		SelectPolicy:               r.maybeString(SelectMax, SelectMin, SelectDisabled, "", "max"),
		Tolerance:                  r.maybeQty(),
	}
	for n := r.byte() % 4; n > 0; n-- {
		rules.Policies = append(rules.Policies, ScalingPolicy{Type: r.pick(PolicyPods, PolicyPercent, ""), Value: r.int32(), PeriodSeconds: r.int32()})
	}
	if r.bool() && rules.Policies == nil {
		rules.Policies = []ScalingPolicy{}
	}
	return rules
}

// vtSpecFromBytes builds an arbitrary spec, nil pointers included, from fuzz bytes.
func vtSpecFromBytes(b []byte) *Spec {
	r := &vtFuzzReader{b: b}
	spec := &Spec{MinReplicas: r.maybeInt32(), MaxReplicas: r.int32()}
	if r.bool() {
		spec.ScaleTargetRef = ObjectReference{APIVersion: r.pick("", "apps/v1"), Kind: r.name(), Name: r.name()}
	}
	for n := r.byte() % 4; n > 0; n-- {
		m := MetricSpec{Type: r.pick("", MetricResource, MetricContainerResource, MetricPods, MetricObject, MetricExternal, "Other")}
		for _, src := range []int{0, 1, 2, 3, 4} {
			if !r.bool() {
				continue
			}
			switch src {
			case 0:
				m.Resource = &ResourceMetricSource{Name: r.name(), Target: r.target()}
			case 1:
				m.ContainerResource = &ContainerResourceMetricSource{Name: r.name(), Container: r.name(), Target: r.target()}
			case 2:
				m.Pods = &PodsMetricSource{Metric: r.identifier(), Target: r.target()}
			case 3:
				m.Object = &ObjectMetricSource{
					DescribedObject: ObjectReference{Kind: r.name(), Name: r.name()}, Metric: r.identifier(), Target: r.target(),
				}
			case 4:
				m.External = &ExternalMetricSource{Metric: r.identifier(), Target: r.target()}
			}
		}
		spec.Metrics = append(spec.Metrics, m)
	}
	if r.bool() {
		spec.Behavior = &Behavior{ScaleUp: r.rules(), ScaleDown: r.rules()}
	}
	return spec
}

// FuzzValidateSpec checks, for arbitrary specs: no panic; the result is deterministic; every
// error has a field path and a description; validation and defaulting leave the input unchanged;
// and defaulting a valid spec keeps it valid.
func FuzzValidateSpec(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	f.Add([]byte(strings.Repeat("\xff\x01\x7f\x80", 64)))
	f.Add([]byte("the quick brown fox jumps over the lazy dog, twice: the quick brown fox jumps"))
	quantities := cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })
	f.Fuzz(func(t *testing.T, b []byte) {
		spec := vtSpecFromBytes(b)
		orig := vtSpecFromBytes(b)
		got := ValidateSpec(spec, "spec")
		if again := ValidateSpec(spec, "spec"); !cmp.Equal(got, again) {
			t.Fatalf("ValidateSpec not deterministic: %v then %v", got, again)
		}
		for _, e := range got {
			if !strings.HasPrefix(e.Field, "spec") || e.Description == "" {
				t.Errorf("malformed error %+v", e)
			}
		}
		_ = ValidateInput(&Input{Spec: spec, Metrics: make([]Observation, len(spec.Metrics))}, "", Limits{MaxPods: 3})
		defaulted := SetDefaults(spec)
		if diff := cmp.Diff(orig, spec, quantities); diff != "" {
			t.Fatalf("input changed (-before +after):\n%s", diff)
		}
		if len(got) == 0 {
			if errs := ValidateSpec(defaulted, "spec"); len(errs) != 0 {
				t.Errorf("defaulting a valid spec made it invalid: %v", errs)
			}
		}
	})
}
