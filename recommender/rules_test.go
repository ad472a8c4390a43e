package recommender

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Rule tests: one table per section of HPA-ALGORITHM.md; each case name starts with the rule
// ids it checks (TestEveryRuleIsCited keeps the list complete).

func wantProposalOf(t *testing.T, d Decision, i int, want int32) {
	t.Helper()
	if got := d.Explanation.Metrics[i].Proposal; got != want {
		t.Errorf("Metrics[%d].Proposal = %d, want %d", i, got, want)
	}
}

func wantMetricError(t *testing.T, d Decision, i int, substr string) {
	t.Helper()
	if got := d.Explanation.Metrics[i].Error; !strings.Contains(got, substr) {
		t.Errorf("Metrics[%d].Error = %q, want it to contain %q", i, got, substr)
	}
	if diff := cmp.Diff(d.CurrentMetrics[i], MetricStatus{}); diff != "" {
		t.Errorf("a failed metric's currentMetrics entry must be empty (-got +want):\n%s", diff)
	}
}

func wantPodCounts(t *testing.T, d Decision, i int, ready, unready, missing, ignored int32) {
	t.Helper()
	m := d.Explanation.Metrics[i]
	got := [4]int32{m.ReadyPods, m.UnreadyPods, m.MissingPods, m.IgnoredPods}
	if want := [4]int32{ready, unready, missing, ignored}; got != want {
		t.Errorf("Metrics[%d] ready/unready/missing/ignored = %v, want %v", i, got, want)
	}
}

func TestPodGrouping(t *testing.T) {
	runDecideCases(t, []decideCase{
		{
			name: "R-GRP rule 1 a terminating pod is ignored and its metric discarded",
			spec: testSpec(1, 20, cpuUtil(50)), current: 3, pods: with(pods(1000, 1000, 1000), 2, deleting),
			metrics: obs(samples(1000, 1000, 5000)), want: 4, proposal: p32(4),
			check: func(t *testing.T, d Decision, _ State) { wantPodCounts(t, d, 0, 2, 0, 0, 1) },
		},
		{
			name: "R-GRP rule 1 Failed and Succeeded pods are ignored",
			spec: testSpec(1, 20, cpuUtil(50)), current: 4,
			pods:    with(with(pods(1000, 1000, 1000, 1000), 2, phase(PodFailed)), 3, phase(PodSucceeded)),
			metrics: obs(samples(1000, 1000, 5000, 5000)), want: 4, proposal: p32(4),
			check: func(t *testing.T, d Decision, _ State) { wantPodCounts(t, d, 0, 2, 0, 0, 2) },
		},
		{
			name: "R-GRP rule 2 R-CALC-4 a Pending pod is unready for a Pods metric too and counts 0 on scale-up",
			spec: testSpec(1, 20, podsAvg("qps", "10")), current: 3, pods: with(pods(1000, 1000, 1000), 2, pending),
			metrics: obs(samples(20_000, 20_000, 20_000)), want: 4, proposal: p32(4),
			check: func(t *testing.T, d Decision, _ State) { wantPodCounts(t, d, 0, 2, 1, 0, 0) },
		},
		{
			name: "R-GRP rule 3 a pod without a sample is missing",
			spec: testSpec(1, 20, cpuUtil(50)), current: 3, pods: pods(1000, 1000, 1000),
			metrics: obs(samples(500, 500)), want: 3, proposal: p32(3),
			check: func(t *testing.T, d Decision, _ State) { wantPodCounts(t, d, 0, 2, 0, 1, 0) },
		},
		{
			name: "R-GRP rule 4 cpu: a pod without a Ready condition is unready",
			spec: testSpec(1, 20, cpuUtil(50)), current: 2,
			pods:    with(pods(1000, 1000), 1, func(p *Pod) { p.HasReady = false }),
			metrics: obs(samples(1000, 1000)), want: 2, proposal: p32(2),
			check: func(t *testing.T, d Decision, _ State) { wantPodCounts(t, d, 0, 1, 1, 0, 0) },
		},
		{
			name: "R-GRP rule 4 cpu: a pod without a start time is unready",
			spec: testSpec(1, 20, cpuUtil(50)), current: 2,
			pods:    with(pods(1000, 1000), 1, func(p *Pod) { p.StartTime = time.Time{} }),
			metrics: obs(samples(1000, 1000)), want: 2, proposal: p32(2),
			check: func(t *testing.T, d Decision, _ State) { wantPodCounts(t, d, 0, 1, 1, 0, 0) },
		},
		{
			name: "R-GRP rule 4 cpu: inside the init period a Ready pod whose sample predates transition+window is unready",
			spec: testSpec(1, 20, cpuUtil(50)), current: 2,
			pods: with(pods(1000, 1000), 1, func(p *Pod) {
				p.StartTime, p.ReadyTransitionTime = ago(2*time.Minute), ago(30*time.Second)
			}),
			metrics: obs(samples(1000, 1000)), want: 2, proposal: p32(2),
			check: func(t *testing.T, d Decision, _ State) { wantPodCounts(t, d, 0, 1, 1, 0, 0) },
		},
		{
			name: "R-GRP rule 4 cpu: inside the init period a Ready pod whose sample covers a full window is ready",
			spec: testSpec(1, 20, cpuUtil(50)), current: 2,
			pods: with(pods(1000, 1000), 1, func(p *Pod) {
				p.StartTime, p.ReadyTransitionTime = ago(3*time.Minute), ago(2*time.Minute)
			}),
			metrics: obs(samples(1000, 1000)), want: 4, proposal: p32(4),
			check: func(t *testing.T, d Decision, _ State) { wantPodCounts(t, d, 0, 2, 0, 0, 0) },
		},
		{
			name: "R-GRP rule 4 cpu: after the init period a pod that was ready and went unready later counts as ready",
			spec: testSpec(1, 20, cpuUtil(50)), current: 2,
			pods: with(pods(1000, 1000), 1, func(p *Pod) {
				p.Ready, p.ReadyTransitionTime = false, p.StartTime.Add(10*time.Minute)
			}),
			metrics: obs(samples(1000, 1000)), want: 4, proposal: p32(4),
			check: func(t *testing.T, d Decision, _ State) { wantPodCounts(t, d, 0, 2, 0, 0, 0) },
		},
		{
			name: "R-GRP-2 a never-Ready Running pod counts as ready for memory",
			spec: testSpec(1, 20, resourceAvg("memory", "100Mi")), current: 2, pods: with(pods(1000, 1000), 1, neverReady),
			metrics: obs(samples(200*1024*1024*1000, 200*1024*1024*1000)), want: 4, proposal: p32(4),
			check: func(t *testing.T, d Decision, _ State) { wantPodCounts(t, d, 0, 2, 0, 0, 0) },
		},
		{
			name: "R-GRP-3 Resource Utilization skips samples of pods not in the list",
			spec: testSpec(1, 20, cpuUtil(50)), current: 2, pods: pods(1000, 1000),
			metrics: obs(samples(500, 500, 9000)), want: 2, proposal: p32(2),
		},
		{
			name: "R-GRP-3 R-PLAIN-1 a Pods average includes samples of pods not in the list",
			spec: testSpec(1, 20, podsAvg("qps", "10")), current: 2, pods: pods(1000, 1000),
			metrics: obs(samples(10_000, 10_000, 40_000)), want: 4, proposal: p32(4),
			check: func(t *testing.T, d Decision, _ State) {
				if got := d.CurrentMetrics[0].Pods.Current.AverageValue.MilliValue(); got != 20_000 {
					t.Errorf("averageValue = %dm, want 20000m", got)
				}
			},
		},
		{
			name: "R-GRP-4 every pod unready: the metric fails and nothing scales",
			spec: testSpec(1, 20, cpuUtil(50)), current: 2, pods: with(with(pods(1000, 1000), 0, neverReady), 1, pending),
			metrics: obs(samples(5000, 5000)), want: 2,
			conds: []condWant{able(reasonSucceededGetScale), active("FailedGetResourceMetric")},
			check: func(t *testing.T, d Decision, _ State) {
				wantMetricError(t, d, 0, "did not receive metrics for targeted pods")
			},
		},
	})
}

func TestResourceMetrics(t *testing.T) {
	sidecar := func(p *Pod) {
		p.InitContainers = []Container{
			{Name: "proxy", RestartPolicy: "Always", Requests: map[string]resource.Quantity{"cpu": *mustQty("1")}},
			{Name: "migrate"}, // a regular init container needs no request
		}
	}
	podLevel := func(p *Pod) { p.Requests = map[string]resource.Quantity{"cpu": *mustQty("4")} }
	runDecideCases(t, []decideCase{
		{
			name: "R-RES R-RES-3 R-CALC R-CALC-1 utilization is a ratio of sums over ready pods",
			spec: testSpec(1, 20, cpuUtil(50)), current: 2, pods: pods(500, 1500),
			metrics: obs(samples(500, 500)), want: 2, proposal: p32(2),
			check: func(t *testing.T, d Decision, _ State) { wantResourceStatus(t, d, 0, "cpu", 50, "500m") },
		},
		{
			name: "R-RES-1 a container without a cpu request fails the whole metric, even on a Failed pod",
			spec: testSpec(1, 20, cpuUtil(50)), current: 2,
			pods: with(pods(1000, 1000, 1000), 2, phase(PodFailed), func(p *Pod) {
				p.Containers = append(p.Containers, Container{Name: "log"})
			}),
			metrics: obs(samples(900, 900)), want: 2,
			conds: []condWant{active("FailedGetResourceMetric")},
			check: func(t *testing.T, d Decision, _ State) {
				wantMetricError(t, d, 0, "missing request for cpu in container log of Pod p2")
			},
		},
		{
			name: "R-RES-1 a request explicitly set to 0 is allowed",
			spec: testSpec(1, 20, cpuUtil(50)), current: 2,
			pods: with(pods(1000, 1000), 1, func(p *Pod) {
				p.Containers = append(p.Containers, Container{Name: "log", Requests: map[string]resource.Quantity{"cpu": *mustQty("0")}})
			}),
			metrics: obs(samples(1000, 1000)), want: 4, proposal: p32(4),
		},
		{
			name: "R-RES-1 sidecar init containers add their request; regular init containers are not checked",
			spec: testSpec(1, 20, cpuUtil(100)), current: 2, pods: with(with(pods(1000, 1000), 0, sidecar), 1, sidecar),
			metrics: obs(samples(2000, 2000)), want: 2, proposal: p32(2),
			check: func(t *testing.T, d Decision, _ State) { wantResourceStatus(t, d, 0, "cpu", 100, "2") },
		},
		{
			name: "R-RES-1 pod-level requests override the containers' sum",
			spec: testSpec(1, 20, cpuUtil(50)), current: 2, pods: with(with(pods(1000, 1000), 0, podLevel), 1, podLevel),
			metrics: obs(samples(2000, 2000)), want: 2, proposal: p32(2),
			check: func(t *testing.T, d Decision, _ State) { wantResourceStatus(t, d, 0, "cpu", 50, "2") },
		},
		{
			name: "R-RES-2 no overlap between samples and listed pods: no metrics matched known pods",
			spec: testSpec(1, 20, cpuUtil(50)), current: 2, pods: pods(1000, 1000),
			metrics: obs(Observation{PodSamples: []PodSample{{Pod: "other", Milli: 10, Timestamp: tNow}}}), want: 2,
			conds: []condWant{active("FailedGetResourceMetric")},
			check: func(t *testing.T, d Decision, _ State) {
				if got := d.Explanation.Metrics[0].Error; !strings.Contains(got, "did not receive metrics") && !strings.Contains(got, "no metrics returned matched known pods") {
					t.Errorf("Error = %q", got)
				}
			},
		},
		{
			name: "R-RES-5 memory status averageValue is BinarySI",
			spec: testSpec(1, 20, resourceUtil("memory", 50)), current: 2, pods: pods(1000, 1000),
			metrics: obs(samples(512*1024*1024*1000, 512*1024*1024*1000)), want: 2, proposal: p32(2),
			check: func(t *testing.T, d Decision, _ State) {
				cur := d.CurrentMetrics[0].Resource.Current
				if got := cur.AverageValue.Format; got != resource.BinarySI {
					t.Errorf("memory averageValue format = %s, want BinarySI", got)
				}
				if got := cur.AverageValue.String(); got != "512Mi" {
					t.Errorf("memory averageValue = %s, want 512Mi", got)
				}
			},
		},
		{
			name: "R-PLAIN R-PLAIN-1 R-PLAIN-3 cpu AverageValue: floor(sum/n) vs target, status averageValue",
			spec: testSpec(1, 20, resourceAvg("cpu", "100m")), current: 3, pods: pods(1000, 1000, 1000),
			metrics: obs(samples(200, 201, 201)), want: 6, proposal: p32(6),
			check: func(t *testing.T, d Decision, _ State) {
				if got := d.CurrentMetrics[0].Resource.Current.AverageValue.MilliValue(); got != 200 {
					t.Errorf("averageValue = %dm, want 200m", got)
				}
				if d.CurrentMetrics[0].Resource.Current.AverageUtilization != nil {
					t.Errorf("averageUtilization set on an AverageValue target")
				}
			},
		},
		{
			name: "R-PLAIN-1 CPU readiness rules apply to a cpu AverageValue target",
			spec: testSpec(1, 20, resourceAvg("cpu", "100m")), current: 2, pods: with(pods(1000, 1000), 1, neverReady),
			metrics: obs(samples(100, 900)), want: 2, proposal: p32(2),
			check: func(t *testing.T, d Decision, _ State) { wantPodCounts(t, d, 0, 1, 1, 0, 0) },
		},
		{
			name: "R-PLAIN-2 scale-down fill value is exactly the target",
			spec: testSpec(1, 20, resourceAvg("cpu", "100m")), current: 4, pods: pods(1000, 1000, 1000, 1000),
			metrics: obs(samples(10, 10)), want: 3, proposal: p32(3),
		},
		{
			name: "R-PLAIN-4 the averageValue pointer wins even when target.type says Utilization",
			spec: testSpec(1, 20, MetricSpec{Type: MetricResource, Resource: &ResourceMetricSource{Name: "cpu",
				Target: MetricTarget{Type: TargetUtilization, AverageValue: mustQty("100m")}}}),
			current: 2, pods: pods(1000, 1000), metrics: obs(samples(200, 200)), want: 4, proposal: p32(4),
		},
		{
			name: "R-PLAIN-4 neither averageValue nor averageUtilization: the metric fails",
			spec: testSpec(1, 20, MetricSpec{Type: MetricResource, Resource: &ResourceMetricSource{Name: "cpu",
				Target: MetricTarget{Type: TargetUtilization}}}),
			invalidSpec: true, current: 2, pods: pods(1000, 1000), metrics: obs(samples(200, 200)), want: 2,
			conds: []condWant{active("FailedGetResourceMetric")},
			check: func(t *testing.T, d Decision, _ State) {
				wantMetricError(t, d, 0, "neither an average utilization target nor an average value")
			},
		},
		{
			name: "R-CRES requests and usage come from the named container only",
			spec: testSpec(1, 20, containerUtil("cpu", "app", 50)), current: 2,
			pods:    with(with(pods(1000, 1000), 0, sidecar), 1, sidecar),
			metrics: obs(samples(1000, 1000)), want: 4, proposal: p32(4),
			check: func(t *testing.T, d Decision, _ State) {
				want := MetricStatus{Type: MetricContainerResource, ContainerResource: &ContainerResourceMetricStatus{
					Name: "cpu", Container: "app", Current: MetricValueStatus{AverageUtilization: p32(100), AverageValue: mustQty("1")}}}
				if diff := cmp.Diff(d.CurrentMetrics[0], want, cmpQuantities); diff != "" {
					t.Errorf("status (-got +want):\n%s", diff)
				}
			},
		},
		{
			name: "R-CRES a pod without the named container fails the metric",
			spec: testSpec(1, 20, containerUtil("cpu", "proxy", 50)), current: 2, pods: with(pods(1000, 1000), 0, sidecar),
			metrics: obs(samples(1000, 1000)), want: 2, conds: []condWant{active("FailedGetContainerResourceMetric")},
			check: func(t *testing.T, d Decision, _ State) {
				wantMetricError(t, d, 0, "container proxy not found in Pod p1")
			},
		},
		{
			name: "R-CRES pod-level requests are never used when a container is named",
			spec: testSpec(1, 20, containerUtil("cpu", "app", 50)), current: 2, pods: with(with(pods(1000, 1000), 0, podLevel), 1, podLevel),
			metrics: obs(samples(500, 500)), want: 2, proposal: p32(2),
			check: func(t *testing.T, d Decision, _ State) {
				if got := *d.CurrentMetrics[0].ContainerResource.Current.AverageUtilization; got != 50 {
					t.Errorf("utilization = %d, want 50 (container request 1 CPU, not pod-level 4)", got)
				}
			},
		},
	})
}

func TestObjectAndExternalMetrics(t *testing.T) {
	terminatingReady := func(p *Pod) { p.Deleting = true }
	runDecideCases(t, []decideCase{
		{
			name: "R-OBJ R-OBJ-1 R-OBJ-2 Object Value: ceil(u/target x readyPods), terminating Ready pods count",
			spec: testSpec(1, 20, objectValue("rps", "10")), current: 3, pods: with(pods(1000, 1000, 1000), 2, terminatingReady),
			metrics: obs(value(20_000)), want: 6, proposal: p32(6),
			check: func(t *testing.T, d Decision, _ State) {
				want := MetricStatus{Type: MetricObject, Object: &ObjectMetricStatus{
					Metric:          MetricIdentifier{Name: "rps"},
					DescribedObject: ObjectReference{APIVersion: "networking.k8s.io/v1", Kind: "Ingress", Name: "main"},
					Current:         MetricValueStatus{Value: mustQty("20")}}}
				if diff := cmp.Diff(d.CurrentMetrics[0], want, cmpQuantities); diff != "" {
					t.Errorf("status (-got +want):\n%s", diff)
				}
				if got := d.Explanation.Metrics[0].ReadyPods; got != 3 {
					t.Errorf("ReadyPods = %d, want 3", got)
				}
			},
		},
		{
			name: "R-OBJ-2 R-TOL-4 Object Value within tolerance returns specReplicas, not readyPods",
			spec: testSpec(1, 20, objectValue("rps", "10")), current: 5, pods: pods(1000),
			metrics: obs(value(10_500)), want: 5, proposal: p32(5),
		},
		{
			name: "R-OBJ-2 Object Value with no pods at all fails",
			spec: testSpec(1, 20, objectValue("rps", "10")), current: 3, metrics: obs(value(50_000)), want: 3,
			conds: []condWant{active("FailedGetObjectMetric")},
			check: func(t *testing.T, d Decision, _ State) { wantMetricError(t, d, 0, "no pods returned by selector") },
		},
		{
			name: "R-OBJ-3 R-TOL-5 specReplicas 0: ceil(r) with no tolerance (1.05 -> 2)",
			spec: testSpec(0, 20, objectValue("rps", "10")), current: 0, metrics: obs(value(10_500)),
			state: ptrState(scaledToZeroState()), want: 2, proposal: p32(2),
		},
		{
			name: "R-OBJ-4 target.type AverageValue with only value set: neither target is set",
			spec: testSpec(1, 20, MetricSpec{Type: MetricObject, Object: &ObjectMetricSource{
				DescribedObject: ObjectReference{Kind: "Ingress", Name: "main"}, Metric: MetricIdentifier{Name: "rps"},
				Target: MetricTarget{Type: TargetAverageValue, Value: mustQty("10")}}}),
			current: 3, pods: pods(1000), metrics: obs(value(50_000)), want: 3,
			conds: []condWant{active("FailedGetObjectMetric")},
			check: func(t *testing.T, d Decision, _ State) {
				wantMetricError(t, d, 0, "neither a value target nor an average value target")
			},
		},
		{
			name: "R-OBJAVG R-TOL-4 per-pod Object within tolerance keeps statusReplicas",
			spec: testSpec(1, 20, objectAvg("rps", "5")), current: 4, status: p32(3),
			metrics: obs(value(15_500)), want: 3, proposal: p32(3),
		},
		{
			name: "R-EXT sums all series; no series fails with FailedGetExternalMetric",
			spec: testSpec(1, 20, externalValue("q", "10"), externalValue("empty", "10")), current: 2, pods: pods(1000, 1000),
			metrics: obs(series(10_000, 20_000, 30_000), series()), want: 4, proposal: p32(12),
			conds: []condWant{active(reasonValidMetricFound)},
			check: func(t *testing.T, d Decision, _ State) {
				wantMetricError(t, d, 1, "no metrics returned from external metrics API")
				if got := d.CurrentMetrics[0].External.Current.Value.MilliValue(); got != 60_000 {
					t.Errorf("value = %dm, want 60000m", got)
				}
			},
		},
		{
			name: "R-EXT R-INT positive overflow caps the sum at MaxInt64; the proposal saturates at MaxInt32",
			spec: testSpec(1, 20, externalValue("q", "1")), current: 2, pods: pods(1000, 1000),
			metrics: obs(series(math.MaxInt64, math.MaxInt64)), want: 4, proposal: p32(math.MaxInt32),
			conds: []condWant{limited(reasonScaleUpLimit)},
		},
		{
			name: "R-EXTAVG a running sum that turns negative saturates to MaxInt64 and stops: scale to max",
			spec: testSpec(1, 20, externalAvg("q", "1")), current: 10,
			metrics: obs(series(-1, 5000)), want: 20, proposal: p32(math.MaxInt32),
			conds: []condWant{limited(reasonTooManyReplicas)},
		},
		{
			name: "R-EXTAVG dispatch ignores target.type: averageValue set means the per-pod path",
			spec: testSpec(1, 20, MetricSpec{Type: MetricExternal, External: &ExternalMetricSource{Metric: MetricIdentifier{Name: "q"},
				Target: MetricTarget{Type: TargetValue, AverageValue: mustQty("2")}}}),
			current: 2, metrics: obs(series(10_000)), want: 4, proposal: p32(5),
		},
		{
			// Upstream: replica_calculator_test.go TestReplicaCalcExternalPerPodMetric, "replica
			// count overflow saturates to MaxInt32" (kubernetes#141397).
			name: "R-EXTAVG R-INT a MaxInt64m value per pod at target 1m saturates at MaxInt32",
			spec: testSpec(1, math.MaxInt32, externalAvg("qps", "1m")), current: 1,
			metrics: obs(series(math.MaxInt64)), want: 4, proposal: p32(math.MaxInt32),
			conds: []condWant{limited(reasonScaleUpLimit)},
		},
		{
			// Upstream: the same test's "usage overflow with huge target leaves replicas unchanged":
			// a target of 9223372036854775807m, the largest milli-value there is.
			name: "R-EXTAVG R-INT a MaxInt64m value at a MaxInt64m target keeps the count",
			spec: testSpec(1, 10, externalAvg("qps", "9223372036854775807m")), current: 1,
			metrics: obs(series(math.MaxInt64)), want: 1, proposal: p32(1),
		},
		{
			name: "R-INT a huge Pods average saturates at MaxInt32, then maxReplicas clamps",
			spec: testSpec(1, 3, podsAvg("qps", "1m")), current: 2, pods: pods(1000, 1000),
			metrics: obs(samples(math.MaxInt64/4, math.MaxInt64/4)), want: 3, proposal: p32(math.MaxInt32),
			conds: []condWant{limited(reasonTooManyReplicas)},
		},
	})
}

func TestMultipleMetrics(t *testing.T) {
	runDecideCases(t, []decideCase{
		{
			name: "R-MULTI the largest proposal wins and names the reason",
			spec: testSpec(1, 20, externalValue("a", "10"), wantMetric()), current: 2, pods: pods(1000, 1000),
			metrics: obs(series(20_000), wantObs(3)), want: 4, proposal: p32(4),
			check: func(t *testing.T, d Decision, _ State) {
				if d.Explanation.WinningMetric != 0 {
					t.Errorf("WinningMetric = %d, want 0", d.Explanation.WinningMetric)
				}
				wantProposalOf(t, d, 1, 3)
			},
		},
		{
			name: "R-MULTI ties keep the earlier metric",
			spec: testSpec(1, 20, wantMetric(), wantMetric()), current: 2, metrics: obs(wantObs(5), wantObs(5)),
			want: 4, proposal: p32(5),
			check: func(t *testing.T, d Decision, _ State) {
				if d.Explanation.WinningMetric != 0 {
					t.Errorf("WinningMetric = %d, want 0", d.Explanation.WinningMetric)
				}
			},
		},
		{
			name: "R-MULTI partial failure: a scale-up still happens and ScalingActive stays ValidMetricFound",
			spec: testSpec(1, 20, cpuUtil(50), wantMetric()), current: 2, pods: pods(1000, 1000),
			metrics: obs(failed("metrics server down"), wantObs(3)), want: 3, proposal: p32(3),
			conds: []condWant{active(reasonValidMetricFound)},
			check: func(t *testing.T, d Decision, _ State) {
				wantMetricError(t, d, 0, "metrics server down")
				if d.Explanation.WinningMetric != 1 {
					t.Errorf("WinningMetric = %d, want 1", d.Explanation.WinningMetric)
				}
			},
		},
		{
			name: "R-MULTI partial failure blocks a scale-down: desired stays current, first invalid condition set",
			spec: testSpec(1, 20, cpuUtil(50), wantMetric(), podsAvg("qps", "1")), current: 5, pods: pods(1000, 1000),
			metrics: obs(failed("metrics server down"), wantObs(2), failed("adapter down")), want: 5, proposal: p32(0),
			conds: []condWant{able(reasonSucceededGetScale), active("FailedGetResourceMetric")},
			check: func(t *testing.T, d Decision, st State) {
				wantMetricError(t, d, 2, "adapter down")
				if got := d.CurrentMetrics[1].External; got == nil {
					t.Errorf("the valid metric's status is missing: %+v", d.CurrentMetrics)
				}
				if d.Explanation.WinningMetric != -1 {
					t.Errorf("WinningMetric = %d, want -1", d.Explanation.WinningMetric)
				}
				if len(st.History.Recommendations) != 0 {
					t.Errorf("a failed reconcile stored a recommendation: %v", st.History.Recommendations)
				}
			},
		},
		{
			name: "R-MULTI partial failure allows no change relative to specReplicas",
			spec: testSpec(1, 20, cpuUtil(50), wantMetric()), current: 3, status: p32(3), pods: pods(1000, 1000),
			metrics: obs(failed("x"), wantObs(3)), want: 3, proposal: p32(3),
			conds: []condWant{active(reasonValidMetricFound)},
		},
		{
			name: "R-MULTI every metric failed: no scaling, ScalingActive False with the first reason",
			spec: testSpec(1, 20, podsAvg("qps", "1"), cpuUtil(50)), current: 3, pods: pods(1000),
			metrics: obs(failed("a"), failed("b")), want: 3,
			conds: []condWant{active("FailedGetPodsMetric")},
		},
		{
			name: "R-MULTI an unknown metric type is InvalidMetricSourceType",
			spec: testSpec(1, 20, MetricSpec{Type: "Bogus"}), invalidSpec: true, current: 3, metrics: obs(Observation{}), want: 3,
			conds: []condWant{active("InvalidMetricSourceType")},
		},
	})
}

func TestReconcileBranches(t *testing.T) {
	disabledDown := rules(-1, SelectDisabled)
	runDecideCases(t, []decideCase{
		{
			name: "R-REC 4a current 0 and not scaled to zero by the HPA: ScalingDisabled, desired 0, even with min 0",
			spec: testSpec(0, 20, wantMetric()), current: 0, metrics: obs(wantObs(5)), want: 0,
			conds: []condWant{able(reasonSucceededGetScale), active(reasonScalingDisabled)},
			check: func(t *testing.T, d Decision, st State) {
				if d.CurrentMetrics != nil {
					t.Errorf("CurrentMetrics = %v, want none", d.CurrentMetrics)
				}
				if len(st.History.Recommendations) != 0 {
					t.Errorf("ScalingDisabled stored a recommendation: %v", st.History.Recommendations)
				}
			},
		},
		{
			name: "R-REC 4a ScaledToZero True but min 0 and only a cpu metric: disabled",
			spec: testSpec(0, 20, cpuUtil(50)), invalidSpec: true, current: 0, state: ptrState(scaledToZeroState()),
			pods: pods(1000), metrics: obs(samples(900)), want: 0, conds: []condWant{active(reasonScalingDisabled)},
		},
		{
			name:    "R-REC 4a scale-from-zero floor: Percent-only scale-up stuck at 0 is raised to minReplicas",
			spec:    withBehavior(testSpec(2, 20, wantMetric()), rules(-1, "", percentPolicy(100, 15)), nil),
			current: 0, state: ptrState(scaledToZeroState()), metrics: obs(wantObs(5)), want: 2, proposal: p32(5),
			check: func(t *testing.T, d Decision, _ State) {
				if d.Explanation.Limited != 0 || d.Explanation.Final != 2 {
					t.Errorf("Limited/Final = %d/%d, want 0/2", d.Explanation.Limited, d.Explanation.Final)
				}
			},
		},
		{
			// Ported from upstream scenario 149, the one scenario the first engine failed: it took
			// the below-min correction instead of the metric path.
			name:    "R-REC 4a resuming from zero (ScaledToZero True, min 1) computes metrics before any min correction: 6 proposed, default policy allows 4",
			spec:    withBehavior(testSpec(1, 20, wantMetric()), nil, nil),
			current: 0, state: ptrState(scaledToZeroState()), metrics: obs(wantObs(6)), want: 4, proposal: p32(6),
			conds: []condWant{able(reasonReadyForNewScale), active(reasonValidMetricFound), {ConditionScalingLimited, StatusTrue, reasonScaleUpLimit}},
		},
		{
			name: "R-REC 4b current above max: corrected at once, no metrics, even with scaleDown Disabled",
			spec: withBehavior(testSpec(1, 5, wantMetric()), nil, disabledDown), current: 9, metrics: obs(wantObs(9)),
			state: &State{Seeded: true, Conditions: []Condition{{Type: ConditionScalingActive, Status: StatusTrue, Reason: "Previous"}}},
			want:  5,
			conds: []condWant{able(reasonSucceededGetScale), {ConditionScalingActive, StatusTrue, "Previous"}},
			check: func(t *testing.T, d Decision, st State) {
				if len(d.CurrentMetrics) != 0 {
					t.Errorf("CurrentMetrics = %v, want empty", d.CurrentMetrics)
				}
				if _, ok := findCond(d.Conditions, ConditionScalingLimited); ok {
					t.Errorf("ScalingLimited was set on the out-of-range branch")
				}
				if len(st.History.Recommendations) != 0 {
					t.Errorf("the out-of-range branch stored a recommendation")
				}
			},
		},
		{
			name: "R-REC 4c current below min: corrected at once, no stabilization",
			spec: testSpec(4, 10, wantMetric()), current: 2, metrics: obs(wantObs(1)),
			state: ptrState(withRecs(rec(1, ago(time.Minute)))), want: 4,
		},
		{
			name: "R-REC 5 the metric path sets ValidMetricFound and ReadyForNewScale",
			spec: testSpec(1, 10, wantMetric()), current: 3, metrics: obs(wantObs(3)), want: 3, proposal: p32(3),
			conds: []condWant{able(reasonReadyForNewScale), active(reasonValidMetricFound), limited(reasonDesiredWithinRange)},
		},
	})
}

func TestNormalization(t *testing.T) {
	opts := DefaultOptions()
	noWindows := func(up, down *ScalingRules) *Spec { return withBehavior(testSpec(1, 100, wantMetric()), up, down) }
	runDecideCases(t, []decideCase{
		{
			name: "R-LEG stabilization cutoff is inclusive: a recommendation exactly W old still holds",
			spec: testSpec(1, 10, wantMetric()), current: 6, metrics: obs(wantObs(3)),
			state: ptrState(withRecs(rec(6, ago(opts.DownscaleStabilizationWindow)))), want: 6, proposal: p32(3),
			conds: []condWant{able(reasonScaleDownStabilized)},
			check: func(t *testing.T, d Decision, _ State) {
				if d.Explanation.StabilizationWindow != 5*time.Minute {
					t.Errorf("StabilizationWindow = %s, want 5m", d.Explanation.StabilizationWindow)
				}
			},
		},
		{
			name: "R-LEG a recommendation just older than W does not hold",
			spec: testSpec(1, 10, wantMetric()), current: 6, metrics: obs(wantObs(3)),
			state: ptrState(withRecs(rec(6, ago(opts.DownscaleStabilizationWindow+time.Nanosecond)))), want: 3,
			conds: []condWant{able(reasonReadyForNewScale)},
		},
		{
			name: "R-LEG no scale-up stabilization: lower recent recommendations do not hold a scale-up",
			spec: testSpec(1, 10, wantMetric()), current: 3, metrics: obs(wantObs(5)),
			state: ptrState(withRecs(rec(1, ago(time.Minute)))), want: 5,
		},
		{
			name: "R-BEH-1 behavior cutoff is strict: a recommendation exactly Wd old does not hold",
			spec: noWindows(nil, rules(300, "")), current: 6, metrics: obs(wantObs(3)),
			state: ptrState(withRecs(rec(6, ago(300*time.Second)))), want: 3,
			conds: []condWant{able(reasonReadyForNewScale)},
		},
		{
			name: "R-BEH-1 a recommendation just inside Wd holds, ScaleDownStabilized",
			spec: noWindows(nil, rules(300, "")), current: 6, metrics: obs(wantObs(3)),
			state: ptrState(withRecs(rec(5, ago(299*time.Second)))), want: 5,
			conds: []condWant{able(reasonScaleDownStabilized)},
		},
		{
			name: "R-BEH-1 unset scaleDown window uses Options.DownscaleStabilizationWindow",
			opts: &Options{Tolerance: 0.1, CPUInitializationPeriod: 5 * time.Minute, InitialReadinessDelay: 30 * time.Second, DownscaleStabilizationWindow: time.Minute},
			spec: noWindows(nil, nil), current: 6, metrics: obs(wantObs(3)),
			state: ptrState(withRecs(rec(6, ago(2*time.Minute)))), want: 3,
		},
		{
			name: "R-BEH R-BEH-2 ScalingLimited reason comes from the rate limit, ScaleDownLimit",
			spec: noWindows(nil, rules(0, "", podsPolicy(1, 60))), current: 6, metrics: obs(wantObs(3)), want: 5,
			conds: []condWant{able(reasonReadyForNewScale), limited(reasonScaleDownLimit)},
		},
		{
			name: "R-BEH-2 a scale-down below min by a permissive policy gives TooFewReplicas",
			spec: withBehavior(testSpec(3, 100, wantMetric()), nil, rules(0, "")), current: 6, metrics: obs(wantObs(1)), want: 3,
			conds: []condWant{limited(reasonTooFewReplicas)},
		},
		{
			name: "R-BEH-2 a scale-up above max by a permissive policy gives TooManyReplicas",
			spec: withBehavior(testSpec(1, 7, wantMetric()), nil, nil), current: 6, metrics: obs(wantObs(50)), want: 7,
			conds: []condWant{limited(reasonTooManyReplicas)},
		},
		{
			name: "R-POL selectPolicy Min on scale-up: the least permissive policy wins",
			spec: noWindows(rules(-1, SelectMin, podsPolicy(4, 15), percentPolicy(100, 15)), nil), current: 10,
			metrics: obs(wantObs(50)), want: 14,
			check: func(t *testing.T, d Decision, _ State) {
				if got, want := d.Explanation.LimitingPolicy, "scaleUp Pods 4/15s"; got != want {
					t.Errorf("LimitingPolicy = %q, want %q", got, want)
				}
			},
		},
		{
			name: "R-POL selectPolicy Min on scale-down: the least permissive (max) wins",
			spec: noWindows(nil, rules(0, SelectMin, podsPolicy(20, 60), percentPolicy(1, 60))), current: 100,
			metrics: obs(wantObs(2)), want: 99,
		},
		{
			name: "R-POL selectPolicy Disabled on scale-up: no upward movement",
			spec: noWindows(rules(-1, SelectDisabled), nil), current: 3, metrics: obs(wantObs(9)), want: 3,
			conds: []condWant{limited(reasonScaleUpLimit)},
		},
		{
			name: "R-POL selectPolicy Disabled on scale-down: no downward movement",
			spec: noWindows(nil, rules(0, SelectDisabled)), current: 9, metrics: obs(wantObs(3)), want: 9,
			conds: []condWant{limited(reasonScaleDownLimit)},
		},
		{
			name: "R-POL events at exactly now - period no longer count (strict)",
			spec: noWindows(rules(-1, "", podsPolicy(4, 60)), nil), current: 10, metrics: obs(wantObs(50)),
			state: &State{Seeded: true, History: History{ScaleUpEvents: []ScaleEvent{ev(4, ago(60*time.Second))}}},
			want:  14,
		},
		{
			// Upstream: horizontal_test.go TestCalculateScaleUpLimitWithScalingRules, "percent policy
			// overflow saturates to MaxInt32" (kubernetes#141397).
			name:    "R-POL R-INT a Percent scale-up limit past MaxInt32 saturates",
			spec:    withBehavior(testSpec(1, math.MaxInt32, wantMetric()), rules(-1, "", percentPolicy(math.MaxInt32, 60)), nil),
			current: 100, metrics: obs(series(math.MaxInt64)), want: math.MaxInt32,
		},
		{
			// Upstream wraps here (int32 sum): 2147483600 + 100 would be negative, a scale-down.
			name:    "R-POL R-INT a Pods scale-up limit past MaxInt32 saturates (upstream wraps)",
			spec:    withBehavior(testSpec(1, math.MaxInt32, wantMetric()), rules(-1, "", podsPolicy(100, 60)), nil),
			current: math.MaxInt32 - 47, metrics: obs(series(math.MaxInt64)), want: math.MaxInt32,
		},
		{
			// 2 x MaxInt32 removed in the period: the period started far above current, so the
			// policy allows no scale-down. Upstream's int32 sum wraps to -2 and allows 10 -> 7.
			name: "R-POL R-INT scale events summing past MaxInt32 do not wrap the period's start",
			spec: noWindows(nil, rules(0, "", podsPolicy(1, 60))), current: 10, metrics: obs(wantObs(1)),
			state: &State{Seeded: true, History: History{ScaleDownEvents: []ScaleEvent{
				ev(math.MaxInt32, ago(10*time.Second)), ev(math.MaxInt32, ago(20*time.Second))}}},
			want: 10,
		},
		{
			name: "R-POL scale-down Pods policy may go negative: the limit is then minReplicas",
			spec: noWindows(nil, rules(0, "", podsPolicy(10, 60))), current: 3, metrics: obs(wantObs(0)), want: 1,
			conds: []condWant{limited(reasonTooFewReplicas)},
		},
	})
}

// TestLegacyScaleUpLimitSaturates is R-LEG-2 at the int32 edge: upstream's plain int32(...) of
// max(2 x 1500000000, 4) wraps to MinInt32 and the "limit" becomes a scale to zero; the engine
// saturates (R-INT), so the legacy path decides as upstream's behavior path would.
func TestLegacyScaleUpLimitSaturates(t *testing.T) {
	runDecideCases(t, []decideCase{
		{
			name: "R-LEG-2 R-INT the legacy scale-up limit past MaxInt32 saturates",
			spec: testSpec(1, math.MaxInt32, wantMetric()), current: 1_500_000_000,
			metrics: obs(series(math.MaxInt64)), want: math.MaxInt32, proposal: p32(math.MaxInt32),
			conds: []condWant{limited(reasonDesiredWithinRange)},
			check: func(t *testing.T, d Decision, _ State) {
				if d.Explanation.LimitingPolicy != "" {
					t.Errorf("LimitingPolicy = %q, want none", d.Explanation.LimitingPolicy)
				}
			},
		},
		{
			name: "R-LEG-2 R-INT a maxReplicas below the saturated limit caps with TooManyReplicas",
			spec: testSpec(1, math.MaxInt32-1, wantMetric()), current: 1_500_000_000,
			metrics: obs(series(math.MaxInt64)), want: math.MaxInt32 - 1,
			conds: []condWant{limited(reasonTooManyReplicas)},
		},
	})
}

// TestScaleUpCap is R-CAP's table: legacy max(2c, 4) vs default behavior max(c+4, 2c).
func TestScaleUpCap(t *testing.T) {
	tests := []struct {
		name              string
		current           int32
		legacy, behaviour int32
	}{
		{name: "R-CAP current 0", current: 0, legacy: 4, behaviour: 4},
		{name: "R-CAP current 1", current: 1, legacy: 4, behaviour: 5},
		{name: "R-CAP current 2", current: 2, legacy: 4, behaviour: 6},
		{name: "R-CAP current 3", current: 3, legacy: 6, behaviour: 7},
		{name: "R-CAP current 10", current: 10, legacy: 20, behaviour: 20},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := seededEmpty()
			if tc.current == 0 {
				st = scaledToZeroState()
			}
			legacy := testSpec(0, 1000, wantMetric())
			behaviour := withBehavior(testSpec(0, 1000, wantMetric()), nil, nil)
			dl, _ := decide(legacy, tc.current, nil, obs(wantObs(500)), st)
			db, _ := decide(behaviour, tc.current, nil, obs(wantObs(500)), st)
			got := [2]int32{dl.DesiredReplicas, db.DesiredReplicas}
			if diff := cmp.Diff(got, [2]int32{tc.legacy, tc.behaviour}); diff != "" {
				t.Errorf("[legacy, behavior] (-got +want):\n%s", diff)
			}
		})
	}
	// A lone tolerance switches to the behavior path.
	d, _ := decide(withBehavior(testSpec(1, 1000, wantMetric()), tolerance("0.1"), nil), 1, nil, obs(wantObs(500)), seededEmpty())
	if d.DesiredReplicas != 5 {
		t.Errorf("R-CAP lone tolerance: DesiredReplicas = %d, want 5 (behavior path)", d.DesiredReplicas)
	}
}

// TestTolerance covers R-TOL: default, per direction, and where it applies.
func TestTolerance(t *testing.T) {
	runDecideCases(t, []decideCase{
		{
			name: "R-TOL R-TOL-2 Options.Tolerance is the default for both directions",
			opts: &Options{Tolerance: 0.5, CPUInitializationPeriod: 5 * time.Minute, InitialReadinessDelay: 30 * time.Second, DownscaleStabilizationWindow: 5 * time.Minute},
			spec: testSpec(1, 20, externalValue("q", "10")), current: 4, pods: pods(1, 1, 1, 1),
			metrics: obs(series(14_000)), want: 4, proposal: p32(4),
		},
		{
			name: "R-TOL-3 behavior tolerance overrides only its own direction",
			opts: &Options{Tolerance: 0.5, CPUInitializationPeriod: 5 * time.Minute, InitialReadinessDelay: 30 * time.Second, DownscaleStabilizationWindow: 5 * time.Minute},
			spec: withBehavior(testSpec(1, 20, externalValue("q", "10")), tolerance("0.05"), nil), current: 4, pods: pods(1, 1, 1, 1),
			metrics: obs(series(14_000)), want: 6, proposal: p32(6),
		},
		{
			name: "R-TOL-4 the up tolerance also applies to External AverageValue",
			spec: withBehavior(testSpec(1, 20, externalAvg("q", "1")), tolerance("0.5"), nil), current: 4,
			metrics: obs(series(5_600)), want: 4, proposal: p32(4),
		},
	})
}

// TestHistory covers R-HIST: the first-sight seed and recommendation slot reuse.
func TestHistory(t *testing.T) {
	t.Run("R-HIST first sight seeds {current, now} and then records the recommendation", func(t *testing.T) {
		_, st := decide(testSpec(1, 10, wantMetric()), 6, nil, obs(wantObs(3)), State{})
		want := State{Seeded: true, History: History{Recommendations: []Recommendation{rec(6, tNow), rec(3, tNow)}}}
		if diff := cmp.Diff(st.History, want.History); diff != "" || !st.Seeded {
			t.Errorf("seeded=%v history (-got +want):\n%s", st.Seeded, diff)
		}
	})
	t.Run("R-HIST a seeded empty history is not seeded again", func(t *testing.T) {
		_, st := decide(testSpec(1, 10, wantMetric()), 6, nil, obs(wantObs(3)), seededEmpty())
		if diff := cmp.Diff(st.History.Recommendations, []Recommendation{rec(3, tNow)}); diff != "" {
			t.Errorf("recommendations (-got +want):\n%s", diff)
		}
	})
	t.Run("R-LEG R-HIST the last expired slot is reused; other expired slots stay", func(t *testing.T) {
		prev := withRecs(rec(1, ago(20*time.Minute)), rec(2, ago(10*time.Minute)), rec(3, ago(time.Minute)))
		_, st := decide(testSpec(1, 10, wantMetric()), 3, nil, obs(wantObs(4)), prev)
		want := []Recommendation{rec(1, ago(20*time.Minute)), rec(4, tNow), rec(3, ago(time.Minute))}
		if diff := cmp.Diff(st.History.Recommendations, want); diff != "" {
			t.Errorf("recommendations (-got +want):\n%s", diff)
		}
	})
	t.Run("R-BEH-1 R-HIST a slot is reusable only when older than both windows", func(t *testing.T) {
		spec := withBehavior(testSpec(1, 10, wantMetric()), rules(600, ""), rules(60, ""))
		prev := withRecs(rec(1, ago(5*time.Minute)), rec(2, ago(11*time.Minute)), rec(3, ago(7*time.Minute)))
		_, st := decide(spec, 3, nil, obs(wantObs(3)), prev)
		want := []Recommendation{rec(1, ago(5*time.Minute)), rec(3, tNow), rec(3, ago(7*time.Minute))}
		if diff := cmp.Diff(st.History.Recommendations, want); diff != "" {
			t.Errorf("recommendations (-got +want):\n%s", diff)
		}
	})
	t.Run("R-BEH-1 the pre-clamp recommendation is stored", func(t *testing.T) {
		spec := withBehavior(testSpec(1, 10, wantMetric()), nil, rules(300, ""))
		d, st := decide(spec, 6, nil, obs(wantObs(2)), withRecs(rec(6, ago(time.Minute))))
		if d.DesiredReplicas != 6 {
			t.Fatalf("DesiredReplicas = %d, want 6", d.DesiredReplicas)
		}
		if got := st.History.Recommendations[len(st.History.Recommendations)-1]; got != rec(2, tNow) {
			t.Errorf("stored %v, want {2, now}", got)
		}
	})
}

// TestConditionTransitions: lastTransitionTime moves only when the status flips.
func TestConditionTransitions(t *testing.T) {
	old := ago(time.Hour)
	prev := State{Seeded: true, Conditions: []Condition{
		{Type: ConditionAbleToScale, Status: StatusTrue, Reason: reasonSucceededRescale, LastTransitionTime: old},
		{Type: ConditionScalingActive, Status: StatusFalse, Reason: "FailedGetResourceMetric", LastTransitionTime: old},
		{Type: ConditionScalingLimited, Status: StatusFalse, Reason: reasonDesiredWithinRange, LastTransitionTime: old},
	}}
	spec := testSpec(1, 5, wantMetric())
	d, st := decide(spec, 3, nil, obs(wantObs(9)), prev)
	type tr struct {
		Type, Status, Reason string
		At                   time.Time
	}
	var got []tr
	for _, c := range d.Conditions {
		got = append(got, tr{c.Type, c.Status, c.Reason, c.LastTransitionTime})
	}
	want := []tr{
		{ConditionAbleToScale, StatusTrue, reasonReadyForNewScale, old},    // reason changed, status did not
		{ConditionScalingActive, StatusTrue, reasonValidMetricFound, tNow}, // flipped
		{ConditionScalingLimited, StatusTrue, reasonTooManyReplicas, tNow}, // flipped
	}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("conditions (-got +want):\n%s", diff)
	}
	if diff := cmp.Diff(st.Conditions, d.Conditions); diff != "" {
		t.Errorf("state conditions differ from the decision's (-state +decision):\n%s", diff)
	}
	if prev.Conditions[1].Status != StatusFalse || prev.Conditions[1].LastTransitionTime != old {
		t.Errorf("Decide mutated the previous state's conditions: %+v", prev.Conditions)
	}
	// Order: new types are appended after the existing ones.
	d2, _ := decide(spec, 3, nil, obs(wantObs(3)), State{})
	var types []string
	for _, c := range d2.Conditions {
		types = append(types, c.Type)
	}
	if diff := cmp.Diff(types, []string{ConditionAbleToScale, ConditionScalingActive, ConditionScalingLimited}); diff != "" {
		t.Errorf("condition order (-got +want):\n%s", diff)
	}
}

func TestRecordRescale(t *testing.T) {
	behavior := withBehavior(testSpec(0, 100, wantMetric()), rules(-1, "", podsPolicy(4, 60)), rules(0, "", podsPolicy(4, 120)))
	legacy := testSpec(0, 100, wantMetric())
	cpuOnly := withBehavior(testSpec(1, 100, cpuUtil(50)), nil, nil)
	dec := func(cur, want int32) *Decision { return &Decision{CurrentReplicas: cur, DesiredReplicas: want} }
	tests := []struct {
		name      string
		spec      *Spec
		st        State
		d         *Decision
		ok        bool
		wantHist  History
		wantConds []condWant
		wantMsg   string
	}{
		{
			name: "R-HIST success with behavior stores an up event; ScaledToZero False",
			spec: behavior, st: seededEmpty(), d: dec(3, 5), ok: true,
			wantHist:  History{ScaleUpEvents: []ScaleEvent{ev(2, tNow)}},
			wantConds: []condWant{able(reasonSucceededRescale), {ConditionScaledToZero, StatusFalse, reasonNotScaledToZero}},
		},
		{
			name: "R-HIST success with behavior stores a down event",
			spec: behavior, st: seededEmpty(), d: dec(5, 2), ok: true,
			wantHist:  History{ScaleDownEvents: []ScaleEvent{ev(3, tNow)}},
			wantConds: []condWant{able(reasonSucceededRescale)},
		},
		{
			name: "R-HIST legacy (no behavior) stores no event",
			spec: legacy, st: seededEmpty(), d: dec(3, 5), ok: true,
			wantConds: []condWant{able(reasonSucceededRescale)},
		},
		{
			name: "R-HIST a failed write stores no event: AbleToScale False FailedUpdateScale",
			spec: behavior, st: seededEmpty(), d: dec(3, 5), ok: false,
			wantConds: []condWant{{ConditionAbleToScale, StatusFalse, reasonFailedUpdateScale}},
			wantMsg:   "conflict",
		},
		{
			name: "R-HIST the new event overwrites the last outdated slot of its direction only",
			spec: behavior,
			st: State{Seeded: true, History: History{
				ScaleUpEvents:   []ScaleEvent{ev(1, ago(10*time.Minute)), ev(2, ago(5*time.Minute)), ev(3, ago(30*time.Second))},
				ScaleDownEvents: []ScaleEvent{ev(7, ago(10*time.Minute))},
			}},
			d: dec(3, 4), ok: true,
			wantHist: History{
				ScaleUpEvents:   []ScaleEvent{ev(1, ago(10*time.Minute)), ev(1, tNow), ev(3, ago(30*time.Second))},
				ScaleDownEvents: []ScaleEvent{ev(7, ago(10*time.Minute))},
			},
		},
		{
			name: "R-REC 6 scaled to zero by the HPA: current > 0, desired 0, min 0, External metric -> ScaledToZero True",
			spec: legacy, st: seededEmpty(), d: dec(3, 0), ok: true,
			wantConds: []condWant{able(reasonSucceededRescale), {ConditionScaledToZero, StatusTrue, reasonScaledToZero}},
		},
		{
			name: "R-REC 6 scale from zero sets ScaledToZero False",
			spec: legacy, st: scaledToZeroState(), d: dec(0, 4), ok: true,
			wantConds: []condWant{{ConditionScaledToZero, StatusFalse, reasonNotScaledToZero}},
		},
		{
			name: "R-REC 6 desired 0 without an Object/External metric is not ScaledToZero",
			spec: cpuOnly, st: seededEmpty(), d: dec(3, 0), ok: true,
			wantHist:  History{ScaleDownEvents: []ScaleEvent{ev(3, tNow)}},
			wantConds: []condWant{{ConditionScaledToZero, StatusFalse, reasonNotScaledToZero}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.st.Clone()
			errMsg := ""
			if !tc.ok {
				errMsg = "conflict"
			}
			got := RecordRescale(tNow, tc.spec, tc.st, tc.d, tc.ok, errMsg)
			if diff := cmp.Diff(got.History, tc.wantHist); diff != "" {
				t.Errorf("history (-got +want):\n%s", diff)
			}
			if len(tc.wantConds) > 0 {
				if diff := cmp.Diff(condsOf(got.Conditions, tc.wantConds), tc.wantConds); diff != "" {
					t.Errorf("conditions (-got +want):\n%s", diff)
				}
			}
			if tc.wantMsg != "" {
				c, _ := findCond(got.Conditions, ConditionAbleToScale)
				if !strings.Contains(c.Message, tc.wantMsg) {
					t.Errorf("AbleToScale message = %q, want it to contain %q", c.Message, tc.wantMsg)
				}
			}
			if diff := cmp.Diff(tc.st, before); diff != "" {
				t.Errorf("RecordRescale mutated its input state (-after +before):\n%s", diff)
			}
		})
	}
}

// TestPrune: nothing a valid spec can read is dropped, and a replayed timeline decides the same
// with and without pruning.
func TestPrune(t *testing.T) {
	opts := DefaultOptions()
	t.Run("R-HIST keeps everything inside the longest window and period", func(t *testing.T) {
		h := History{
			Recommendations: []Recommendation{rec(1, ago(MaxStabilizationWindow+time.Second)), rec(2, ago(MaxStabilizationWindow)), rec(3, ago(time.Second))},
			ScaleUpEvents:   []ScaleEvent{ev(1, ago(MaxPolicyPeriod+time.Second)), ev(2, ago(MaxPolicyPeriod))},
			ScaleDownEvents: []ScaleEvent{ev(3, ago(MaxPolicyPeriod-time.Second)), ev(4, ago(2*MaxPolicyPeriod))},
		}
		got := Prune(h, tNow, opts)
		want := History{
			Recommendations: []Recommendation{rec(2, ago(MaxStabilizationWindow)), rec(3, ago(time.Second))},
			ScaleUpEvents:   []ScaleEvent{ev(2, ago(MaxPolicyPeriod))},
			ScaleDownEvents: []ScaleEvent{ev(3, ago(MaxPolicyPeriod-time.Second))},
		}
		if diff := cmp.Diff(got, want); diff != "" {
			t.Errorf("Prune (-got +want):\n%s", diff)
		}
	})
	t.Run("R-HIST a longer Options window keeps legacy recommendations", func(t *testing.T) {
		long := opts
		long.DownscaleStabilizationWindow = 2 * time.Hour
		h := History{Recommendations: []Recommendation{rec(1, ago(90*time.Minute))}}
		if got := Prune(h, tNow, long); len(got.Recommendations) != 1 {
			t.Errorf("Prune dropped a recommendation the 2h legacy window reads: %v", got)
		}
	})
	for _, spec := range []*Spec{
		withBehavior(testSpec(1, 100, wantMetric()), rules(3600, SelectMax, podsPolicy(3, 1800), percentPolicy(10, 60)),
			rules(3600, SelectMin, podsPolicy(2, 1800), percentPolicy(50, 900))),
		withBehavior(testSpec(1, 100, wantMetric()), rules(120, "", podsPolicy(1, 600)), rules(-1, "", percentPolicy(20, 1800))),
		testSpec(1, 100, wantMetric()),
	} {
		t.Run("R-HIST replay with and without pruning decides the same", func(t *testing.T) {
			without, with, _ := replayPruned(t, opts, 400, func(i int) (time.Duration, *Spec, int32) {
				return time.Duration(15+(i*37)%400) * time.Second, spec, int32(1 + (i*7919)%60)
			})
			if n, m := len(without.History.Recommendations), len(with.History.Recommendations); m > n {
				t.Errorf("pruned history is longer (%d) than unpruned (%d)", m, n)
			}
		})
	}
}

// replayPruned decides n calls twice, once keeping the full history and once pruning it after
// every call, failing at the first decision that differs. step(i) gives the time since the
// previous call, the spec and the metric value of call i. It returns both final states and the
// longest pruned list of recommendations seen.
func replayPruned(t *testing.T, opts Options, n int, step func(i int) (time.Duration, *Spec, int32)) (without, with State, longest int) {
	t.Helper()
	at := tNow
	current := int32(10)
	for i := range n {
		gap, spec, load := step(i)
		at = at.Add(gap)
		in := Input{Spec: spec, CurrentReplicas: current, StatusReplicas: current, Metrics: obs(wantObs(load))}
		d1, s1 := Decide(at, opts, in, without)
		d2, s2 := Decide(at, opts, in, with)
		if diff := cmp.Diff(d1, d2); diff != "" {
			t.Fatalf("call %d: decisions differ (-unpruned +pruned):\n%s", i, diff)
		}
		if d1.Scale() {
			s1 = RecordRescale(at, spec, s1, &d1, true, "")
			s2 = RecordRescale(at, spec, s2, &d2, true, "")
			current = d1.DesiredReplicas
		}
		without = s1
		s2.History = Prune(s2.History, at, opts)
		with = s2
		longest = max(longest, len(with.History.Recommendations))
	}
	return without, with, longest
}

// TestPruneDropsDominatedRecommendations: a recommendation that a later one equals or brackets
// is dropped whatever its place in the list (slot reuse leaves it out of time order); one above
// or below every later one stays.
func TestPruneDropsDominatedRecommendations(t *testing.T) {
	h := History{Recommendations: []Recommendation{
		rec(6, ago(10*time.Second)), // as new as the 5, earlier in the list, above it: kept
		rec(5, ago(10*time.Second)), // newest (a tie goes to the later slot): kept
		rec(9, ago(50*time.Second)), // above every later one: kept
		rec(7, ago(40*time.Second)), // above every later one (6, 5, 3, 2): kept
		rec(5, ago(60*time.Second)), // equal to a later one: dropped
		rec(3, ago(30*time.Second)), // below every later one: kept
		rec(4, ago(45*time.Second)), // bracketed by later ones (3 and 7): dropped
		rec(2, ago(35*time.Second)), // below every later one: kept
		rec(4, ago(33*time.Second)), // bracketed by the later 3 and 5: dropped
		rec(2, ago(90*time.Second)), // equal to a later one: dropped
	}}
	got := Prune(h, tNow, DefaultOptions())
	want := []Recommendation{rec(6, ago(10*time.Second)), rec(5, ago(10*time.Second)), rec(9, ago(50*time.Second)),
		rec(7, ago(40*time.Second)), rec(3, ago(30*time.Second)), rec(2, ago(35*time.Second))}
	if diff := cmp.Diff(got.Recommendations, want); diff != "" {
		t.Errorf("Prune (-got +want):\n%s", diff)
	}
	if len(h.Recommendations) != 10 || h.Recommendations[4] != rec(5, ago(60*time.Second)) {
		t.Errorf("Prune modified its argument: %v", h.Recommendations)
	}
}

// TestPruneUnderFrequentCalls: a target decided every second (sixty times upstream's resync)
// for three hours, its spec switching between behaviors with windows from 0 to 3600 s and the
// legacy normalizer, decides exactly as with its full history, and its pruned history stays
// small while the full one grows with every call.
func TestPruneUnderFrequentCalls(t *testing.T) {
	opts := DefaultOptions()
	specs := []*Spec{
		withBehavior(testSpec(1, 100, wantMetric()), rules(3600, SelectMax, podsPolicy(3, 1800), percentPolicy(10, 60)),
			rules(3600, SelectMin, podsPolicy(2, 1800), percentPolicy(50, 900))),
		withBehavior(testSpec(1, 100, wantMetric()), rules(0, "", podsPolicy(4, 15)), rules(300, "", percentPolicy(100, 15))),
		withBehavior(testSpec(1, 100, wantMetric()), rules(120, "", podsPolicy(1, 600)), rules(-1, "", percentPolicy(20, 1800))),
		testSpec(1, 100, wantMetric()),
	}
	without, _, longest := replayPruned(t, opts, 3*3600, func(i int) (time.Duration, *Spec, int32) {
		// A noisy, drifting load: values wander over the whole range and come back.
		return time.Second, specs[(i/1500)%len(specs)], int32(1 + (i*7919+(i/600)*131)%60)
	})
	// Upstream's own slot reuse bounds the full list by the longest window in use.
	if n := len(without.History.Recommendations); n < 1000 {
		t.Fatalf("the unpruned history has %d recommendations: the replay did not exercise a long history", n)
	}
	// At most two per distinct count (1..100); in practice far fewer.
	if longest > 2*100 {
		t.Errorf("the pruned history reached %d recommendations", longest)
	}
	t.Logf("unpruned history: %d recommendations; pruned: at most %d", len(without.History.Recommendations), longest)
}

func TestSimulate(t *testing.T) {
	spec := withBehavior(testSpec(1, 100, wantMetric()), nil, rules(0, ""))
	t.Run("R-HIST currentReplicas carries the previous desired; statusReplicas defaults to current", func(t *testing.T) {
		steps := []Step{
			{Time: tNow, Metrics: obs(wantObs(6))},
			{Time: tNow.Add(time.Minute), Metrics: obs(wantObs(6))},
			{Time: tNow.Add(2 * time.Minute), CurrentReplicas: p32(9), Metrics: obs(wantObs(9))},
			{Time: tNow.Add(3 * time.Minute), StatusReplicas: p32(3), Metrics: obs(wantObs(9))},
		}
		ds, st := Simulate(DefaultOptions(), spec, 2, nil, steps)
		type row struct{ Current, Desired int32 }
		var got []row
		for _, d := range ds {
			got = append(got, row{d.CurrentReplicas, d.DesiredReplicas})
		}
		// Step 1: statusReplicas defaults to 6 -> 6/(1x6) within -> 6. Step 3: status 3 -> ceil(9) = 9.
		want := []row{{2, 6}, {6, 6}, {9, 9}, {9, 9}}
		if diff := cmp.Diff(got, want); diff != "" {
			t.Errorf("steps (-got +want):\n%s", diff)
		}
		if diff := cmp.Diff(st.History.ScaleUpEvents, []ScaleEvent{ev(4, tNow)}); diff != "" {
			t.Errorf("events (-got +want):\n%s", diff)
		}
		c, _ := findCond(ds[0].Conditions, ConditionAbleToScale)
		if c.Reason != reasonSucceededRescale {
			t.Errorf("step 0 AbleToScale = %s, want SucceededRescale (conditions after the write)", c.Reason)
		}
	})
	t.Run("R-HIST nil initial state seeds with step 0's count; non-nil does not", func(t *testing.T) {
		steps := []Step{{Time: tNow, Metrics: obs(wantObs(2))}}
		legacy := testSpec(1, 100, wantMetric())
		ds, st := Simulate(DefaultOptions(), legacy, 6, nil, steps)
		if ds[0].DesiredReplicas != 6 {
			t.Errorf("nil initial: DesiredReplicas = %d, want 6 (held by the seed)", ds[0].DesiredReplicas)
		}
		if diff := cmp.Diff(st.History.Recommendations, []Recommendation{rec(6, tNow), rec(2, tNow)}); diff != "" {
			t.Errorf("nil initial history (-got +want):\n%s", diff)
		}
		ds, st = Simulate(DefaultOptions(), legacy, 6, &State{}, steps)
		if ds[0].DesiredReplicas != 2 {
			t.Errorf("empty initial: DesiredReplicas = %d, want 2 (no seed)", ds[0].DesiredReplicas)
		}
		if !st.Seeded {
			t.Errorf("final state not marked seeded")
		}
	})
	t.Run("R-HIST Simulate does not mutate the initial state", func(t *testing.T) {
		init := withRecs(rec(5, ago(time.Minute)))
		before := init.Clone()
		Simulate(DefaultOptions(), spec, 5, &init, []Step{{Time: tNow, Metrics: obs(wantObs(9))}})
		if diff := cmp.Diff(init, before); diff != "" {
			t.Errorf("initial state mutated (-after +before):\n%s", diff)
		}
	})
}
