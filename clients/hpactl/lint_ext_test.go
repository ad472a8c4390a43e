package hpactl_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// lintHead is an autoscaler's manifest up to its spec's own fields.
const lintHead = `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: shop}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
`

// queueMetric is an External metric, so that minReplicas 0 is valid (HPAScaleToZero).
const queueMetric = `  metrics:
  - type: External
    external:
      metric: {name: queue_depth}
      target: {type: AverageValue, averageValue: 100}
`

// TestValidateWarnings: each warning rule of hpactl validate, with its exact message, and the
// specs that look alike but are fine (no warning); warnings alone exit 0.
func TestValidateWarnings(t *testing.T) {
	const where = ": document 0 (HorizontalPodAutoscaler shop/web): "
	for _, tc := range []struct {
		name, spec string
		want       []string // the warnings after "warning: FILE: document 0 (...): "
	}{
		{name: "scaleDown tolerance 1", spec: `  maxReplicas: 10
` + queueMetric + `  behavior:
    scaleDown: {tolerance: "1"}
`, want: []string{`spec.behavior.scaleDown.tolerance: tolerance 1 is 1 or more: the usage ratio would have to fall below 0, so the metrics never scale down; to turn scale-down off say selectPolicy: Disabled`}},
		{name: "scaleDown tolerance 1500m", spec: `  maxReplicas: 10
` + queueMetric + `  behavior:
    scaleDown: {tolerance: 1500m}
`, want: []string{`spec.behavior.scaleDown.tolerance: tolerance 1500m is 1 or more: the usage ratio would have to fall below 0, so the metrics never scale down; to turn scale-down off say selectPolicy: Disabled`}},
		{name: "scaleDown tolerance 999m is fine", spec: `  maxReplicas: 10
` + queueMetric + `  behavior:
    scaleDown: {tolerance: 999m}
`},
		{name: "scaleDown tolerance 1 with Disabled is a choice", spec: `  maxReplicas: 10
` + queueMetric + `  behavior:
    scaleDown: {tolerance: "1", selectPolicy: Disabled}
`},
		{name: "scaleUp tolerance 2 still scales up", spec: `  maxReplicas: 10
` + queueMetric + `  behavior:
    scaleUp: {tolerance: "2"}
`},
		{name: "minReplicas 0, scaleUp Percent only", spec: `  minReplicas: 0
  maxReplicas: 10
` + queueMetric + `  behavior:
    scaleUp:
      policies: [{type: Percent, value: 100, periodSeconds: 15}]
`, want: []string{`spec.behavior.scaleUp.policies: minReplicas is 0 and the scale-up limit at 0 replicas is 0 (a Percent policy allows a percentage of 0): once the last scale-down is older than the policies' periodSeconds, the autoscaler never scales up from zero; add a Pods policy`}},
		{name: "minReplicas 0, selectPolicy Min with a Percent policy", spec: `  minReplicas: 0
  maxReplicas: 10
` + queueMetric + `  behavior:
    scaleUp:
      selectPolicy: Min
      policies: [{type: Pods, value: 4, periodSeconds: 15}, {type: Percent, value: 100, periodSeconds: 15}]
`, want: []string{`spec.behavior.scaleUp.policies: minReplicas is 0 and the scale-up limit at 0 replicas is 0 (a Percent policy allows a percentage of 0): once the last scale-down is older than the policies' periodSeconds, the autoscaler never scales up from zero; add a Pods policy`}},
		{name: "minReplicas 0, Max with a Pods policy is fine", spec: `  minReplicas: 0
  maxReplicas: 10
` + queueMetric + `  behavior:
    scaleUp:
      policies: [{type: Pods, value: 4, periodSeconds: 15}, {type: Percent, value: 100, periodSeconds: 15}]
`},
		{name: "minReplicas 0, default scaleUp policies are fine", spec: `  minReplicas: 0
  maxReplicas: 10
` + queueMetric + `  behavior:
    scaleDown: {stabilizationWindowSeconds: 60}
`},
		{name: "minReplicas 1, Percent only is fine", spec: `  minReplicas: 1
  maxReplicas: 10
` + queueMetric + `  behavior:
    scaleUp:
      policies: [{type: Percent, value: 100, periodSeconds: 15}]
`},
		{name: "two Pods metrics of one name without selectors", spec: `  maxReplicas: 10
  metrics:
  - type: Pods
    pods:
      metric: {name: http_requests}
      target: {type: AverageValue, averageValue: 100}
  - type: Pods
    pods:
      metric: {name: http_requests}
      target: {type: AverageValue, averageValue: 50}
`, want: []string{`spec.metrics[1].pods.metric.selector: metric "http_requests" with no metric.selector reads the same series as spec.metrics[0]: give each a metric.selector that tells them apart`}},
		{name: "two Object metrics of one object with the same selector", spec: `  maxReplicas: 10
  metrics:
  - type: Object
    object:
      describedObject: {apiVersion: networking.k8s.io/v1, kind: Ingress, name: main}
      metric: {name: requests_per_second, selector: {matchLabels: {path: api}}}
      target: {type: Value, value: 2k}
  - type: Object
    object:
      describedObject: {apiVersion: networking.k8s.io/v1, kind: Ingress, name: main}
      metric: {name: requests_per_second, selector: {matchLabels: {path: api}}}
      target: {type: Value, value: 1k}
`, want: []string{`spec.metrics[1].object.metric.selector: metric "requests_per_second" with the same metric.selector (path=api) reads the same series as spec.metrics[0]: give each a metric.selector that tells them apart`}},
		{name: "an empty selector is no selector", spec: `  maxReplicas: 10
  metrics:
  - type: External
    external:
      metric: {name: queue_depth, selector: {}}
      target: {type: AverageValue, averageValue: 100}
  - type: External
    external:
      metric: {name: queue_depth}
      target: {type: Value, value: 1k}
`, want: []string{`spec.metrics[1].external.metric.selector: metric "queue_depth" with no metric.selector reads the same series as spec.metrics[0]: give each a metric.selector that tells them apart`}},
		{name: "selectors that tell them apart are fine", spec: `  maxReplicas: 10
  metrics:
  - type: Pods
    pods:
      metric: {name: http_requests, selector: {matchLabels: {verb: GET}}}
      target: {type: AverageValue, averageValue: 100}
  - type: Pods
    pods:
      metric: {name: http_requests, selector: {matchLabels: {verb: POST}}}
      target: {type: AverageValue, averageValue: 50}
`},
		{name: "one name on two objects is fine", spec: `  maxReplicas: 10
  metrics:
  - type: Object
    object:
      describedObject: {apiVersion: networking.k8s.io/v1, kind: Ingress, name: main}
      metric: {name: requests_per_second}
      target: {type: Value, value: 2k}
  - type: Object
    object:
      describedObject: {apiVersion: networking.k8s.io/v1, kind: Ingress, name: admin}
      metric: {name: requests_per_second}
      target: {type: Value, value: 1k}
`},
		{name: "a Pods and an External metric of one name are fine", spec: `  maxReplicas: 10
  metrics:
  - type: Pods
    pods:
      metric: {name: queue_depth}
      target: {type: AverageValue, averageValue: 100}
  - type: External
    external:
      metric: {name: queue_depth}
      target: {type: AverageValue, averageValue: 100}
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := writeFile(t, "hpa.yaml", lintHead+tc.spec)
			r := run(t, "", "validate", "-f", f)
			mustOK(t, r)
			var want []string
			for _, w := range tc.want {
				want = append(want, "warning: "+f+where+w)
			}
			got := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
			if r.stdout == "" {
				got = nil
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

// TestScaleFromZeroWarningHolds: what the Percent-only warning says, the engine does. The
// autoscaler scales 1 -> 0 at once (no demand), and the demand comes back 60 s later, past the
// 15 s period: a Percent-only scale-up stays at 0, the same spec with a Pods policy scales up.
func TestScaleFromZeroWarningHolds(t *testing.T) {
	trace := writeFile(t, "load.csv", "time,demand\n0,0\n15,0\n30,0\n45,0\n60,1000\n75,1000\n90,1000\n")
	for _, tc := range []struct {
		name, policies string
		scales         bool
	}{
		{name: "Percent only", policies: `[{type: Percent, value: 100, periodSeconds: 15}]`},
		{name: "with a Pods policy", policies: `[{type: Pods, value: 4, periodSeconds: 15}, {type: Percent, value: 100, periodSeconds: 15}]`, scales: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := writeFile(t, "hpa.yaml", lintHead+"  minReplicas: 0\n  maxReplicas: 10\n"+queueMetric+
				"  behavior:\n    scaleDown: {stabilizationWindowSeconds: 0}\n    scaleUp:\n      policies: "+tc.policies+"\n")
			resp := simulateJSON(t, run(t, "", "simulate", "-f", f, "--trace", trace, "--initial-replicas", "1", "--local", "-o", "json"))
			steps := resp.GetSteps()
			if got := steps[0].GetDesiredReplicas(); got != 0 {
				t.Fatalf("step 0 desired %d, want the scale to zero", got)
			}
			peak := int32(0)
			for _, s := range steps[4:] {
				peak = max(peak, s.GetDesiredReplicas())
			}
			if got := peak > 0; got != tc.scales {
				t.Errorf("peak desired replicas %d; want scaling up %v", peak, tc.scales)
			}
		})
	}
}
