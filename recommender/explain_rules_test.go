package recommender

import (
	"testing"
	"time"
)

// TestRuleSentences gives every rule that can hold or move the count its sentence, asserted
// whole: a change to the rule's facts (ratio, band, pod counts, window, policy) changes it.
func TestRuleSentences(t *testing.T) {
	twoSamples := samples(700, 700) // p0 and p1 reported; p2 has no sample
	tests := []struct {
		name string
		spec *Spec
		cur  int32
		pods []Pod
		obs  []Observation
		st   State
		want string
	}{
		{
			name: "R-TOL-1 the ratio inside the default band",
			spec: testSpec(1, 20, cpuUtil(50)), cur: 2, pods: pods(1000, 1000), obs: obs(samples(500, 520)), st: seededEmpty(),
			want: "no change at 2: cpu utilization 51% of 50% target, ratio 1.020 within the tolerance 0.90–1.10, proposes no change",
		},
		{
			name: "R-TOL-3 a per-direction scale-up tolerance widens the band's upper side",
			spec: withBehavior(testSpec(1, 20, cpuUtil(50)), tolerance("0.25"), nil), cur: 2, pods: pods(1000, 1000), obs: obs(samples(600, 600)), st: seededEmpty(),
			want: "no change at 2: cpu utilization 60% of 50% target, ratio 1.200 within the tolerance 0.90–1.25, proposes no change",
		},
		{
			name: "R-TOL-5 no tolerance at zero replicas for a Value target",
			spec: testSpec(0, 20, externalValue("q", "1")), cur: 0, obs: obs(series(1050)), st: scaledToZeroState(),
			want: "scale up 0 -> 2: external q 1050m vs 1 target (ratio 1.050), with no tolerance at 0 replicas, proposes 2",
		},
		{
			name: "R-CALC-4 a missing pod counted at 0 for a scale-up lands inside the band",
			spec: testSpec(1, 20, cpuUtil(60)), cur: 3, pods: pods(1000, 1000, 1000), obs: obs(samples(1000, 1000)), st: seededEmpty(),
			want: "no change at 3: cpu utilization 100% of 60% target (ratio 1.667); for a scale-up, re-counting 1 pod without a sample at 0% of request gives ratio 1.100, within the tolerance 0.90–1.10, so it proposes no change",
		},
		{
			name: "R-CALC-4 a missing pod counted at 100% of request for a scale-down",
			spec: testSpec(1, 20, cpuUtil(60)), cur: 3, pods: pods(1000, 1000, 1000), obs: obs(samples(100, 100)), st: seededEmpty(),
			want: "scale down 3 -> 2: cpu utilization 10% of 60% target (ratio 0.167); for a scale-down, re-counting 1 pod without a sample at 100% of request gives ratio 0.667, and proposes 2",
		},
		{
			name: "R-CALC-4 an unready pod counted at 0 for a scale-up still scales up",
			spec: testSpec(1, 20, cpuUtil(30)), cur: 3, pods: with(pods(1000, 1000, 1000), 0, neverReady), obs: obs(samples(300, 900, 900)), st: seededEmpty(),
			want: "scale up 3 -> 6: cpu utilization 90% of 30% target (ratio 3.000); for a scale-up, re-counting 1 unready pod at 0% of request gives ratio 2.000, and proposes 6",
		},
		{
			name: "R-CALC-5 re-counting reverses the direction: the proposal is dropped",
			spec: testSpec(1, 20, cpuUtil(60)), cur: 3, pods: pods(1000, 1000, 1000), obs: obs(twoSamples), st: seededEmpty(),
			want: "no change at 3: cpu utilization 70% of 60% target (ratio 1.167); for a scale-up, re-counting 1 pod without a sample at 0% of request gives ratio 0.767, which reverses the direction, so the proposal is dropped (no change)",
		},
		{
			name: "R-CALC-5 the re-counted count moves against the direction: the proposal is dropped",
			spec: testSpec(1, 20, cpuUtil(50)), cur: 5, pods: pods(1000, 1000, 1000), obs: obs(samples(1000, 1000)), st: seededEmpty(),
			want: "no change at 5: cpu utilization 100% of 50% target (ratio 2.000); for a scale-up, re-counting 1 pod without a sample at 0% of request gives ratio 1.320, or 4 replicas: fewer than the current 5 for a scale-up, so the proposal is dropped (no change)",
		},
		{
			name: "R-MULTI a failed metric blocks a scale-down",
			spec: testSpec(1, 20, cpuUtil(50), wantMetric()), cur: 5, pods: pods(1000, 1000), obs: obs(failed("metrics server down"), wantObs(2)), st: seededEmpty(),
			want: "no change at 5: a metric failed and the others propose a scale-down, which needs every metric (cpu resource: failed to get cpu utilization: unable to get metrics for resource cpu: metrics server down)",
		},
		{
			name: "R-LEG-1 the scale-down window names the recommendation it kept",
			spec: testSpec(1, 20, wantMetric()), cur: 6, obs: obs(wantObs(3)), st: withRecs(rec(6, ago(2*time.Minute))),
			want: "no change at 6: external queue 500m per pod vs 1 target (ratio 0.500) proposes 3; held at 6 by the 300s scaleDown stabilization window (highest recent recommendation: 6 from 2m0s ago)",
		},
		{
			name: "R-BEH-1 the scale-up window names the lowest recommendation",
			spec: withBehavior(testSpec(1, 100, wantMetric()), rules(300, ""), rules(0, "")), cur: 1, obs: obs(wantObs(7)),
			st:   withRecs(rec(4, ago(2*time.Minute)), rec(5, ago(time.Minute))),
			want: "scale up 1 -> 4: external queue 7 per pod vs 1 target (ratio 7.000) proposes 7; held at 4 by the 300s scaleUp stabilization window (lowest recent recommendation: 4 from 2m0s ago)",
		},
		{
			name: "R-BEH-1 a window holding at current names the recommendation above it",
			spec: withBehavior(testSpec(1, 100, wantMetric()), rules(60, ""), rules(300, "")), cur: 2, obs: obs(wantObs(1)),
			st:   withRecs(rec(3, ago(3*time.Minute))),
			want: "no change at 2: external queue 500m per pod vs 1 target (ratio 0.500) proposes 1; held at 2 by the 300s scaleDown stabilization window (highest recent recommendation: 3 from 3m0s ago, so it stays at the current 2)",
		},
		{
			name: "R-POL a scale-up policy with replicas left",
			spec: withBehavior(testSpec(1, 100, wantMetric()), rules(-1, "", podsPolicy(4, 15)), nil), cur: 3, obs: obs(wantObs(15)), st: seededEmpty(),
			want: "scale up 3 -> 7: external queue 5 per pod vs 1 target (ratio 5.000) proposes 15; limited to 7 by scaleUp Pods 4/15s, which had 4 replicas left to add in its 15s period",
		},
		{
			name: "R-POL a scale-down policy used up in its period",
			spec: withBehavior(testSpec(1, 200, wantMetric()), nil, rules(0, "", podsPolicy(5, 120))), cur: 100, obs: obs(wantObs(2)),
			st:   State{Seeded: true, History: History{ScaleDownEvents: []ScaleEvent{ev(15, ago(time.Minute))}}},
			want: "no change at 100: external queue 20m per pod vs 1 target (ratio 0.020) proposes 2; limited to 100 by scaleDown Pods 5/120s, which had 0 replicas left to remove in its 120s period",
		},
		{
			name: "R-POL selectPolicy Disabled",
			spec: withBehavior(testSpec(1, 100, wantMetric()), rules(-1, SelectDisabled), nil), cur: 3, obs: obs(wantObs(9)), st: seededEmpty(),
			want: "no change at 3: external queue 3 per pod vs 1 target (ratio 3.000) proposes 9; limited to 3 by scaleUp selectPolicy Disabled",
		},
		{
			name: "R-CAP the legacy scale-up limit",
			spec: testSpec(1, 100, wantMetric()), cur: 1, obs: obs(wantObs(10)), st: seededEmpty(),
			want: "scale up 1 -> 4: external queue 10 per pod vs 1 target (ratio 10.000) proposes 10; limited to 4 by legacy scale-up limit max(2 x 1, 4) = 4",
		},
		{
			name: "R-LEG maxReplicas clamps",
			spec: testSpec(1, 5, wantMetric()), cur: 4, obs: obs(wantObs(9)), st: seededEmpty(),
			want: "scale up 4 -> 5: external queue 2250m per pod vs 1 target (ratio 2.250) proposes 9; limited to maxReplicas 5",
		},
		{
			name: "R-LEG minReplicas clamps",
			spec: testSpec(2, 10, wantMetric()), cur: 3, obs: obs(wantObs(1)), st: withRecs(rec(1, ago(time.Hour))),
			want: "scale down 3 -> 2: external queue 334m per pod vs 1 target (ratio 0.333) proposes 1; raised to minReplicas 2",
		},
		{
			name: "R-REC-4b above maxReplicas is corrected at once",
			spec: testSpec(1, 5, wantMetric()), cur: 9, obs: obs(wantObs(3)), st: seededEmpty(),
			want: "scale down 9 -> 5: current number of replicas above Spec.MaxReplicas (min 1, max 5)",
		},
		{
			name: "R-REC-4a scaling disabled at zero",
			spec: testSpec(1, 5, wantMetric()), cur: 0, obs: obs(wantObs(3)), st: seededEmpty(),
			want: "no change at 0: scaling is disabled because the target has zero replicas and this autoscaler did not scale it to zero",
		},
		{
			name: "R-REC-4a resuming from zero is raised to minReplicas",
			spec: withBehavior(testSpec(2, 20, wantMetric()), rules(-1, "", percentPolicy(100, 15)), nil), cur: 0, obs: obs(wantObs(5)),
			st:   scaledToZeroState(),
			want: "scale up 0 -> 2: external queue vs 1 target per pod, with no replicas to average over proposes 5; limited to 0 by scaleUp Percent 100/15s, which had 0 replicas left to add in its 15s period; raised to minReplicas 2 to leave zero",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, _ := decide(tc.spec, tc.cur, tc.pods, tc.obs, tc.st)
			checkSentence(t, d.Explanation.Message)
			if got := d.Explanation.Message; got != tc.want {
				t.Errorf("sentence\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}
