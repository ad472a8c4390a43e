package recommender

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Helpers for the engine's table tests. Every case reads as: a spec built from metric
// helpers, a pod list, one observation per metric, a prior state, and what must come out.

// tNow is the reconcile time of every case unless it says otherwise.
var tNow = time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)

// ago is tNow minus d.
func ago(d time.Duration) time.Time { return tNow.Add(-d) }

func sec(n int) time.Duration { return time.Duration(n) * time.Second }

func p32(v int32) *int32 { return &v }

func pstr(s string) *string { return &s }

// mustQty parses a Kubernetes quantity ("500m", "2", "1Gi").
func mustQty(s string) *resource.Quantity {
	q := resource.MustParse(s)
	return &q
}

// cmpQuantities compares quantities by value, since their cached strings may differ.
var cmpQuantities = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })

// ---- pods ----

// podOpt adjusts a pod built by testPod.
type podOpt func(*Pod)

// testPod is a Running pod named name with one container "app" requesting cpu (milli) and
// memory 1Gi, started an hour ago and Ready for the last 50 minutes: CPU readiness rules treat
// it as ready.
func testPod(name string, cpuMilli int64, opts ...podOpt) Pod {
	p := Pod{
		Name:                name,
		Phase:               PodRunning,
		HasReady:            true,
		Ready:               true,
		ReadyTransitionTime: ago(50 * time.Minute),
		StartTime:           ago(time.Hour),
		Containers: []Container{{
			Name: "app",
			Requests: map[string]resource.Quantity{
				"cpu":    *resource.NewMilliQuantity(cpuMilli, resource.DecimalSI),
				"memory": resource.MustParse("1Gi"),
			},
		}},
	}
	for _, o := range opts {
		o(&p)
	}
	return p
}

// neverReady: Ready=False ever since start, so CPU treats it as unready (R-GRP rule 4).
func neverReady(p *Pod) {
	p.Ready = false
	p.ReadyTransitionTime = p.StartTime
}

// pending puts the pod in phase Pending (R-GRP rule 2).
func pending(p *Pod) { p.Phase = PodPending; p.Ready = false }

// deleting marks the pod terminating (R-GRP rule 1).
func deleting(p *Pod) { p.Deleting = true }

func phase(ph string) podOpt { return func(p *Pod) { p.Phase = ph } }

// justStarted: started 10 s ago and Ready=False since then (inside the CPU init period).
func justStarted(p *Pod) {
	p.StartTime = ago(10 * time.Second)
	p.Ready = false
	p.ReadyTransitionTime = ago(10 * time.Second)
}

// pods builds pods p0..pN-1 with the given cpu requests in millicores.
func pods(cpuRequests ...int64) []Pod {
	out := make([]Pod, len(cpuRequests))
	for i, r := range cpuRequests {
		out[i] = testPod(podName(i), r)
	}
	return out
}

// uniformPods is n pods requesting cpuMilli each.
func uniformPods(n int, cpuMilli int64) []Pod {
	out := make([]Pod, n)
	for i := range out {
		out[i] = testPod(podName(i), cpuMilli)
	}
	return out
}

func podName(i int) string { return fmt.Sprintf("p%d", i) }

// with applies opts to the pod at index i and returns the list.
func with(ps []Pod, i int, opts ...podOpt) []Pod {
	for _, o := range opts {
		o(&ps[i])
	}
	return ps
}

// ---- observations ----

// samples is an observation with one sample per value for pods p0, p1, ... (taken at tNow,
// default window). A negative value means "no sample for this pod".
func samples(milli ...int64) Observation {
	var o Observation
	for i, v := range milli {
		if v < 0 {
			continue
		}
		o.PodSamples = append(o.PodSamples, PodSample{Pod: podName(i), Milli: v, Timestamp: tNow})
	}
	return o
}

// value is an Object observation of v milli-units.
func value(milli int64) Observation { return Observation{Value: &milli} }

// series is an External observation summing the given milli-unit series.
func series(milli ...int64) Observation { return Observation{Values: milli} }

func failed(msg string) Observation { return Observation{Error: msg} }

// ---- metric specs ----

func cpuUtil(pct int32) MetricSpec { return resourceUtil("cpu", pct) }

func resourceUtil(res string, pct int32) MetricSpec {
	return MetricSpec{Type: MetricResource, Resource: &ResourceMetricSource{Name: res,
		Target: MetricTarget{Type: TargetUtilization, AverageUtilization: &pct}}}
}

func resourceAvg(res, avg string) MetricSpec {
	return MetricSpec{Type: MetricResource, Resource: &ResourceMetricSource{Name: res,
		Target: MetricTarget{Type: TargetAverageValue, AverageValue: mustQty(avg)}}}
}

func containerUtil(res, container string, pct int32) MetricSpec {
	return MetricSpec{Type: MetricContainerResource, ContainerResource: &ContainerResourceMetricSource{
		Name: res, Container: container, Target: MetricTarget{Type: TargetUtilization, AverageUtilization: &pct}}}
}

func podsAvg(name, avg string) MetricSpec {
	return MetricSpec{Type: MetricPods, Pods: &PodsMetricSource{Metric: MetricIdentifier{Name: name},
		Target: MetricTarget{Type: TargetAverageValue, AverageValue: mustQty(avg)}}}
}

func objectValue(name, v string) MetricSpec {
	return MetricSpec{Type: MetricObject, Object: &ObjectMetricSource{
		DescribedObject: ObjectReference{APIVersion: "networking.k8s.io/v1", Kind: "Ingress", Name: "main"},
		Metric:          MetricIdentifier{Name: name},
		Target:          MetricTarget{Type: TargetValue, Value: mustQty(v)}}}
}

func objectAvg(name, v string) MetricSpec {
	return MetricSpec{Type: MetricObject, Object: &ObjectMetricSource{
		DescribedObject: ObjectReference{APIVersion: "networking.k8s.io/v1", Kind: "Ingress", Name: "main"},
		Metric:          MetricIdentifier{Name: name},
		Target:          MetricTarget{Type: TargetAverageValue, AverageValue: mustQty(v)}}}
}

func externalValue(name, v string) MetricSpec {
	return MetricSpec{Type: MetricExternal, External: &ExternalMetricSource{Metric: MetricIdentifier{Name: name},
		Target: MetricTarget{Type: TargetValue, Value: mustQty(v)}}}
}

func externalAvg(name, v string) MetricSpec {
	return MetricSpec{Type: MetricExternal, External: &ExternalMetricSource{Metric: MetricIdentifier{Name: name},
		Target: MetricTarget{Type: TargetAverageValue, AverageValue: mustQty(v)}}}
}

// wantMetric is an External AverageValue metric with target 1 whose observation wantObs(n)
// proposes exactly n replicas (R-EXTAVG: ceil(n/1) whenever n differs from statusReplicas).
// Behavior and stabilization tests use it to dial in a proposal.
func wantMetric() MetricSpec { return externalAvg("queue", "1") }

func wantObs(n int32) Observation { return series(int64(n) * 1000) }

// ---- specs ----

// testSpec is a spec with the given bounds and metrics; min < 0 leaves minReplicas unset.
func testSpec(min, max int32, metrics ...MetricSpec) *Spec {
	s := &Spec{
		ScaleTargetRef: ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
		MaxReplicas:    max,
		Metrics:        metrics,
	}
	if min >= 0 {
		s.MinReplicas = p32(min)
	}
	return s
}

// withBehavior returns s with behavior b (nil directions get the API defaults).
func withBehavior(s *Spec, up, down *ScalingRules) *Spec {
	s.Behavior = &Behavior{ScaleUp: up, ScaleDown: down}
	return s
}

// rules is a scaling-rules literal: window < 0 leaves the stabilization window unset; sel ""
// leaves selectPolicy unset.
func rules(window int32, sel string, policies ...ScalingPolicy) *ScalingRules {
	r := &ScalingRules{Policies: policies}
	if window >= 0 {
		r.StabilizationWindowSeconds = p32(window)
	}
	if sel != "" {
		r.SelectPolicy = pstr(sel)
	}
	return r
}

func podsPolicy(v, period int32) ScalingPolicy {
	return ScalingPolicy{Type: PolicyPods, Value: v, PeriodSeconds: period}
}

func percentPolicy(v, period int32) ScalingPolicy {
	return ScalingPolicy{Type: PolicyPercent, Value: v, PeriodSeconds: period}
}

// tolerance is a scaling-rules value with only a tolerance set.
func tolerance(q string) *ScalingRules { return &ScalingRules{Tolerance: mustQty(q)} }

// ---- state ----

// seededEmpty is a state whose history exists but is empty, so first-sight seeding is skipped
// and the decision reflects the proposal (E17's setup).
func seededEmpty() State { return State{Seeded: true} }

// withRecs is a seeded state holding the given recommendations.
func withRecs(recs ...Recommendation) State {
	return State{Seeded: true, History: History{Recommendations: recs}}
}

func rec(replicas int32, at time.Time) Recommendation {
	return Recommendation{Replicas: replicas, Time: at}
}

func ev(change int32, at time.Time) ScaleEvent { return ScaleEvent{Change: change, Time: at} }

// scaledToZeroState is a seeded state whose ScaledToZero condition is True.
func scaledToZeroState() State {
	return State{Seeded: true, Conditions: []Condition{{Type: ConditionScaledToZero, Status: StatusTrue,
		Reason: reasonScaledToZero, LastTransitionTime: ago(time.Hour)}}}
}

// ---- running and checking ----

// decideCase is one Decide call and its expected outcome.
type decideCase struct {
	name string
	// opts defaults to DefaultOptions().
	opts    *Options
	spec    *Spec
	current int32
	// status defaults to current.
	status  *int32
	pods    []Pod
	metrics []Observation
	// state defaults to seededEmpty() (no first-sight seed); set firstSight for a zero State.
	state      *State
	firstSight bool
	// want is DesiredReplicas; proposal, when set, is Explanation.Proposal (the max over
	// metrics, before normalization).
	want     int32
	proposal *int32
	// conds are checked by type, status and reason (only the types listed).
	conds []condWant
	// check runs extra assertions.
	check func(t *testing.T, d Decision, st State)
	// invalidSpec skips the ValidateSpec precondition, for the engine's defensive paths.
	invalidSpec bool
}

type condWant struct{ Type, Status, Reason string }

func able(reason string) condWant { return condWant{ConditionAbleToScale, StatusTrue, reason} }
func active(reason string) condWant {
	if reason == reasonValidMetricFound {
		return condWant{ConditionScalingActive, StatusTrue, reason}
	}
	return condWant{ConditionScalingActive, StatusFalse, reason}
}
func limited(reason string) condWant {
	if reason == reasonDesiredWithinRange {
		return condWant{ConditionScalingLimited, StatusFalse, reason}
	}
	return condWant{ConditionScalingLimited, StatusTrue, reason}
}

func (c *decideCase) input() (Options, Input, State) {
	opts := DefaultOptions()
	if c.opts != nil {
		opts = *c.opts
	}
	status := c.current
	if c.status != nil {
		status = *c.status
	}
	st := seededEmpty()
	if c.state != nil {
		st = *c.state
	}
	if c.firstSight {
		st = State{}
	}
	return opts, Input{Spec: c.spec, CurrentReplicas: c.current, StatusReplicas: status, Pods: c.pods, Metrics: c.metrics}, st
}

// runDecideCases runs each case as a subtest.
func runDecideCases(t *testing.T, cases []decideCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if errs := ValidateSpec(tc.spec, "spec"); len(errs) > 0 && !tc.invalidSpec {
				t.Fatalf("test spec is invalid: %v", errs)
			}
			opts, in, st := tc.input()
			d, next := Decide(tNow, opts, in, st)
			if got, want := d.DesiredReplicas, tc.want; got != want {
				t.Errorf("DesiredReplicas = %d, want %d (explanation: %s)", got, want, d.Explanation.Message)
			}
			if tc.proposal != nil {
				if got, want := d.Explanation.Proposal, *tc.proposal; got != want {
					t.Errorf("Explanation.Proposal = %d, want %d (explanation: %s)", got, want, d.Explanation.Message)
				}
			}
			if len(tc.conds) > 0 {
				if diff := cmp.Diff(condsOf(d.Conditions, tc.conds), tc.conds); diff != "" {
					t.Errorf("conditions mismatch (-got +want):\n%s", diff)
				}
			}
			if tc.check != nil {
				tc.check(t, d, next)
			}
		})
	}
}

// condsOf picks, in want's order, the conditions of the types want lists.
func condsOf(conds []Condition, want []condWant) []condWant {
	var out []condWant
	for _, w := range want {
		c, ok := findCond(conds, w.Type)
		if !ok {
			out = append(out, condWant{Type: w.Type, Status: "<absent>"})
			continue
		}
		out = append(out, condWant{c.Type, c.Status, c.Reason})
	}
	return out
}

func findCond(conds []Condition, typ string) (Condition, bool) {
	for _, c := range conds {
		if c.Type == typ {
			return c, true
		}
	}
	return Condition{}, false
}

// decide is Decide at tNow with the default options.
func decide(spec *Spec, current int32, ps []Pod, obs []Observation, st State) (Decision, State) {
	return Decide(tNow, DefaultOptions(), Input{Spec: spec, CurrentReplicas: current, StatusReplicas: current, Pods: ps, Metrics: obs}, st)
}

func obs(o ...Observation) []Observation { return o }
