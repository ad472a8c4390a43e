package recommender

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestWorkedExamples is HPA-ALGORITHM.md §12: every worked example E1-E24, by name. Unless a
// case says otherwise the state is seeded with an empty history (as E17 does), so the
// decision shows the proposal rather than the first-sight seed, and pods started long ago.
func TestWorkedExamples(t *testing.T) { runDecideCases(t, workedExamples()) }

func workedExamples() []decideCase {
	e18Metric := func() []Observation { return obs(wantObs(10)) }
	return []decideCase{
		{
			name: "E1 R-RES-2 R-CALC-3 cpu 30% target, 300/500/700m of 1000m -> util 50, scale 3 -> 5",
			spec: testSpec(1, 10, cpuUtil(30)), current: 3, pods: pods(1000, 1000, 1000),
			metrics: obs(samples(300, 500, 700)), want: 5, proposal: p32(5),
			conds: []condWant{able(reasonReadyForNewScale), active(reasonValidMetricFound), limited(reasonDesiredWithinRange)},
			check: func(t *testing.T, d Decision, _ State) {
				wantResourceStatus(t, d, 0, "cpu", 50, "500m")
			},
		},
		{
			name: "E2 R-CALC-2 R-CALC-4 R-CALC-6 pod 0 unready: fill 0 on scale-up, status keeps first-pass 60%",
			spec: testSpec(1, 10, cpuUtil(30)), current: 3, pods: with(pods(1000, 1000, 1000), 0, neverReady),
			metrics: obs(samples(300, 500, 700)), want: 4, proposal: p32(4),
			check: func(t *testing.T, d Decision, _ State) {
				wantResourceStatus(t, d, 0, "cpu", 60, "600m")
				if got, want := d.Explanation.Metrics[0].UnreadyPods, int32(1); got != want {
					t.Errorf("UnreadyPods = %d, want %d", got, want)
				}
			},
		},
		{
			name: "E3 R-CALC-3 R-CALC-4 unready pods excluded on scale-down, fast path x readyPodCount",
			spec: testSpec(1, 10, cpuUtil(50)), current: 5,
			pods:    with(with(pods(1000, 1000, 1000, 1000, 1000), 3, neverReady), 4, neverReady),
			metrics: obs(samples(100, 300, 500, 250, 250)), want: 2, proposal: p32(2),
		},
		{
			name: "E4 R-RES-2 R-RES-4 truncated percent 24, missing pods filled at 100% -> 3, status 24%",
			spec: testSpec(1, 10, cpuUtil(100)), current: 4, pods: pods(1000, 1000, 1000, 1000),
			metrics: obs(samples(400, 95)), want: 3, proposal: p32(3),
			check: func(t *testing.T, d Decision, _ State) {
				wantResourceStatus(t, d, 0, "cpu", 24, "247m")
				if got, want := d.Explanation.Metrics[0].MissingPods, int32(2); got != want {
					t.Errorf("MissingPods = %d, want %d", got, want)
				}
			},
		},
		{
			name: "E5 R-CALC-5 rolling surge: re-check proposes 3 > current 2 on a scale-down -> keep 2",
			spec: testSpec(1, 10, cpuUtil(50)), current: 2, pods: pods(1000, 1000, 1000),
			metrics: obs(samples(100, 100)), want: 2, proposal: p32(2),
		},
		{
			name: "E6 R-RES-4 target 300%: missing pod filled at request x 300/100",
			spec: testSpec(1, 10, cpuUtil(300)), current: 4, pods: with(pods(1000, 1000, 2000, 2000), 0, neverReady),
			metrics: obs(samples(200, 100, 100)), want: 2, proposal: p32(2),
			check: func(t *testing.T, d Decision, _ State) {
				if got := *d.CurrentMetrics[0].Resource.Current.AverageUtilization; got != 6 {
					t.Errorf("status utilization = %d, want 6", got)
				}
			},
		},
		{
			name: "E7 R-TOL-3 scaleDown tolerance 0.36: util 65% is within -> 3",
			spec: withBehavior(testSpec(1, 10, cpuUtil(100)), nil, tolerance("0.36")), current: 3,
			pods: pods(900, 1000, 1100), metrics: obs(samples(660, 640, 650)), want: 3, proposal: p32(3),
		},
		{
			name: "E7 R-TOL-3 scaleDown tolerance 0.34: util 65% is outside -> ceil(1.95) = 2",
			spec: withBehavior(testSpec(1, 10, cpuUtil(100)), nil, tolerance("0.34")), current: 3,
			pods: pods(900, 1000, 1100), metrics: obs(samples(660, 640, 650)), want: 2, proposal: p32(2),
		},
		{
			name: "E8 R-GRP-2 R-PODS Pods metric ignores CPU readiness: avg 30 of 15 -> 6",
			spec: testSpec(1, 10, podsAvg("qps", "15")), current: 3, pods: with(pods(1000, 1000, 1000), 2, justStarted),
			metrics: obs(samples(50_000, 10_000, 30_000)), want: 6, proposal: p32(6),
			check: func(t *testing.T, d Decision, _ State) {
				if got, want := d.CurrentMetrics[0].Pods.Current.AverageValue.MilliValue(), int64(30_000); got != want {
					t.Errorf("status averageValue = %dm, want %dm", got, want)
				}
			},
		},
		{
			name: "E9 R-OBJ-2 R-EXT External Value 8.6 vs 4.4 with 1 of 3 pods Ready scales DOWN to 2",
			spec: testSpec(1, 10, externalValue("qps", "4.4")), current: 3,
			pods:    with(with(pods(1000, 1000, 1000), 1, neverReady), 2, pending),
			metrics: obs(series(8600)), want: 2, proposal: p32(2),
			check: func(t *testing.T, d Decision, _ State) {
				if got, want := d.CurrentMetrics[0].External.Current.Value.MilliValue(), int64(8600); got != want {
					t.Errorf("status value = %dm, want %dm", got, want)
				}
			},
		},
		{
			name: "E10 R-EXTAVG External AverageValue 2.15/pod, sum 8.6, statusReplicas 3 -> 4, status 2867m",
			spec: testSpec(1, 10, externalAvg("qps", "2.15")), current: 3,
			metrics: obs(series(5000, 3600)), want: 4, proposal: p32(4),
			check: func(t *testing.T, d Decision, _ State) {
				if got, want := d.CurrentMetrics[0].External.Current.AverageValue.MilliValue(), int64(2867); got != want {
					t.Errorf("status averageValue = %dm, want %dm", got, want)
				}
			},
		},
		{
			name: "E11 R-OBJAVG R-TOL-3 Object AverageValue 5/pod, value 20.208, statusReplicas 4, tolUp 0.01 -> 5",
			spec: withBehavior(testSpec(1, 10, objectAvg("qps", "5")), tolerance("0.01"), nil), current: 4,
			metrics: obs(value(20_208)), want: 5, proposal: p32(5),
			check: func(t *testing.T, d Decision, _ State) {
				if got, want := d.CurrentMetrics[0].Object.Current.AverageValue.MilliValue(), int64(5052); got != want {
					t.Errorf("status averageValue = %dm, want %dm", got, want)
				}
			},
		},
		{
			name:    "E12 R-POL scaleUp Percent 300/300s, +4 and -2 in the period: start 4 -> limit 16",
			spec:    withBehavior(testSpec(1, 100, wantMetric()), rules(-1, "", percentPolicy(300, 300)), nil),
			current: 6, metrics: obs(wantObs(24)),
			state: &State{Seeded: true, History: History{
				ScaleUpEvents:   []ScaleEvent{ev(4, ago(sec(100)))},
				ScaleDownEvents: []ScaleEvent{ev(2, ago(sec(50)))},
			}},
			want: 16, proposal: p32(24),
			conds: []condWant{limited(reasonScaleUpLimit)},
		},
		{
			name:    "E13 R-POL scaleDown Percent 50/120s with 12 removed: start 112 -> trunc(56)",
			spec:    withBehavior(testSpec(1, 200, wantMetric()), nil, rules(0, "", percentPolicy(50, 120))),
			current: 100, metrics: obs(wantObs(0)),
			state: &State{Seeded: true, History: History{ScaleDownEvents: []ScaleEvent{ev(12, ago(sec(60)))}}},
			want:  56, proposal: p32(0),
			conds: []condWant{limited(reasonScaleDownLimit)},
		},
		{
			name:    "E14 R-BEH-2 scaleDown Pods 5/120s with 15 removed: limit 110 > current -> frozen at 100",
			spec:    withBehavior(testSpec(1, 200, wantMetric()), nil, rules(0, "", podsPolicy(5, 120))),
			current: 100, metrics: obs(wantObs(2)),
			state: &State{Seeded: true, History: History{ScaleDownEvents: []ScaleEvent{ev(15, ago(sec(60)))}}},
			want:  100, proposal: p32(2),
			conds: []condWant{limited(reasonScaleDownLimit)},
		},
		{
			name:    "E15 R-BEH-1 up window 300s over stored 4 and 5: clamp(1, 4, 7) = 4, ScaleUpStabilized",
			spec:    withBehavior(testSpec(1, 100, wantMetric()), rules(300, ""), rules(0, "")),
			current: 1, metrics: obs(wantObs(7)),
			state: ptrState(withRecs(rec(4, ago(2*time.Minute)), rec(5, ago(time.Minute)))),
			want:  4, proposal: p32(7),
			conds: []condWant{able(reasonScaleUpStabilized), limited(reasonDesiredWithinRange)},
		},
		{
			name:    "E16 R-BEH-1 both windows 300s, stored 3: clamp(2, 1, 3) = 2, no move",
			spec:    withBehavior(testSpec(1, 100, wantMetric()), rules(300, ""), rules(300, "")),
			current: 2, metrics: obs(wantObs(1)),
			state: ptrState(withRecs(rec(3, ago(3*time.Minute)))),
			want:  2, proposal: p32(1),
			conds: []condWant{able(reasonScaleDownStabilized)},
		},
		{
			name: "E17 R-LEG util 3% of 90% proposes 1 below min 2 -> 2 TooFewReplicas",
			spec: testSpec(2, 10, cpuUtil(90)), current: 3, pods: pods(900, 1000, 1100),
			metrics: obs(samples(10, 95, 10)), want: 2, proposal: p32(1),
			conds: []condWant{able(reasonReadyForNewScale), limited(reasonTooFewReplicas)},
		},
		{
			name: "E18 R-CAP legacy cap from 1 is max(2x1, 4) = 4",
			spec: testSpec(1, 100, wantMetric()), current: 1, metrics: e18Metric(),
			want: 4, proposal: p32(10), conds: []condWant{limited(reasonScaleUpLimit)},
		},
		{
			name: "E18 R-CAP default behavior from 1 is max(1+4, 2x1) = 5",
			spec: withBehavior(testSpec(1, 100, wantMetric()), nil, nil), current: 1, metrics: e18Metric(),
			want: 5, proposal: p32(10), conds: []condWant{limited(reasonScaleUpLimit)},
		},
		{
			name: "E19 float ceil: 25 pods at 280m of 1000m, target 50% -> 0.56 x 25 = 14.000000000000002 -> 15",
			spec: testSpec(1, 100, cpuUtil(50)), current: 25, pods: uniformPods(25, 1000),
			metrics: obs(samples(repeat(280, 25)...)), want: 15, proposal: p32(15),
		},
		{
			name: "E20 R-OBJ-2 Object Value with no Ready pod proposes 0 -> clamped to min 1",
			spec: testSpec(1, 10, objectValue("qps", "10")), current: 4,
			pods:    with(with(with(with(pods(1000, 1000, 1000, 1000), 0, pending), 1, neverReady), 2, neverReady), 3, neverReady),
			metrics: obs(value(50_000)), want: 1, proposal: p32(0),
			conds: []condWant{limited(reasonTooFewReplicas)},
		},
		{
			name: "E20 R-OBJ-2 Object Value with no Ready pod and min 0 -> 0",
			spec: testSpec(0, 10, objectValue("qps", "10")), current: 4,
			pods:    with(with(pods(1000, 1000), 0, pending), 1, neverReady),
			metrics: obs(value(50_000)), want: 0, proposal: p32(0),
			conds: []condWant{limited(reasonDesiredWithinRange)},
		},
		{
			name:    "E21 R-POL Percent float: scaleDown 80% of 10 = 1.9999999999999996 -> 1 (exact maths: 2)",
			spec:    withBehavior(testSpec(0, 100, wantMetric()), nil, rules(0, "", percentPolicy(80, 60))),
			current: 10, metrics: obs(wantObs(0)), want: 1, proposal: p32(0),
			conds: []condWant{limited(reasonScaleDownLimit)},
		},
		{
			name:    "E21 R-POL Percent float: scaleUp 12% of 25 = 28.000000000000004 -> 29 (exact maths: 28)",
			spec:    withBehavior(testSpec(1, 100, wantMetric()), rules(0, "", percentPolicy(12, 60)), nil),
			current: 25, metrics: obs(wantObs(100)), want: 29, proposal: p32(100),
			conds: []condWant{limited(reasonScaleUpLimit)},
		},
		{
			name: "E23 R-TOL-5 R-OBJ-3 scale from zero, legacy: ceil(9.5) = 10 capped at max(0, 4) = 4",
			spec: testSpec(0, 100, externalValue("queue", "10")), current: 0, metrics: obs(series(95_000)),
			state: ptrState(scaledToZeroState()), want: 4, proposal: p32(10),
			conds: []condWant{active(reasonValidMetricFound), limited(reasonScaleUpLimit)},
		},
		{
			name: "E23 R-CAP scale from zero, default behavior: max(0+4, 0) = 4",
			spec: withBehavior(testSpec(0, 100, externalValue("queue", "10")), nil, nil), current: 0,
			metrics: obs(series(95_000)), state: ptrState(scaledToZeroState()), want: 4, proposal: p32(10),
		},
		{
			name:    "E23 R-POL Percent-only scaleUp can never leave 0: ceil(0 x k) = 0 (stuck)",
			spec:    withBehavior(testSpec(0, 100, externalValue("queue", "10")), rules(-1, "", percentPolicy(100, 15)), nil),
			current: 0, metrics: obs(series(95_000)), state: ptrState(scaledToZeroState()), want: 0, proposal: p32(10),
		},
		{
			name: "E24 R-HIST legacy first sight seeds {6, now}: desired 3 held at 6, ScaleDownStabilized",
			spec: testSpec(2, 10, wantMetric()), current: 6, metrics: obs(wantObs(3)), firstSight: true,
			want: 6, proposal: p32(3),
			conds: []condWant{able(reasonScaleDownStabilized), limited(reasonDesiredWithinRange)},
		},
	}
}

// TestE15RescaleShowsSucceeded is E15's second half: a successful write replaces
// ScaleUpStabilized with SucceededRescale.
func TestE15RescaleShowsSucceeded(t *testing.T) {
	spec := withBehavior(testSpec(1, 100, wantMetric()), rules(300, ""), rules(0, ""))
	d, st := decide(spec, 1, nil, obs(wantObs(7)), withRecs(rec(4, ago(2*time.Minute)), rec(5, ago(time.Minute))))
	if d.DesiredReplicas != 4 {
		t.Fatalf("DesiredReplicas = %d, want 4", d.DesiredReplicas)
	}
	after := RecordRescale(tNow, spec, st, &d, true, "")
	if diff := cmp.Diff(condsOf(after.Conditions, []condWant{able(reasonSucceededRescale)}), []condWant{able(reasonSucceededRescale)}); diff != "" {
		t.Errorf("conditions after rescale (-got +want):\n%s", diff)
	}
}

// TestE22WebsiteExample replays §12's E22: 80 -> 72, held for the policy period, -> 64.
func TestE22WebsiteExample(t *testing.T) {
	spec := withBehavior(testSpec(1, 100, wantMetric()), nil,
		rules(0, SelectMax, podsPolicy(4, 60), percentPolicy(10, 60)))
	var steps []Step
	for _, s := range []int{0, 15, 30, 45, 59, 60} {
		steps = append(steps, Step{Time: tNow.Add(sec(s)), Metrics: obs(wantObs(10))})
	}
	ds, _ := Simulate(DefaultOptions(), spec, 80, ptrState(State{}), steps)
	var got []int32
	for _, d := range ds {
		got = append(got, d.DesiredReplicas)
	}
	want := []int32{72, 72, 72, 72, 72, 64}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("E22 desired per step (-got +want):\n%s", diff)
	}
}

// TestExtraVectors is §12a: the extra upstream vectors.
func TestExtraVectors(t *testing.T) { runDecideCases(t, extraVectors()) }

func extraVectors() []decideCase {
	tol := func(up, down string) *Spec {
		return withBehavior(testSpec(1, 10, cpuUtil(100)), tolerance(up), tolerance(down))
	}
	rate := func(up, down *ScalingRules) *Spec {
		return withBehavior(testSpec(1, 1000, wantMetric()), up, down)
	}
	added15 := ptrState(State{Seeded: true, History: History{ScaleUpEvents: []ScaleEvent{ev(15, ago(sec(60)))}}})
	return []decideCase{
		{
			name: "12a R-TOL-1 R-TOL-2 util 102 within the default 0.1 -> 3",
			spec: testSpec(1, 10, cpuUtil(100)), current: 3, pods: pods(900, 1000, 1100),
			metrics: obs(samples(1010, 1030, 1020)), want: 3, proposal: p32(3),
		},
		{
			name: "12a R-TOL-3 tolerance 0/0 is honoured: util 101 -> ceil(3.03) = 4",
			spec: tol("0", "0"), current: 3, pods: pods(900, 1000, 1100),
			metrics: obs(samples(909, 1010, 1111)), want: 4, proposal: p32(4),
		},
		{
			name: "12a R-TOL-3 tolUp 2.0: util 190 within -> 3",
			spec: withBehavior(testSpec(1, 10, cpuUtil(100)), tolerance("2"), nil), current: 3, pods: pods(900, 1000, 1100),
			metrics: obs(samples(1890, 1910, 1900)), want: 3, proposal: p32(3),
		},
		{
			name: "12a R-TOL-3 tolUp 0.08: util 109 outside -> 4",
			spec: withBehavior(testSpec(1, 10, cpuUtil(100)), tolerance("80m"), nil), current: 3, pods: pods(900, 1000, 1100),
			metrics: obs(samples(1100, 1080, 1090)), want: 4, proposal: p32(4),
		},
		{
			name: "12a R-CALC-3 missing metric, r == 1.0: nothing filled, within -> 2",
			spec: testSpec(1, 10, cpuUtil(100)), current: 2, pods: pods(1000, 1000),
			metrics: obs(samples(1000)), want: 2, proposal: p32(2),
		},
		{
			name: "12a R-CALC-4 R-CALC-5 missing metric, 1900m: missing := 0, 95% within -> 2",
			spec: testSpec(1, 10, cpuUtil(100)), current: 2, pods: pods(1000, 1000),
			metrics: obs(samples(1900)), want: 2, proposal: p32(2),
		},
		{
			name: "12a R-CALC-4 R-RES-4 missing metric, 600m: missing := 1000, 80% -> ceil(1.6) = 2",
			spec: testSpec(1, 10, cpuUtil(100)), current: 2, pods: pods(1000, 1000),
			metrics: obs(samples(600)), want: 2, proposal: p32(2),
		},
		{
			name: "12a R-PODS missing metrics at r == 1.0: nothing filled -> 5",
			spec: testSpec(1, 10, podsAvg("qps", "20")), current: 5, pods: pods(1000, 1000, 1000, 1000, 1000),
			metrics: obs(samples(20_000, 19_000, 21_000)), want: 5, proposal: p32(5),
		},
		{
			name: "12a R-PODS R-PLAIN-2 rolling surge: missing := target 17, r' 0.725 -> 3 > current -> 2",
			spec: testSpec(1, 10, podsAvg("qps", "17")), current: 2, pods: pods(1000, 1000, 1000),
			metrics: obs(samples(10_000, 10_000)), want: 2, proposal: p32(2),
		},
		{
			name: "12a R-PLAIN-1 R-PODS integer average 31666m: r 2.111 -> 7 (legacy cap 6)",
			spec: testSpec(1, 10, podsAvg("qps", "15")), current: 3, pods: pods(1000, 1000, 1000),
			metrics: obs(samples(50_000, 15_000, 30_000)), want: 6, proposal: p32(7),
			conds: []condWant{limited(reasonScaleUpLimit)},
			check: func(t *testing.T, d Decision, _ State) {
				if got, want := d.CurrentMetrics[0].Pods.Current.AverageValue.MilliValue(), int64(31_666); got != want {
					t.Errorf("status averageValue = %dm, want %dm", got, want)
				}
			},
		},
		{
			name: "12a R-POL default policies from 10 -> 50 allow 20",
			spec: rate(nil, nil), current: 10, metrics: obs(wantObs(50)), want: 20, proposal: p32(50),
		},
		{
			name: "12a R-POL scaleUp Pods 150/120s with 15 added: start 85 + 150 = 235",
			spec: rate(rules(-1, "", podsPolicy(150, 120)), nil), current: 100, metrics: obs(wantObs(1000)),
			state: added15, want: 235, proposal: p32(1000),
		},
		{
			name: "12a R-POL scaleUp Percent 200/120s with 15 added: ceil(85 x 3) = 255",
			spec: rate(rules(-1, "", percentPolicy(200, 120)), nil), current: 100, metrics: obs(wantObs(1000)),
			state: added15, want: 255, proposal: p32(1000),
		},
		{
			name: "12a R-BEH-2 scaleUp Pods 5/120s with 15 added: limit 90 < current -> frozen at 100",
			spec: rate(rules(-1, "", podsPolicy(5, 120)), nil), current: 100, metrics: obs(wantObs(1000)),
			state: added15, want: 100, proposal: p32(1000), conds: []condWant{limited(reasonScaleUpLimit)},
		},
		{
			name: "12a R-POL scaleDown {Pods 20, Percent 1}/60s Max: most permissive 80",
			spec: rate(nil, rules(0, SelectMax, podsPolicy(20, 60), percentPolicy(1, 60))), current: 100,
			metrics: obs(wantObs(2)), want: 80, proposal: p32(2),
		},
		{
			name: "12a R-POL scaleDown {Pods 2, Percent 1}/60s Max: min(98, 99) = 98",
			spec: rate(nil, rules(0, SelectMax, podsPolicy(2, 60), percentPolicy(1, 60))), current: 100,
			metrics: obs(wantObs(2)), want: 98, proposal: p32(2),
		},
		{
			name: "12a R-POL scaleDown Percent 50/180s with +2 up and -4 down: start 12 -> 6",
			spec: rate(nil, rules(0, "", percentPolicy(50, 180))), current: 10, metrics: obs(wantObs(1)),
			state: &State{Seeded: true, History: History{
				ScaleUpEvents:   []ScaleEvent{ev(2, ago(sec(100)))},
				ScaleDownEvents: []ScaleEvent{ev(4, ago(sec(60)))},
			}},
			want: 6, proposal: p32(1),
		},
		{
			name: "12a R-EXTAVG statusReplicas 0: value 20 vs 5/pod -> ceil(4) = 4, status 0",
			spec: testSpec(1, 10, externalAvg("qps", "5")), current: 2, status: p32(0),
			metrics: obs(series(20_000)), want: 4, proposal: p32(4),
			check: func(t *testing.T, d Decision, _ State) {
				if got := d.CurrentMetrics[0].External.Current.AverageValue.MilliValue(); got != 0 {
					t.Errorf("status averageValue = %dm, want 0", got)
				}
			},
		},
		{
			name: "12a R-OBJAVG statusReplicas 0 and value 0: NaN is not within -> ceil(0) = 0",
			spec: testSpec(0, 10, objectAvg("qps", "5")), current: 2, status: p32(0),
			metrics: obs(value(0)), want: 0, proposal: p32(0),
		},
	}
}

// TestFloatQuirks pins §13.4: the float artefacts that decide answers.
func TestFloatQuirks(t *testing.T) {
	// R-TOL-1: 1 - 0.18 is 0.8200000000000001, so 41/50 = 0.82 is outside.
	if got := (tolerances{down: 0.18, up: 0.18}).within(41.0 / 50.0); got {
		t.Errorf("within(0.82) with tol 0.18 = true, want false")
	}
	runDecideCases(t, []decideCase{
		{
			name: "R-TOL-1 scaleDown tolerance 0.18, util 41% of 50% (r = 0.82) is outside -> ceil(0.82 x 10) = 9",
			spec: withBehavior(testSpec(1, 100, cpuUtil(50)), nil, tolerance("0.18")), current: 10,
			pods: uniformPods(10, 1000), metrics: obs(samples(repeat(410, 10)...)), want: 9, proposal: p32(9),
		},
		{
			name: "R-TOL-1 inclusive bound: r exactly 1.1 (util 110 of 100) is within -> no change",
			spec: testSpec(1, 100, cpuUtil(100)), current: 10,
			pods: uniformPods(10, 1000), metrics: obs(samples(repeat(1100, 10)...)), want: 10, proposal: p32(10),
		},
	})
}

func repeat(v int64, n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func ptrState(s State) *State { return &s }

// wantResourceStatus checks currentMetrics[i].resource.current.
func wantResourceStatus(t *testing.T, d Decision, i int, res string, util int32, avg string) {
	t.Helper()
	if i >= len(d.CurrentMetrics) || d.CurrentMetrics[i].Resource == nil {
		t.Fatalf("currentMetrics[%d] has no resource status: %+v", i, d.CurrentMetrics)
	}
	got := d.CurrentMetrics[i]
	want := MetricStatus{Type: MetricResource, Resource: &ResourceMetricStatus{Name: res, Current: MetricValueStatus{
		AverageUtilization: &util, AverageValue: mustQty(avg)}}}
	if diff := cmp.Diff(got, want, cmpQuantities); diff != "" {
		t.Errorf("currentMetrics[%d] (-got +want):\n%s", i, diff)
	}
}
