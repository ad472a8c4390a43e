package recommender

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestExplanation checks the explanation of representative decisions: the one-sentence
// message (direction, counts, deciding factor) and the structured fields.
func TestExplanation(t *testing.T) {
	tests := []struct {
		name string
		spec *Spec
		cur  int32
		pods []Pod
		obs  []Observation
		st   State
		// contains are substrings the message must have, in order.
		contains []string
		// absent are substrings it must not have.
		absent []string
		want   Explanation // Message and Metrics are checked separately
		// metrics, when set, is compared with Explanation.Metrics (UsageRatio ignored).
		metrics []MetricExplanation
	}{
		{
			name: "E1 R-RES scale-up names the metric and its utilization",
			spec: testSpec(1, 10, cpuUtil(30)), cur: 3, pods: pods(1000, 1000, 1000), obs: obs(samples(300, 500, 700)), st: seededEmpty(),
			contains: []string{"scale up 3 -> 5", "cpu utilization 50% of 30% target", "proposes 5"},
			absent:   []string{"held", "limited"},
			want:     Explanation{WinningMetric: 0, Proposal: 5, Stabilized: 5, Limited: 5, Final: 5},
			metrics:  []MetricExplanation{{Index: 0, Name: "cpu resource utilization (percentage of request)", Proposal: 5, ReadyPods: 3}},
		},
		{
			name: "E2 R-CALC-2 per-metric pod counts show the unready pod",
			spec: testSpec(1, 10, cpuUtil(30)), cur: 3, pods: with(pods(1000, 1000, 1000), 0, neverReady), obs: obs(samples(300, 500, 700)), st: seededEmpty(),
			contains: []string{"scale up 3 -> 4", "60% of 30% target"},
			want:     Explanation{WinningMetric: 0, Proposal: 4, Stabilized: 4, Limited: 4, Final: 4},
			metrics:  []MetricExplanation{{Index: 0, Name: "cpu resource utilization (percentage of request)", Proposal: 4, ReadyPods: 2, UnreadyPods: 1}},
		},
		{
			name: "E30 R-EXT an External metric without a selector is named by its name alone",
			spec: testSpec(1, 10, externalValue("q", "1")), cur: 2, pods: pods(1000, 1000), obs: obs(series(3000)), st: seededEmpty(),
			contains: []string{"scale up 2 -> 4", "external q 3 vs 1 target (ratio 3.000)", "proposes 6"},
			want:     Explanation{WinningMetric: 0, Proposal: 6, Stabilized: 6, Limited: 4, Final: 4, LimitReason: reasonScaleUpLimit, LimitingPolicy: "legacy scale-up limit max(2 x 2, 4) = 4"},
			metrics:  []MetricExplanation{{Index: 0, Name: "external metric q", Proposal: 6, ReadyPods: 2}},
		},
		{
			name: "E31 R-EXTAVG a selector shows in kubectl's syntax",
			spec: testSpec(1, 10, MetricSpec{Type: MetricExternal, External: &ExternalMetricSource{
				Metric: MetricIdentifier{Name: "q", Selector: &LabelSelector{MatchLabels: map[string]string{"queue": "a", "env": "prod"},
					MatchExpressions: []LabelSelectorRequirement{{Key: "tier", Operator: "In", Values: []string{"x", "y"}}, {Key: "canary", Operator: "DoesNotExist"}}}},
				Target: MetricTarget{Type: TargetAverageValue, AverageValue: mustQty("1")}}}),
			cur: 2, obs: obs(series(3000)), st: seededEmpty(),
			contains: []string{"scale up 2 -> 3"},
			want:     Explanation{WinningMetric: 0, Proposal: 3, Stabilized: 3, Limited: 3, Final: 3},
			metrics:  []MetricExplanation{{Index: 0, Name: "external metric q{env=prod,queue=a,tier in (x,y),!canary}", Proposal: 3}},
		},
		{
			name: "E32 R-EXTAVG at 0 replicas the per-pod average is not shown as an infinite ratio",
			spec: testSpec(0, 10, externalAvg("q", "1")), cur: 0, obs: obs(series(5000)), st: scaledToZeroState(),
			contains: []string{"scale up 0 -> 4", "external q vs 1 target per pod, with no replicas to average over", "proposes 5"},
			want:     Explanation{WinningMetric: 0, Proposal: 5, Stabilized: 5, Limited: 4, Final: 4, LimitReason: reasonScaleUpLimit, LimitingPolicy: "legacy scale-up limit max(2 x 0, 4) = 4"},
			metrics:  []MetricExplanation{{Index: 0, Name: "external metric q", Proposal: 5}},
		},
		{
			name: "E24 R-LEG the stabilization window that held the value is named",
			spec: testSpec(2, 10, wantMetric()), cur: 6, obs: obs(wantObs(3)), st: State{},
			contains: []string{"no change at 6", "external queue", "proposes 3", "held at 6 by the 300s scaleDown stabilization window"},
			want:     Explanation{WinningMetric: 0, Proposal: 3, Stabilized: 6, StabilizationWindow: 5 * time.Minute, Limited: 6, Final: 6},
		},
		{
			name: "E15 R-BEH-1 scale-up window holds below desired",
			spec: withBehavior(testSpec(1, 100, wantMetric()), rules(300, ""), rules(0, "")), cur: 1, obs: obs(wantObs(7)),
			st:       withRecs(rec(4, ago(2*time.Minute)), rec(5, ago(time.Minute))),
			contains: []string{"scale up 1 -> 4", "proposes 7", "held at 4 by the 300s scaleUp stabilization window"},
			want:     Explanation{WinningMetric: 0, Proposal: 7, Stabilized: 4, StabilizationWindow: 5 * time.Minute, Limited: 4, Final: 4},
		},
		{
			name: "E16 R-BEH-1 a hold at current is attributed to the scale-down window",
			spec: withBehavior(testSpec(1, 100, wantMetric()), rules(60, ""), rules(300, "")), cur: 2, obs: obs(wantObs(1)),
			st:       withRecs(rec(3, ago(3*time.Minute))),
			contains: []string{"no change at 2", "proposes 1", "held at 2 by the 300s scaleDown stabilization window"},
			want:     Explanation{WinningMetric: 0, Proposal: 1, Stabilized: 2, StabilizationWindow: 5 * time.Minute, Limited: 2, Final: 2},
		},
		{
			name: "E18 R-POL the limiting policy is named",
			spec: withBehavior(testSpec(1, 100, podsAvg("qps", "10")), rules(-1, "", podsPolicy(4, 15)), nil), cur: 3,
			pods: pods(1, 1, 1), obs: obs(samples(50_000, 50_000, 50_000)), st: seededEmpty(),
			contains: []string{"scale up 3 -> 7", "pods metric qps", "proposes 15", "limited to 7 by scaleUp Pods 4/15s"},
			want:     Explanation{WinningMetric: 0, Proposal: 15, Stabilized: 15, Limited: 7, LimitingPolicy: "scaleUp Pods 4/15s", Final: 7, LimitReason: reasonScaleUpLimit},
		},
		{
			name: "E18 R-CAP the legacy cap is named",
			spec: testSpec(1, 100, wantMetric()), cur: 1, obs: obs(wantObs(10)), st: seededEmpty(),
			contains: []string{"scale up 1 -> 4", "limited to 4 by legacy scale-up limit max(2 x 1, 4) = 4"},
			want: Explanation{WinningMetric: 0, Proposal: 10, Stabilized: 10, Limited: 4,
				LimitingPolicy: "legacy scale-up limit max(2 x 1, 4) = 4", Final: 4, LimitReason: reasonScaleUpLimit},
		},
		{
			name: "E14 R-BEH-2 a frozen scale-down names the down policy",
			spec: withBehavior(testSpec(1, 200, wantMetric()), nil, rules(0, "", podsPolicy(5, 120))), cur: 100, obs: obs(wantObs(2)),
			st:       State{Seeded: true, History: History{ScaleDownEvents: []ScaleEvent{ev(15, ago(time.Minute))}}},
			contains: []string{"no change at 100", "proposes 2", "limited to 100 by scaleDown Pods 5/120s"},
			want: Explanation{WinningMetric: 0, Proposal: 2, Stabilized: 2, Limited: 100, LimitingPolicy: "scaleDown Pods 5/120s",
				Final: 100, LimitReason: reasonScaleDownLimit},
		},
		{
			name: "E17 R-LEG minReplicas is the deciding factor",
			spec: testSpec(2, 10, cpuUtil(90)), cur: 3, pods: pods(900, 1000, 1100), obs: obs(samples(10, 95, 10)), st: seededEmpty(),
			contains: []string{"scale down 3 -> 2", "3% of 90% target", "proposes 1", "raised to minReplicas 2"},
			want:     Explanation{WinningMetric: 0, Proposal: 1, Stabilized: 1, Limited: 2, Final: 2, LimitReason: reasonTooFewReplicas},
		},
		{
			name: "R-LEG maxReplicas is the deciding factor",
			spec: testSpec(1, 5, wantMetric()), cur: 4, obs: obs(wantObs(9)), st: seededEmpty(),
			contains: []string{"scale up 4 -> 5", "proposes 9", "limited to maxReplicas 5"},
			want:     Explanation{WinningMetric: 0, Proposal: 9, Stabilized: 9, Limited: 5, Final: 5, LimitReason: reasonTooManyReplicas},
		},
		{
			name: "R-POL selectPolicy Disabled is named",
			spec: withBehavior(testSpec(1, 100, wantMetric()), rules(-1, SelectDisabled), nil), cur: 3, obs: obs(wantObs(9)), st: seededEmpty(),
			contains: []string{"no change at 3", "proposes 9", "scaleUp selectPolicy Disabled"},
			want: Explanation{WinningMetric: 0, Proposal: 9, Stabilized: 9, Limited: 3, LimitingPolicy: "scaleUp selectPolicy Disabled",
				Final: 3, LimitReason: reasonScaleUpLimit},
		},
		{
			name: "R-TOL no change inside tolerance says so",
			spec: testSpec(1, 20, cpuUtil(50)), cur: 2, pods: pods(1000, 1000), obs: obs(samples(500, 520)), st: seededEmpty(),
			contains: []string{"no change at 2", "cpu utilization 51% of 50% target", "proposes no change"},
			want:     Explanation{WinningMetric: 0, Proposal: 2, Stabilized: 2, Limited: 2, Final: 2},
		},
		{
			name: "R-OBJ the Object metric names its object, value, target and ratio",
			spec: testSpec(1, 20, objectValue("rps", "5")), cur: 2, pods: pods(1, 1), obs: obs(value(20_000)), st: seededEmpty(),
			contains: []string{"scale up 2 -> 4", "Ingress/main rps 20 vs 5 target (ratio 4.000)", "proposes 8"},
			want: Explanation{WinningMetric: 0, Proposal: 8, Stabilized: 8, Limited: 4,
				LimitingPolicy: "legacy scale-up limit max(2 x 2, 4) = 4", Final: 4, LimitReason: reasonScaleUpLimit},
		},
		{
			name: "R-MULTI a failed metric is reported on a scale-up",
			spec: testSpec(1, 20, cpuUtil(50), wantMetric()), cur: 2, pods: pods(1000, 1000), obs: obs(failed("metrics server down"), wantObs(3)), st: seededEmpty(),
			contains: []string{"scale up 2 -> 3", "external queue", "1 metric(s) failed; scale-down blocked"},
			want:     Explanation{WinningMetric: 1, Proposal: 3, Stabilized: 3, Limited: 3, Final: 3},
			metrics: []MetricExplanation{
				{Index: 0, Name: "cpu resource", Error: "failed to get cpu utilization: unable to get metrics for resource cpu: metrics server down"},
				{Index: 1, Name: "external metric queue", Proposal: 3},
			},
		},
		{
			name: "R-MULTI a blocked scale-down explains the failure",
			spec: testSpec(1, 20, cpuUtil(50), wantMetric()), cur: 5, pods: pods(1000, 1000), obs: obs(failed("metrics server down"), wantObs(2)), st: seededEmpty(),
			contains: []string{"no change at 5", "a metric failed", "scale-down", "cpu resource", "metrics server down"},
			want:     Explanation{WinningMetric: -1, Final: 5},
		},
		{
			name: "R-MULTI all metrics failed",
			spec: testSpec(1, 20, wantMetric()), cur: 5, obs: obs(failed("adapter down")), st: seededEmpty(),
			contains: []string{"no change at 5", "no metric could be computed", "adapter down"},
			want:     Explanation{WinningMetric: -1, Final: 5},
		},
		{
			name: "R-REC 4b out-of-range correction says why, with the bounds",
			spec: testSpec(1, 5, wantMetric()), cur: 9, obs: obs(wantObs(3)), st: seededEmpty(),
			contains: []string{"scale down 9 -> 5", "above Spec.MaxReplicas", "max 5"},
			want:     Explanation{WinningMetric: -1, Proposal: 5, Stabilized: 5, Limited: 5, Final: 5, LimitReason: reasonTooManyReplicas},
		},
		{
			name: "R-REC 4c below-min correction",
			spec: testSpec(3, 5, wantMetric()), cur: 1, obs: obs(wantObs(3)), st: seededEmpty(),
			contains: []string{"scale up 1 -> 3", "below Spec.MinReplicas", "min 3"},
			want:     Explanation{WinningMetric: -1, Proposal: 3, Stabilized: 3, Limited: 3, Final: 3, LimitReason: reasonTooFewReplicas},
		},
		{
			name: "R-REC 4a ScalingDisabled at zero",
			spec: testSpec(0, 5, wantMetric()), cur: 0, obs: obs(wantObs(3)), st: seededEmpty(),
			contains: []string{"no change at 0", "disabled", "zero"},
			want:     Explanation{WinningMetric: -1},
		},
		{
			name: "R-REC 4a the scale-from-zero floor is named",
			spec: withBehavior(testSpec(2, 20, wantMetric()), rules(-1, "", percentPolicy(100, 15)), nil), cur: 0, obs: obs(wantObs(5)),
			st:       scaledToZeroState(),
			contains: []string{"scale up 0 -> 2", "proposes 5", "limited to 0 by scaleUp Percent 100/15s", "raised to minReplicas 2 to leave zero"},
			want: Explanation{WinningMetric: 0, Proposal: 5, Stabilized: 5, Limited: 0, LimitingPolicy: "scaleUp Percent 100/15s",
				Final: 2, LimitReason: reasonScaleUpLimit},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, _ := decide(tc.spec, tc.cur, tc.pods, tc.obs, tc.st)
			ex := d.Explanation
			msg := ex.Message
			checkSentence(t, msg)
			rest := msg
			for _, s := range tc.contains {
				i := strings.Index(rest, s)
				if i < 0 {
					t.Errorf("message %q lacks %q (in order)", msg, s)
					continue
				}
				rest = rest[i+len(s):]
			}
			for _, s := range tc.absent {
				if strings.Contains(msg, s) {
					t.Errorf("message %q contains %q", msg, s)
				}
			}
			if got, want := ex.Final, d.DesiredReplicas; got != want {
				t.Errorf("Final = %d but DesiredReplicas = %d", got, want)
			}
			if diff := cmp.Diff(ex, tc.want, cmpopts.IgnoreFields(Explanation{}, "Message", "Metrics")); diff != "" {
				t.Errorf("explanation (-got +want):\n%s", diff)
			}
			if tc.metrics != nil {
				if diff := cmp.Diff(ex.Metrics, tc.metrics, cmpopts.IgnoreFields(MetricExplanation{}, "UsageRatio")); diff != "" {
					t.Errorf("metric explanations (-got +want):\n%s", diff)
				}
			}
		})
	}
}

// checkSentence: one readable line, lowercase start as a log message, no trailing period,
// opening with the direction and the counts.
func checkSentence(t *testing.T, msg string) {
	t.Helper()
	if msg == "" {
		t.Fatal("empty explanation message")
	}
	if strings.ContainsAny(msg, "\n\t") {
		t.Errorf("message is not one line: %q", msg)
	}
	if !strings.HasPrefix(msg, "scale up ") && !strings.HasPrefix(msg, "scale down ") && !strings.HasPrefix(msg, "no change at ") {
		t.Errorf("message does not open with the direction: %q", msg)
	}
	if strings.HasSuffix(msg, ".") {
		t.Errorf("message ends with a period: %q", msg)
	}
	for _, bad := range []string{"%!", "NaN", "Inf", "<nil>"} {
		if strings.Contains(msg, bad) {
			t.Errorf("message has formatting debris %q: %q", bad, msg)
		}
	}
}

// TestExplanationUsageRatio: the per-metric usage ratio is the first-pass ratio (R-CALC-6).
func TestExplanationUsageRatio(t *testing.T) {
	d, _ := decide(testSpec(1, 10, cpuUtil(30)), 3, with(pods(1000, 1000, 1000), 0, neverReady), obs(samples(300, 500, 700)), seededEmpty())
	if got := d.Explanation.Metrics[0].UsageRatio; got != 2.0 {
		t.Errorf("UsageRatio = %v, want 2 (60%% / 30%%, before the fill-in)", got)
	}
}
