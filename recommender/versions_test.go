package recommender

import (
	"math"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Every way Kubernetes 1.34 to 1.38 decide differently (Rules), one case each, run under every
// release: the answers must differ exactly where the cited upstream change says. The releases'
// own source (pkg/controller/podautoscaler of v1.34.4, v1.35.4, v1.36.3, v1.37.2 and
// v1.38.0-beta.0) is where each was read; docs/ALGORITHM.md tables them.

// versionCase is one decision made under each supported release.
type versionCase struct {
	name string
	// upstream is the change the case pins (for the reader; the table in docs/ALGORITHM.md
	// cites the same).
	upstream string
	// gates adjusts the options (feature gates) before each release's decision.
	gates   func(*Options)
	spec    *Spec
	current int32
	status  *int32
	pods    []Pod
	metrics []Observation
	// state defaults to seededEmpty() (no first-sight seed) when not Seeded.
	state State
	// want is the desired count under 1.34, 1.35, 1.36, 1.37 and 1.38, in that order.
	want [5]int32
	// check runs per release after the count is checked.
	check func(t *testing.T, version string, d Decision, st State)
}

func runVersionCases(t *testing.T, cases []versionCase) {
	t.Helper()
	versions := KubernetesVersions()
	for _, tc := range cases {
		for i, v := range versions {
			t.Run(tc.name+"/"+v, func(t *testing.T) {
				if errs := ValidateSpec(tc.spec, "spec"); len(errs) > 0 {
					t.Fatalf("test spec is invalid: %v", errs)
				}
				opts := DefaultOptions()
				opts.KubernetesVersion = v
				if tc.gates != nil {
					tc.gates(&opts)
				}
				if _, err := RulesFor(opts); err != nil {
					t.Fatalf("RulesFor: %v", err)
				}
				status := tc.current
				if tc.status != nil {
					status = *tc.status
				}
				prev := tc.state.Clone()
				if !prev.Seeded {
					prev = seededEmpty()
				}
				d, st := Decide(tNow, opts, Input{Spec: tc.spec, CurrentReplicas: tc.current, StatusReplicas: status,
					Pods: tc.pods, Metrics: tc.metrics}, prev)
				if d.DesiredReplicas != tc.want[i] {
					t.Errorf("Kubernetes %s (%s): desired %d, want %d; explanation: %s", v, tc.upstream, d.DesiredReplicas, tc.want[i], d.Explanation.Message)
				}
				if tc.check != nil {
					tc.check(t, v, d, st)
				}
			})
		}
	}
}

func before(v, than string) bool { return v < than } // "1.34" < "1.38": same length, so lexical order works

func activeMessage(d Decision) string {
	c, _ := findCond(d.Conditions, ConditionScalingActive)
	return c.Message
}

func TestVersionsTerminalPods(t *testing.T) {
	runVersionCases(t, []versionCase{{
		// 1.34 to 1.37 ignore Failed pods only: a Succeeded pod without a sample is "missing"
		// and, on this scale-down, filled at its full request, which holds the count at 4.
		name:     "a Succeeded pod is counted until 1.38",
		upstream: "kubernetes/kubernetes#141302",
		spec:     testSpec(1, 10, cpuUtil(50)),
		current:  4,
		pods:     with(uniformPods(4, 1000), 3, phase(PodSucceeded)),
		metrics:  obs(samples(200, 200, 200)),
		want:     [5]int32{4, 4, 4, 4, 2},
		check: func(t *testing.T, v string, d Decision, _ State) {
			m := d.Explanation.Metrics[0]
			wantIgnored, wantMissing := int32(0), int32(1)
			if !before(v, "1.38") {
				wantIgnored, wantMissing = 1, 0
			}
			if m.IgnoredPods != wantIgnored || m.MissingPods != wantMissing {
				t.Errorf("ignored %d missing %d, want %d and %d", m.IgnoredPods, m.MissingPods, wantIgnored, wantMissing)
			}
		},
	}})
}

func TestVersionsMissingContainer(t *testing.T) {
	// p2 has no container "app": 1.34 counts it with a request of 0 (and, without a sample, as
	// missing: 0 on this scale-up), so the metric proposes ceil(3 x 3) = 9, capped at
	// max(2 x 3, 4) = 6; from 1.35 the metric fails and nothing changes.
	ps := uniformPods(3, 1000)
	ps[2].Containers[0].Name = "other"
	runVersionCases(t, []versionCase{{
		name:     "a pod without the named container",
		upstream: "kubernetes/kubernetes#133415",
		spec:     testSpec(1, 10, containerUtil("cpu", "app", 50)),
		current:  3,
		pods:     ps,
		metrics:  obs(samples(1500, 1500)),
		want:     [5]int32{6, 3, 3, 3, 3},
		check: func(t *testing.T, v string, d Decision, _ State) {
			msg := activeMessage(d)
			if fails := strings.Contains(msg, "container app not found in Pod p2"); fails == (v == "1.34") {
				t.Errorf("ScalingActive message %q", msg)
			}
		},
	}})
}

func TestVersionsPodOverhead(t *testing.T) {
	// Pod-level request 1 CPU plus 250m overhead, 1200m used: 96 % of 1250m (inside the
	// tolerance) until 1.37, 120 % of 1000m from 1.38.
	ps := uniformPods(4, 1000)
	for i := range ps {
		ps[i].Requests = map[string]resource.Quantity{"cpu": resource.MustParse("1")}
		ps[i].Overhead = map[string]resource.Quantity{"cpu": resource.MustParse("250m")}
	}
	runVersionCases(t, []versionCase{{
		name:     "pod overhead in pod-level requests",
		upstream: "kubernetes/kubernetes#142154",
		spec:     testSpec(1, 10, cpuUtil(100)),
		current:  4,
		pods:     ps,
		metrics:  obs(samples(1200, 1200, 1200, 1200)),
		want:     [5]int32{4, 4, 4, 4, 5},
		check: func(t *testing.T, v string, d Decision, _ State) {
			want := int32(96)
			if !before(v, "1.38") {
				want = 120
			}
			if got := *d.CurrentMetrics[0].Resource.Current.AverageUtilization; got != want {
				t.Errorf("utilization %d, want %d", got, want)
			}
		},
	}})
}

func TestVersionsOverheadAloneIsARequest(t *testing.T) {
	// A pod-level request for memory only, overhead for cpu, no container requests cpu: until
	// 1.37 the overhead is the pod's cpu request; 1.38 finds none and fails the metric.
	ps := uniformPods(2, 1000)
	for i := range ps {
		delete(ps[i].Containers[0].Requests, "cpu")
		ps[i].Requests = map[string]resource.Quantity{"memory": resource.MustParse("1Gi")}
		ps[i].Overhead = map[string]resource.Quantity{"cpu": resource.MustParse("500m")}
	}
	runVersionCases(t, []versionCase{{
		name:     "overhead only",
		upstream: "kubernetes/kubernetes#142154",
		spec:     testSpec(1, 10, cpuUtil(100)),
		current:  2,
		pods:     ps,
		metrics:  obs(samples(1000, 1000)),
		want:     [5]int32{4, 4, 4, 4, 2},
		check: func(t *testing.T, v string, d Decision, _ State) {
			if fails := strings.Contains(activeMessage(d), "missing pod-level request for cpu in Pod p0"); fails != !before(v, "1.38") {
				t.Errorf("ScalingActive message %q", activeMessage(d))
			}
		},
	}})
}

func TestVersionsSidecarRequestOrder(t *testing.T) {
	// Neither the app container nor the sidecar requests cpu: 1.38 visits init containers
	// first (podutil.ContainerIter), so its message names the sidecar.
	ps := uniformPods(2, 1000)
	for i := range ps {
		delete(ps[i].Containers[0].Requests, "cpu")
		ps[i].InitContainers = []Container{{Name: "proxy", RestartPolicy: "Always"}}
	}
	runVersionCases(t, []versionCase{{
		name:     "missing requests on app and sidecar",
		upstream: "v1.38.0-beta.0 calculatePodRequestsFromContainers",
		spec:     testSpec(1, 10, cpuUtil(50)),
		current:  2,
		pods:     ps,
		metrics:  obs(samples(100, 100)),
		want:     [5]int32{2, 2, 2, 2, 2},
		check: func(t *testing.T, v string, d Decision, _ State) {
			want := "missing request for cpu in container app of Pod p0"
			if !before(v, "1.38") {
				want = "missing request for cpu in container proxy of Pod p0"
			}
			if !strings.Contains(activeMessage(d), want) {
				t.Errorf("ScalingActive message %q, want it to contain %q", activeMessage(d), want)
			}
		},
	}})
}

func TestVersionsObjectAverageValueName(t *testing.T) {
	runVersionCases(t, []versionCase{{
		name:     "Object AverageValue metric name",
		upstream: "v1.38.0-beta.0 computeStatusForObjectMetric",
		spec:     testSpec(1, 10, objectAvg("rps", "10")),
		current:  2,
		pods:     uniformPods(2, 1000),
		metrics:  obs(value(50000)),
		want:     [5]int32{4, 4, 4, 4, 4},
		check: func(t *testing.T, v string, d Decision, _ State) {
			want := "from external metric rps(<nil>)"
			if !before(v, "1.38") {
				want = "from Ingress metric rps"
			}
			if !strings.HasSuffix(activeMessage(d), want) {
				t.Errorf("ScalingActive message %q, want it to end %q", activeMessage(d), want)
			}
		},
	}})
}

func TestVersionsConfigurableTolerance(t *testing.T) {
	// Usage 5.2 against 1 per pod at 4 replicas: ratio 1.3. A scaleUp tolerance of 0.5 holds
	// the count wherever HPAConfigurableTolerance is on; with the gate off the flag's 0.1
	// applies and the count goes to 6.
	spec := withBehavior(testSpec(1, 10, wantMetric()), tolerance("0.5"), nil)
	on, off := true, false
	runVersionCases(t, []versionCase{{
		name:     "release defaults",
		upstream: "kubernetes/kubernetes#133128 (beta, on in 1.35), #140107 (GA in 1.37)",
		spec:     spec,
		current:  4,
		pods:     uniformPods(4, 1000),
		metrics:  obs(series(5200)),
		want:     [5]int32{6, 4, 4, 4, 4},
	}, {
		name:     "gate turned on in 1.34",
		upstream: "KEP-4951 alpha gate",
		gates:    func(o *Options) { o.HPAConfigurableTolerance = &on },
		spec:     spec,
		current:  4,
		pods:     uniformPods(4, 1000),
		metrics:  obs(series(5200)),
		want:     [5]int32{4, 4, 4, 4, 4},
	}, {
		name:     "gate turned off where it is not locked",
		upstream: "kubernetes/kubernetes#133128",
		gates: func(o *Options) {
			if before(o.KubernetesVersion, "1.37") {
				o.HPAConfigurableTolerance = &off
			}
		},
		spec:    spec,
		current: 4,
		pods:    uniformPods(4, 1000),
		metrics: obs(series(5200)),
		want:    [5]int32{6, 6, 6, 4, 4},
	}})
}

func TestVersionsZeroReplicas(t *testing.T) {
	// External Value 9.5 against 1: at zero replicas the proposal is ceil(9.5) = 10, capped
	// at max(2 x 0, 4) = 4 without behavior.
	spec := func(min int32) *Spec { return testSpec(min, 10, externalValue("queue", "1")) }
	on, off := true, false
	noCondition := func(t *testing.T, v string, d Decision, st State) {
		if _, ok := findCond(st.Conditions, ConditionScaledToZero); ok && (before(v, "1.36") || v == "1.36") {
			t.Errorf("Kubernetes %s keeps a ScaledToZero condition: %+v", v, st.Conditions)
		}
	}
	runVersionCases(t, []versionCase{{
		name:     "scaled to zero by hand, minReplicas 0",
		upstream: "kubernetes/kubernetes#135118 (the ScaledToZero condition, 1.36)",
		spec:     spec(0),
		current:  0,
		pods:     nil,
		metrics:  obs(series(9500)),
		state:    seededEmpty(),
		want:     [5]int32{4, 4, 0, 0, 0},
	}, {
		name:     "scaled to zero by the autoscaler, minReplicas 0",
		upstream: "kubernetes/kubernetes#135118; #139648 (gate on by default in 1.37)",
		spec:     spec(0),
		current:  0,
		metrics:  obs(series(9500)),
		state:    scaledToZeroState(),
		want:     [5]int32{4, 4, 0, 4, 4},
		check:    noCondition,
	}, {
		name:     "scaled to zero by the autoscaler, HPAScaleToZero on everywhere",
		upstream: "kubernetes/kubernetes#135118",
		gates:    func(o *Options) { o.HPAScaleToZero = &on },
		spec:     spec(0),
		current:  0,
		metrics:  obs(series(9500)),
		state:    scaledToZeroState(),
		want:     [5]int32{4, 4, 4, 4, 4},
	}, {
		name:     "scaled to zero by the autoscaler, HPAScaleToZero off everywhere",
		upstream: "kubernetes/kubernetes#135118",
		gates:    func(o *Options) { o.HPAScaleToZero = &off },
		spec:     spec(0),
		current:  0,
		metrics:  obs(series(9500)),
		state:    scaledToZeroState(),
		want:     [5]int32{4, 4, 0, 0, 0},
	}, {
		// minReplicas 2: before 1.36 zero replicas disable scaling whatever the condition;
		// from 1.37 the autoscaler resumes and lifts the count to minReplicas at least.
		name:     "scaled to zero by the autoscaler, minReplicas raised to 2",
		upstream: "kubernetes/kubernetes#135118",
		spec:     spec(2),
		current:  0,
		metrics:  obs(series(500)),
		state:    scaledToZeroState(),
		want:     [5]int32{0, 0, 0, 2, 2},
	}})
}

func TestVersionsRecordRescaleScaledToZero(t *testing.T) {
	spec := testSpec(0, 10, externalValue("queue", "1"))
	d := &Decision{Time: tNow, CurrentReplicas: 3, DesiredReplicas: 0}
	prior := scaledToZeroState()
	prior.Conditions[0].Status = StatusFalse
	for _, v := range KubernetesVersions() {
		t.Run(v, func(t *testing.T) {
			st := RecordRescaleFor(tNow, Options{KubernetesVersion: v}, spec, prior, d, true, "")
			c, ok := findCond(st.Conditions, ConditionScaledToZero)
			switch v {
			case "1.34", "1.35":
				// No such condition in these releases: a stale one is left alone.
				if !ok || c.Status != StatusFalse {
					t.Errorf("condition %+v (present %v), want it untouched", c, ok)
				}
			case "1.36":
				if ok {
					t.Errorf("HPAScaleToZero is off by default in 1.36, so the condition is removed; got %+v", c)
				}
			default:
				if !ok || c.Status != StatusTrue {
					t.Errorf("condition %+v (present %v), want ScaledToZero True", c, ok)
				}
			}
		})
	}
}

func TestVersionsSaturateEverywhere(t *testing.T) {
	// R-INT: every release saturates, though upstream wrapped here before
	// kubernetes/kubernetes#142192 (utilization sums, 1.38), #126979 (ready-pod count, 1.35)
	// and #141397 (the rest, 1.38). A wrap would turn these scale-ups into scale-downs.
	huge := int64(4e18)
	runVersionCases(t, []versionCase{{
		name:     "utilization sums past int64",
		upstream: "kubernetes/kubernetes#142192",
		spec:     testSpec(1, 10, cpuUtil(50)),
		current:  3,
		pods:     uniformPods(3, 1000),
		metrics:  obs(samples(huge, huge, huge)),
		want:     [5]int32{6, 6, 6, 6, 6},
		check: func(t *testing.T, _ string, d Decision, _ State) {
			if got := *d.CurrentMetrics[0].Resource.Current.AverageUtilization; got != math.MaxInt32 {
				t.Errorf("utilization %d, want it saturated at %d", got, math.MaxInt32)
			}
			if got := d.CurrentMetrics[0].Resource.Current.AverageValue.MilliValue(); got != huge {
				t.Errorf("average %d, want %d", got, huge)
			}
		},
	}, {
		name:     "Value target times ready pods past int32",
		upstream: "kubernetes/kubernetes#126979, #141397",
		spec:     testSpec(1, 10, externalValue("queue", "1m")),
		current:  3,
		pods:     uniformPods(3, 1000),
		metrics:  obs(series(1e15)),
		want:     [5]int32{6, 6, 6, 6, 6},
	}, {
		name:     "plain average past int64",
		upstream: "kubernetes/kubernetes#142192",
		spec:     testSpec(1, 10, podsAvg("rps", "1")),
		current:  3,
		pods:     uniformPods(3, 1000),
		metrics:  obs(samples(huge, huge, huge)),
		want:     [5]int32{6, 6, 6, 6, 6},
	}})
}

func TestRulesFor(t *testing.T) {
	off := false
	for _, tc := range []struct {
		name    string
		opts    Options
		want    Rules
		wantErr string
	}{
		{name: "empty is the newest", opts: Options{}, want: Rules{Version: "1.38", IgnoreSucceededPods: true, MissingContainerFails: true,
			SidecarRequestsFirst: true, ObjectAverageValueKindName: true, ConfigurableTolerance: true, Zero: ZeroByCondition}},
		{name: "1.34", opts: Options{KubernetesVersion: "1.34"}, want: Rules{Version: "1.34", PodOverheadInRequests: true, Zero: ZeroByMinReplicas}},
		{name: "1.36", opts: Options{KubernetesVersion: "1.36"}, want: Rules{Version: "1.36", MissingContainerFails: true, PodOverheadInRequests: true,
			ConfigurableTolerance: true, Zero: ZeroDisabled}},
		{name: "1.37", opts: Options{KubernetesVersion: "1.37"}, want: Rules{Version: "1.37", MissingContainerFails: true, PodOverheadInRequests: true,
			ConfigurableTolerance: true, Zero: ZeroByCondition}},
		{name: "too old", opts: Options{KubernetesVersion: "1.33"}, wantErr: `unsupported Kubernetes version "1.33": supported are 1.34 to 1.38`},
		{name: "too new", opts: Options{KubernetesVersion: "1.39"}, wantErr: "supported are 1.34 to 1.38"},
		{name: "with v", opts: Options{KubernetesVersion: "v1.35"}, wantErr: "supported are 1.34 to 1.38"},
		{name: "with patch", opts: Options{KubernetesVersion: "1.35.4"}, wantErr: "supported are 1.34 to 1.38"},
		{name: "leading zero", opts: Options{KubernetesVersion: "1.035"}, wantErr: "supported are 1.34 to 1.38"},
		{name: "space", opts: Options{KubernetesVersion: " 1.35"}, wantErr: "supported are 1.34 to 1.38"},
		{name: "locked gate", opts: Options{KubernetesVersion: "1.37", HPAConfigurableTolerance: &off}, wantErr: "locked on in Kubernetes 1.37"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := RulesFor(tc.opts)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("RulesFor: error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("RulesFor = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestKubernetesVersionOf(t *testing.T) {
	for _, tc := range []struct{ major, minor, want string }{
		{"1", "35", "1.35"}, {"1", "37+", "1.37"}, {" 1", "38 ", "1.38"},
	} {
		if got := KubernetesVersionOf(tc.major, tc.minor); got != tc.want {
			t.Errorf("KubernetesVersionOf(%q, %q) = %q, want %q", tc.major, tc.minor, got, tc.want)
		}
	}
	if got := KubernetesVersions(); strings.Join(got, ",") != "1.34,1.35,1.36,1.37,1.38" {
		t.Errorf("KubernetesVersions() = %v", got)
	}
}

// TestSimulateByVersion replays one timeline under two releases: a Succeeded pod holds 1.37 at
// four replicas while 1.38 scales down (kubernetes/kubernetes#141302).
func TestSimulateByVersion(t *testing.T) {
	spec := testSpec(1, 10, cpuUtil(50))
	steps := []Step{{Time: tNow, Pods: with(uniformPods(4, 1000), 3, phase(PodSucceeded)), Metrics: obs(samples(200, 200, 200))}}
	st := seededEmpty()
	for v, want := range map[string]int32{"1.37": 4, "1.38": 2} {
		opts := DefaultOptions()
		opts.KubernetesVersion = v
		ds, _ := Simulate(opts, spec, 4, &st, steps)
		if got := ds[0].DesiredReplicas; got != want {
			t.Errorf("Kubernetes %s: desired %d, want %d", v, got, want)
		}
	}
}
