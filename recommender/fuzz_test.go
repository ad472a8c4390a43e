package recommender

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Fuzz targets for the decision engine. Run one with, e.g.,
//
//	go test -run '^$' -fuzz FuzzDecide -fuzztime 30s ./recommender/
//
// FuzzDecide invariants, for any input built from the bytes whose spec passes ValidateSpec:
//   - Decide does not panic and DesiredReplicas >= 0;
//   - counts, limits and policy values reach the int32 edge (fuzzReader.replicas), where an
//     int32 conversion or sum that wraps instead of saturating (R-INT) breaks the next rule;
//   - the branch decides the range (R-REC, §6.1): a target at 0 that the HPA did not scale
//     to zero (or may not resume) stays at 0; current > max gives max; 0 < current < min gives
//     min; on the metric path a metric failure that blocks scaling keeps current; otherwise
//     the result is within [min, max] (the scale-from-zero floor included);
//   - deterministic: the same input twice gives identical decisions and states (cmp);
//   - the inputs are never mutated: the previous state, spec, pods and observations deep-equal
//     an independently built copy afterwards;
//   - a Disabled direction never moves in that direction, except by the out-of-range
//     corrections and the scale-from-zero floor;
//   - the returned state is consistent: seeded, and its conditions are the decision's (before
//     any RecordRescale).
//
// FuzzSimulatePolicyLimit invariants (R-POL), across a replayed timeline with one Pods policy
// per direction (up value vu / period pu, down value vd / period pd); the first step starts
// inside [min, max], so no out-of-range correction (which ignores policies) can happen:
//   - with scaleDown Disabled, the sum of up-changes in any window (t - pu, t] is <= vu;
//   - otherwise, at every decision time t that scales up, ups - downs over (t - pu, t] <= vu,
//     and at every t that scales down, downs - ups over (t - pd, t] <= vd. (A plain "ups <= vu"
//     does not hold then: replicas removed in the period may be added back, and a window that
//     ends later can drop an earlier opposite change.)

// fuzzReader turns fuzz bytes into choices; past the end it yields zeros.
type fuzzReader struct{ b []byte }

func (r *fuzzReader) byte() byte {
	if len(r.b) == 0 {
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *fuzzReader) intn(n int) int { return int(r.byte()) % n }

func (r *fuzzReader) bool() bool { return r.byte()&1 == 1 }

// milli is a metric value: mostly small, sometimes extreme.
func (r *fuzzReader) milli() int64 {
	switch r.intn(16) {
	case 0:
		return 0
	case 1:
		return math.MaxInt64 / int64(1+r.intn(4))
	case 2:
		return -int64(r.intn(1000))
	default:
		return int64(r.byte())*int64(1+r.intn(50)) + int64(r.byte())
	}
}

// replicas is a replica count or change: mostly below n, sometimes at the int32 edge (R-INT),
// where doubling it or adding to it no longer fits.
func (r *fuzzReader) replicas(n int) int32 {
	if r.intn(8) == 0 {
		return []int32{1 << 30, 1_500_000_000, math.MaxInt32 - 1, math.MaxInt32}[r.intn(4)]
	}
	return int32(r.intn(n))
}

func (r *fuzzReader) quantity() *resource.Quantity {
	choices := []string{"1", "10", "100m", "2500m", "4.4", "1k", "15", "250m", "1Mi", "3"}
	return mustQty(choices[r.intn(len(choices))])
}

func (r *fuzzReader) target(util bool) MetricTarget {
	if util && r.bool() {
		return MetricTarget{Type: TargetUtilization, AverageUtilization: p32(int32(1 + r.intn(300)))}
	}
	if r.bool() {
		return MetricTarget{Type: TargetValue, Value: r.quantity()}
	}
	return MetricTarget{Type: TargetAverageValue, AverageValue: r.quantity()}
}

func (r *fuzzReader) metricSpec() MetricSpec {
	id := MetricIdentifier{Name: fmt.Sprintf("m%d", r.intn(3))}
	res := []string{"cpu", "memory"}[r.intn(2)]
	switch r.intn(5) {
	case 0:
		t := r.target(true)
		if t.Value != nil {
			t = MetricTarget{Type: TargetAverageValue, AverageValue: t.Value}
		}
		return MetricSpec{Type: MetricResource, Resource: &ResourceMetricSource{Name: res, Target: t}}
	case 1:
		t := r.target(true)
		if t.Value != nil {
			t = MetricTarget{Type: TargetAverageValue, AverageValue: t.Value}
		}
		return MetricSpec{Type: MetricContainerResource, ContainerResource: &ContainerResourceMetricSource{
			Name: res, Container: []string{"app", "proxy"}[r.intn(2)], Target: t}}
	case 2:
		return MetricSpec{Type: MetricPods, Pods: &PodsMetricSource{Metric: id,
			Target: MetricTarget{Type: TargetAverageValue, AverageValue: r.quantity()}}}
	case 3:
		return MetricSpec{Type: MetricObject, Object: &ObjectMetricSource{
			DescribedObject: ObjectReference{Kind: "Ingress", Name: "main"}, Metric: id, Target: r.target(false)}}
	default:
		return MetricSpec{Type: MetricExternal, External: &ExternalMetricSource{Metric: id, Target: r.target(false)}}
	}
}

func (r *fuzzReader) rules() *ScalingRules {
	if r.intn(3) == 0 {
		return nil
	}
	out := &ScalingRules{}
	if r.bool() {
		out.StabilizationWindowSeconds = p32(int32(r.intn(4) * 60))
	}
	if r.bool() {
		out.SelectPolicy = pstr([]string{SelectMax, SelectMin, SelectDisabled}[r.intn(3)])
	}
	for range r.intn(3) {
		typ := []string{PolicyPods, PolicyPercent}[r.intn(2)]
		v := int32(1 + r.intn(200))
		if r.intn(8) == 0 {
			v = math.MaxInt32 // the int32 edge (R-INT)
		}
		out.Policies = append(out.Policies, ScalingPolicy{Type: typ, Value: v, PeriodSeconds: int32(1 + r.intn(300))})
	}
	if r.intn(4) == 0 {
		out.Tolerance = mustQty([]string{"0", "50m", "0.2", "2"}[r.intn(4)])
	}
	return out
}

func (r *fuzzReader) spec() *Spec {
	var ms []MetricSpec
	for range r.intn(4) {
		ms = append(ms, r.metricSpec())
	}
	s := &Spec{ScaleTargetRef: ObjectReference{Kind: "Deployment", Name: "web"}, Metrics: ms}
	if r.intn(4) != 0 {
		s.MinReplicas = p32(int32(r.intn(4)))
	}
	s.MaxReplicas = int32(1 + r.intn(30))
	if r.intn(8) == 0 {
		s.MaxReplicas = math.MaxInt32 - int32(r.intn(2)) // the int32 edge (R-INT)
	}
	if r.bool() {
		s.Behavior = &Behavior{ScaleUp: r.rules(), ScaleDown: r.rules()}
	}
	return s
}

func (r *fuzzReader) pod(i int) Pod {
	p := testPod(podName(i), int64(r.intn(4))*250)
	switch r.intn(8) {
	case 0:
		pending(&p)
	case 1:
		neverReady(&p)
	case 2:
		justStarted(&p)
	case 3:
		p.Phase = []string{PodFailed, PodSucceeded, PodUnknown}[r.intn(3)]
	case 4:
		p.Deleting = true
	case 5:
		p.HasReady = false
	}
	if r.intn(4) == 0 {
		p.InitContainers = []Container{{Name: "proxy", RestartPolicy: "Always",
			Requests: map[string]resource.Quantity{"cpu": *resource.NewMilliQuantity(int64(r.intn(3))*100, resource.DecimalSI)}}}
	}
	if r.intn(8) == 0 {
		p.Containers = append(p.Containers, Container{Name: "log"}) // no requests
	}
	return p
}

func (r *fuzzReader) observation(npods int) Observation {
	switch r.intn(10) {
	case 0:
		return Observation{Error: "unavailable"}
	case 1:
		return Observation{}
	}
	var o Observation
	for i := range npods + 1 { // one extra: a sample for a pod not in the list
		if r.intn(4) != 0 {
			o.PodSamples = append(o.PodSamples, PodSample{Pod: podName(i), Milli: r.milli(),
				Timestamp: ago(time.Duration(r.intn(120)) * time.Second), Window: time.Duration(r.intn(3)) * 30 * time.Second})
		}
	}
	if r.bool() {
		v := r.milli()
		o.Value = &v
	}
	for range r.intn(3) {
		o.Values = append(o.Values, r.milli())
	}
	return o
}

func (r *fuzzReader) state() State {
	st := State{Seeded: r.bool()}
	for range r.intn(5) {
		st.History.Recommendations = append(st.History.Recommendations, rec(int32(r.intn(40)), ago(time.Duration(r.intn(700))*time.Second)))
	}
	for range r.intn(3) {
		st.History.ScaleUpEvents = append(st.History.ScaleUpEvents, ev(r.replicas(10), ago(time.Duration(r.intn(400))*time.Second)))
	}
	for range r.intn(3) {
		st.History.ScaleDownEvents = append(st.History.ScaleDownEvents, ev(r.replicas(10), ago(time.Duration(r.intn(400))*time.Second)))
	}
	if r.intn(3) == 0 {
		st.Conditions = append(st.Conditions, Condition{Type: ConditionScaledToZero, Status: []string{StatusTrue, StatusFalse}[r.intn(2)],
			Reason: reasonScaledToZero, LastTransitionTime: ago(time.Hour)})
	}
	if r.intn(3) == 0 {
		st.Conditions = append(st.Conditions, Condition{Type: ConditionScalingActive, Status: StatusFalse, Reason: reasonScalingDisabled, LastTransitionTime: ago(time.Hour)})
	}
	return st
}

// fuzzCase builds one Decide call from data. Mode 0 starts from a table case (worked examples
// and §12a vectors) and perturbs its counts, samples and history; mode 1 builds everything.
func fuzzCase(data []byte) (Options, Input, State) {
	r := &fuzzReader{b: data}
	if r.bool() {
		seeds := append(workedExamples(), extraVectors()...)
		tc := seeds[r.intn(len(seeds))]
		opts, in, st := tc.input()
		in.CurrentReplicas = max(0, in.CurrentReplicas+int32(r.intn(7))-3)
		in.StatusReplicas = max(0, in.StatusReplicas+int32(r.intn(5))-2)
		var ms []Observation
		for _, o := range in.Metrics {
			o.PodSamples = append([]PodSample(nil), o.PodSamples...)
			for i := range o.PodSamples {
				o.PodSamples[i].Milli = o.PodSamples[i].Milli * int64(1+r.intn(4)) / int64(1+r.intn(4))
			}
			o.Values = append([]int64(nil), o.Values...)
			for i := range o.Values {
				o.Values[i] = o.Values[i] * int64(1+r.intn(4)) / int64(1+r.intn(4))
			}
			ms = append(ms, o)
		}
		in.Metrics = ms
		extra := r.state()
		st = st.Clone()
		st.History.Recommendations = append(st.History.Recommendations, extra.History.Recommendations...)
		st.History.ScaleUpEvents = append(st.History.ScaleUpEvents, extra.History.ScaleUpEvents...)
		st.History.ScaleDownEvents = append(st.History.ScaleDownEvents, extra.History.ScaleDownEvents...)
		st.Conditions = append(st.Conditions, extra.Conditions...)
		return opts, in, st
	}
	spec := r.spec()
	var ps []Pod
	for i := range r.intn(7) {
		ps = append(ps, r.pod(i))
	}
	n := len(spec.Metrics)
	if n == 0 {
		n = 1 // the defaulted cpu metric
	}
	var ms []Observation
	for range n {
		ms = append(ms, r.observation(len(ps)))
	}
	in := Input{Spec: spec, CurrentReplicas: r.replicas(40), StatusReplicas: r.replicas(40), Pods: ps, Metrics: ms}
	st := r.state()
	opts := DefaultOptions()
	if r.intn(4) == 0 {
		opts.Tolerance = []float64{0, 0.05, 0.5}[r.intn(3)]
	}
	// The release (0, and a spent input: the newest) and, sometimes, the scale-to-zero gate.
	if v := r.intn(6); v > 0 {
		opts.KubernetesVersion = KubernetesVersions()[v-1]
	}
	if r.intn(4) == 1 {
		on := r.bool()
		opts.HPAScaleToZero = &on
	}
	return opts, in, st
}

func seedFuzzDecide(f *testing.F) {
	// One seed per table case (mode 0) and a few random builds (mode 1).
	n := len(workedExamples()) + len(extraVectors())
	for i := range n {
		f.Add([]byte{1, byte(i), 3, 2, 0, 0})
	}
	for _, s := range []string{"\x00", "\x00\x07\x03\x01\x02\x04\x05\x06\x07\x08", "\x00\xff\xfe\xfd\xfc\xfb\xfa\xf9\xf8\xf7\xf6\xf5",
		"\x00\x03\x04\x04\x04\x00\x01\x02\x03\x09\x09\x01\x01\x01\x05\x06\x07\x08\x09\x0a\x0b\x0c"} {
		f.Add([]byte(s))
	}
}

func FuzzDecide(f *testing.F) {
	seedFuzzDecide(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		opts, in, st := fuzzCase(data)
		if len(ValidateSpec(in.Spec, "spec")) > 0 {
			t.Skip("invalid spec")
		}
		// Independently built copies to detect mutation.
		_, inCopy, stCopy := fuzzCase(data)

		d, next := Decide(tNow, opts, in, st)
		if diff := cmp.Diff(st, stCopy); diff != "" {
			t.Fatalf("Decide mutated the previous state (-after +before):\n%s", diff)
		}
		if diff := cmp.Diff(in, inCopy, cmpQuantities); diff != "" {
			t.Fatalf("Decide mutated its input (-after +before):\n%s", diff)
		}
		d2, next2 := Decide(tNow, opts, in, st)
		if diff := cmp.Diff(d, d2, cmpQuantities, cmpopts.EquateNaNs()); diff != "" {
			t.Fatalf("not deterministic: decisions differ:\n%s", diff)
		}
		if diff := cmp.Diff(next, next2); diff != "" {
			t.Fatalf("not deterministic: states differ:\n%s", diff)
		}
		checkDecisionInvariants(t, opts, in, st, d, next)
	})
}

// resumesFromZero says, by the release's rule as docs/ALGORITHM.md tables it (and not through
// Rules), whether a target at zero replicas has its metrics computed (R-REC-4(a)): in 1.34 and
// 1.35 when minReplicas is 0; from 1.36, with the HPAScaleToZero gate on (its default from
// 1.37), when the autoscaler scaled it to zero itself (ScaledToZero) and minReplicas is not 0
// or an Object or External metric can bring it back.
func resumesFromZero(opts Options, prev State, spec *Spec, minR int32) bool {
	v := opts.KubernetesVersion
	if v == "" {
		v = NewestKubernetesVersion
	}
	switch v {
	case "1.34", "1.35":
		return minR == 0
	}
	gate := v != "1.36"
	if opts.HPAScaleToZero != nil {
		gate = *opts.HPAScaleToZero
	}
	return gate && ScaledToZero(prev.Conditions) && (minR != 0 || hasObjectOrExternal(spec))
}

// checkDecisionInvariants reproduces upstream's branch structure (§6.1) to say where the
// desired count must lie.
func checkDecisionInvariants(t *testing.T, opts Options, in Input, prev State, d Decision, next State) {
	t.Helper()
	spec := SetDefaults(in.Spec)
	cur, got := in.CurrentReplicas, d.DesiredReplicas
	minR, maxR := *spec.MinReplicas, spec.MaxReplicas
	if got < 0 {
		t.Fatalf("DesiredReplicas = %d < 0", got)
	}
	if !next.Seeded {
		t.Fatalf("returned state is not seeded")
	}
	if diff := cmp.Diff(next.Conditions, d.Conditions); diff != "" {
		t.Fatalf("state conditions differ from the decision's:\n%s", diff)
	}
	if d.CurrentReplicas != cur {
		t.Fatalf("Decision.CurrentReplicas = %d, want %d", d.CurrentReplicas, cur)
	}
	checkSentence(t, d.Explanation.Message)
	resumable := resumesFromZero(opts, prev, spec, minR)
	active, _ := findCond(d.Conditions, ConditionScalingActive)
	metricPath := false
	switch {
	case cur == 0 && !resumable:
		if got != 0 {
			t.Fatalf("current 0, not resumable: desired %d, want 0 (%s)", got, d.Explanation.Message)
		}
		if active.Reason != reasonScalingDisabled || active.Status != StatusFalse {
			t.Fatalf("current 0, not resumable: ScalingActive = %+v", active)
		}
		return
	case cur == 0:
		metricPath = true
	case cur > maxR:
		if got != maxR {
			t.Fatalf("current %d > max %d: desired %d", cur, maxR, got)
		}
		return
	case cur < minR:
		if got != minR {
			t.Fatalf("current %d < min %d: desired %d", cur, minR, got)
		}
		return
	default:
		metricPath = true
	}
	if !metricPath {
		return
	}
	if active.Status == StatusFalse {
		// R-MULTI step 4: the metrics block any change.
		if got != cur {
			t.Fatalf("metrics failed (%s): desired %d, want current %d", active.Reason, got, cur)
		}
		return
	}
	if got < minR || got > maxR {
		t.Fatalf("desired %d outside [%d, %d] (current %d): %s", got, minR, maxR, cur, d.Explanation.Message)
	}
	if b := spec.Behavior; b != nil && cur != 0 {
		if *b.ScaleUp.SelectPolicy == SelectDisabled && got > cur {
			t.Fatalf("scaleUp Disabled but %d -> %d", cur, got)
		}
		if *b.ScaleDown.SelectPolicy == SelectDisabled && got < cur {
			t.Fatalf("scaleDown Disabled but %d -> %d", cur, got)
		}
	}
}

func FuzzSimulatePolicyLimit(f *testing.F) {
	f.Add(uint8(4), uint8(15), uint8(100), uint8(15), uint8(10), []byte{10, 50, 5, 80, 1, 3, 200, 7, 9})
	f.Add(uint8(1), uint8(60), uint8(2), uint8(30), uint8(3), []byte{40, 1, 40, 1, 40, 1})
	f.Add(uint8(5), uint8(120), uint8(5), uint8(120), uint8(100), []byte{2, 2, 255, 255, 2, 2, 255, 255}) // E14-like
	f.Fuzz(func(t *testing.T, vu, pu, vd, pd, start uint8, demands []byte) {
		upV, upP := int32(vu%20)+1, int32(pu%180)+1
		downV, downP := int32(vd%20)+1, int32(pd%180)+1
		downRules := rules(int32(start%3)*30, "", podsPolicy(downV, downP))
		downDisabled := vd >= 128
		if downDisabled {
			downRules.SelectPolicy = pstr(SelectDisabled)
		}
		spec := withBehavior(testSpec(1, 60, wantMetric()), rules(0, "", podsPolicy(upV, upP)), downRules)
		if errs := ValidateSpec(spec, "spec"); len(errs) > 0 {
			t.Fatalf("invalid spec: %v", errs)
		}
		if len(demands) > 64 {
			demands = demands[:64]
		}
		var steps []Step
		at := tNow
		for i := 0; i+1 < len(demands); i += 2 {
			at = at.Add(time.Duration(1+int(demands[i])%60) * time.Second)
			steps = append(steps, Step{Time: at, Metrics: obs(wantObs(int32(demands[i+1]) % 80))})
		}
		initial := int32(start)%60 + 1
		ds, _ := Simulate(DefaultOptions(), spec, initial, nil, steps)
		type change struct {
			at       time.Time
			up, down int32
		}
		var changes []change
		for _, d := range ds {
			delta := d.DesiredReplicas - d.CurrentReplicas
			changes = append(changes, change{d.Time, max(delta, 0), max(-delta, 0)})
		}
		for i, c := range changes {
			var ups, downs [2]int32 // [0]: over the up period, [1]: over the down period
			for _, o := range changes[:i+1] {
				if o.at.After(c.at.Add(-time.Duration(upP) * time.Second)) {
					ups[0] += o.up
					downs[0] += o.down
				}
				if o.at.After(c.at.Add(-time.Duration(downP) * time.Second)) {
					ups[1] += o.up
					downs[1] += o.down
				}
			}
			if downDisabled {
				// No scale-down ever happens: the plain sum of up-changes in any window (t-p, t]
				// is bounded (the worst window ends at an up-change, so checking each step's
				// window covers every window).
				if downs[0] != 0 {
					t.Fatalf("step %d: scaleDown is Disabled but %d replicas were removed", i, downs[0])
				}
				if ups[0] > upV {
					t.Fatalf("step %d: %d replicas added in (t-%ds, t], policy allows %d", i, ups[0], upP, upV)
				}
				continue
			}
			// With both directions moving, upstream bounds the net change over the period ending
			// at each change, in the direction of that change (the period start formula). A
			// later window may drop an earlier opposite change, so only change times are checked.
			if c.up > 0 && ups[0]-downs[0] > upV {
				t.Fatalf("step %d: net scale-up %d in (t-%ds, t] exceeds Pods %d (ups %d, downs %d)", i, ups[0]-downs[0], upP, upV, ups[0], downs[0])
			}
			if c.down > 0 && downs[1]-ups[1] > downV {
				t.Fatalf("step %d: net scale-down %d in (t-%ds, t] exceeds Pods %d", i, downs[1]-ups[1], downP, downV)
			}
		}
	})
}
