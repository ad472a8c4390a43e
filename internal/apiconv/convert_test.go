package apiconv

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"k8s.io/apimachinery/pkg/api/resource"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
	"github.com/hpa-recommender/hpa-recommender/recommender"
)

// domainCmp compares domain values: quantities by value, times by instant (time.Time.Equal).
var domainCmp = cmp.Options{
	cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 }),
}

func ptr[T any](v T) *T { return &v }

func qty(s string) *resource.Quantity {
	q := resource.MustParse(s)
	return &q
}

func reqs(kv ...string) map[string]resource.Quantity {
	m := make(map[string]resource.Quantity, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = resource.MustParse(kv[i+1])
	}
	return m
}

// scenarioRequests reads the SimulateRequests of testdata: the upstream scenarios
// (a copy of shared/conformance/upstream-scenarios.jsonl.gz, {"request": ..., "expect": ...}
// per line) and the seed cases turned into requests by run.py's request_of().
func scenarioRequests(t testing.TB) map[string]json.RawMessage {
	t.Helper()
	out := make(map[string]json.RawMessage)
	f, err := os.Open(filepath.Join("testdata", "upstream-scenarios.jsonl.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for n := 0; sc.Scan(); n++ {
		var line struct {
			Request json.RawMessage `json:"request"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("upstream scenario %d: %v", n, err)
		}
		out["upstream-"+strconv.Itoa(n)] = line.Request
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) != 300 {
		t.Fatalf("read %d upstream scenarios, want 300", len(out))
	}
	seed, err := os.ReadFile(filepath.Join("testdata", "seed-requests.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	sc = bufio.NewScanner(bytes.NewReader(seed))
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for n := 0; sc.Scan(); n++ {
		out["seed-"+strconv.Itoa(n)] = json.RawMessage(append([]byte(nil), sc.Bytes()...))
	}
	return out
}

// TestScenarioRequestsDecode checks the API's JSON shape against every request the
// conformance suite sends: each must decode with unknown fields rejected (as grpcurl does) and
// convert without violations.
func TestScenarioRequestsDecode(t *testing.T) {
	t.Parallel()
	// Shards run in parallel: the race detector makes decoding these 9 MB of JSON slow.
	const shards = 4
	reqs := scenarioRequests(t)
	names := slices.Sorted(maps.Keys(reqs))
	for shard := range shards {
		t.Run("shard"+strconv.Itoa(shard), func(t *testing.T) {
			t.Parallel()
			for i := shard; i < len(names); i += shards {
				checkScenarioRequest(t, names[i], reqs[names[i]])
			}
		})
	}
}

func checkScenarioRequest(t *testing.T, name string, raw json.RawMessage) {
	t.Helper()
	var req pb.SimulateRequest
	if err := (protojson.UnmarshalOptions{DiscardUnknown: false}).Unmarshal(raw, &req); err != nil {
		t.Errorf("%s: protojson: %v", name, err)
		return
	}
	sim, violations := SimulationFromProto(&req, recommender.DefaultOptions())
	if len(violations) > 0 {
		t.Errorf("%s: violations: %v", name, violations)
		return
	}
	if len(sim.Steps) != len(req.GetSteps()) || sim.Spec == nil {
		t.Errorf("%s: converted %d of %d steps, spec %v", name, len(sim.Steps), len(req.GetSteps()), sim.Spec)
	}
	// domain -> proto -> domain keeps everything. Compared in proto form: proto.Equal is much
	// cheaper than cmp.Diff on 300 large requests (TestRoundTrip covers every domain field with
	// cmp).
	first := SimulationToProto(sim)
	back, violations := SimulationFromProto(first, recommender.Options{})
	if len(violations) > 0 {
		t.Errorf("%s: round trip violations: %v", name, violations)
	}
	if second := SimulationToProto(back); !proto.Equal(first, second) {
		t.Errorf("%s: round trip mismatch (-first +second):\n%s", name, cmp.Diff(first, second, protocmp.Transform()))
	}
}

// fullSpec sets every field of a spec.
func fullSpec() *recommender.Spec {
	sel := &recommender.LabelSelector{
		MatchLabels: map[string]string{"queue": "jobs"},
		MatchExpressions: []recommender.LabelSelectorRequirement{
			{Key: "tier", Operator: "In", Values: []string{"a", "b"}},
			{Key: "canary", Operator: "DoesNotExist"},
		},
	}
	return &recommender.Spec{
		ScaleTargetRef: recommender.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
		MinReplicas:    ptr[int32](0),
		MaxReplicas:    10,
		Metrics: []recommender.MetricSpec{
			{Type: recommender.MetricResource, Resource: &recommender.ResourceMetricSource{
				Name: "cpu", Target: recommender.MetricTarget{Type: recommender.TargetUtilization, AverageUtilization: ptr[int32](60)}}},
			{Type: recommender.MetricContainerResource, ContainerResource: &recommender.ContainerResourceMetricSource{
				Name: "memory", Container: "app", Target: recommender.MetricTarget{Type: recommender.TargetAverageValue, AverageValue: qty("1.5Gi")}}},
			{Type: recommender.MetricPods, Pods: &recommender.PodsMetricSource{
				Metric: recommender.MetricIdentifier{Name: "rps", Selector: sel},
				Target: recommender.MetricTarget{Type: recommender.TargetAverageValue, AverageValue: qty("500m")}}},
			{Type: recommender.MetricObject, Object: &recommender.ObjectMetricSource{
				DescribedObject: recommender.ObjectReference{APIVersion: "v1", Kind: "Service", Name: "front"},
				Metric:          recommender.MetricIdentifier{Name: "hits"},
				Target:          recommender.MetricTarget{Type: recommender.TargetValue, Value: qty("10k")}}},
			{Type: recommender.MetricExternal, External: &recommender.ExternalMetricSource{
				Metric: recommender.MetricIdentifier{Name: "queue_depth", Selector: &recommender.LabelSelector{}},
				Target: recommender.MetricTarget{Type: recommender.TargetValue, Value: qty("30"), AverageValue: qty("2")}}},
		},
		Behavior: &recommender.Behavior{
			ScaleUp: &recommender.ScalingRules{
				StabilizationWindowSeconds: ptr[int32](0),
				SelectPolicy:               ptr(recommender.SelectMax),
				Policies: []recommender.ScalingPolicy{
					{Type: recommender.PolicyPods, Value: 4, PeriodSeconds: 15},
					{Type: recommender.PolicyPercent, Value: 100, PeriodSeconds: 15},
				},
				Tolerance: qty("50m"),
			},
			ScaleDown: &recommender.ScalingRules{SelectPolicy: ptr(recommender.SelectDisabled)},
		},
	}
}

func t0() time.Time { return time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC) }

func fullPods() []recommender.Pod {
	return []recommender.Pod{
		{
			Name: "web-0", Phase: recommender.PodRunning, HasReady: true, Ready: true,
			ReadyTransitionTime: t0().Add(-time.Hour), StartTime: t0().Add(-2 * time.Hour),
			Containers: []recommender.Container{
				{Name: "app", Requests: reqs("cpu", "1", "memory", "1Gi")},
				{Name: "proxy"},
			},
			InitContainers: []recommender.Container{
				{Name: "init"},
				{Name: "log", RestartPolicy: "Always", Requests: reqs("cpu", "300m")},
			},
			Requests: reqs("memory", "1179648Ki"),
		},
		{Name: "web-1", Phase: recommender.PodPending, HasReady: true, Ready: false},
		{Name: "web-2", Phase: recommender.PodRunning, Deleting: true, DeletionTime: t0().Add(-time.Second)},
	}
}

func fullObservations() []recommender.Observation {
	return []recommender.Observation{
		{PodSamples: []recommender.PodSample{
			{Pod: "web-0", Milli: 700, Timestamp: t0(), Window: 30 * time.Second},
			{Pod: "web-1", Milli: 0, Timestamp: t0(), Window: recommender.DefaultMetricWindow},
		}},
		{Value: ptr[int64](2500)},
		{Values: []int64{1000, -2000, 3}},
		{Error: "no metrics returned"},
		{},
	}
}

func TestRoundTrip(t *testing.T) {
	state := &recommender.State{
		Seeded: true,
		History: recommender.History{
			Recommendations: []recommender.Recommendation{{Time: t0(), Replicas: 3}},
			ScaleUpEvents:   []recommender.ScaleEvent{{Time: t0(), Change: 2}},
			ScaleDownEvents: []recommender.ScaleEvent{{Time: t0().Add(time.Minute), Change: 1}},
		},
		Conditions: []recommender.Condition{{Type: recommender.ConditionScaledToZero, Status: recommender.StatusTrue, Reason: "ScaledToZero"}},
	}
	tests := []struct {
		name string
		sim  *Simulation
	}{
		{name: "empty", sim: &Simulation{Options: recommender.DefaultOptions()}},
		{name: "everything", sim: &Simulation{
			Spec:            fullSpec(),
			Options:         recommender.Options{Tolerance: 0, CPUInitializationPeriod: time.Minute, InitialReadinessDelay: 0, DownscaleStabilizationWindow: time.Hour},
			InitialReplicas: 3,
			State:           state,
			Steps: []recommender.Step{
				{Time: t0(), CurrentReplicas: ptr[int32](3), StatusReplicas: ptr[int32](2), Pods: fullPods(), Metrics: fullObservations()},
				{Time: t0().Add(15 * time.Second)},
			},
		}},
		{name: "empty history", sim: &Simulation{Options: recommender.DefaultOptions(), State: &recommender.State{Seeded: true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := SimulationToProto(tt.sim)
			// through the wire form too, as a client would send it
			b, err := protojson.Marshal(req)
			if err != nil {
				t.Fatal(err)
			}
			var decoded pb.SimulateRequest
			if err := protojson.Unmarshal(b, &decoded); err != nil {
				t.Fatalf("%v\n%s", err, b)
			}
			got, violations := SimulationFromProto(&decoded, recommender.Options{Tolerance: 42})
			if len(violations) > 0 {
				t.Fatalf("violations: %v", violations)
			}
			if diff := cmp.Diff(tt.sim, got, domainCmp); diff != "" {
				t.Errorf("round trip mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRecommendFromProto(t *testing.T) {
	defaults := recommender.DefaultOptions()
	tests := []struct {
		name     string
		json     string
		wantIn   recommender.Input
		wantOpts recommender.Options
	}{
		{
			name:     "empty",
			json:     `{}`,
			wantOpts: defaults,
		},
		{
			name:   "status replicas default to current",
			json:   `{"currentReplicas": 4, "options": {"tolerance": 0}}`,
			wantIn: recommender.Input{CurrentReplicas: 4, StatusReplicas: 4},
			wantOpts: recommender.Options{Tolerance: 0, CPUInitializationPeriod: defaults.CPUInitializationPeriod,
				InitialReadinessDelay: defaults.InitialReadinessDelay, DownscaleStabilizationWindow: defaults.DownscaleStabilizationWindow},
		},
		{
			name:     "explicit status replicas zero",
			json:     `{"currentReplicas": 4, "statusReplicas": 0, "options": {"initialReadinessDelay": "0s", "cpuInitializationPeriod": "1.5s"}}`,
			wantIn:   recommender.Input{CurrentReplicas: 4, StatusReplicas: 0},
			wantOpts: recommender.Options{Tolerance: 0.1, CPUInitializationPeriod: 1500 * time.Millisecond, DownscaleStabilizationWindow: 5 * time.Minute},
		},
		{
			name: "empty policies, requests and selector parts are absent; window defaults",
			json: `{
				"spec": {"maxReplicas": 5, "behavior": {"scaleUp": {"policies": []}, "scaleDown": {}},
					"metrics": [{"type": "Pods", "pods": {"metric": {"name": "rps", "selector": {"matchLabels": {}, "matchExpressions": []}},
						"target": {"type": "AverageValue", "averageValue": "1"}}}]},
				"pods": [{"name": "p", "requests": {}, "containers": [{"name": "c", "requests": {}}], "ready": false}],
				"metrics": [{"podValues": [{"pod": "p", "value": "1.5", "timestamp": "2026-06-01T00:00:00Z"}], "values": []}]
			}`,
			wantIn: recommender.Input{
				Spec: &recommender.Spec{
					MaxReplicas: 5,
					Behavior:    &recommender.Behavior{ScaleUp: &recommender.ScalingRules{}, ScaleDown: &recommender.ScalingRules{}},
					Metrics: []recommender.MetricSpec{{Type: "Pods", Pods: &recommender.PodsMetricSource{
						Metric: recommender.MetricIdentifier{Name: "rps", Selector: &recommender.LabelSelector{}},
						Target: recommender.MetricTarget{Type: "AverageValue", AverageValue: qty("1")},
					}}},
				},
				Pods:    []recommender.Pod{{Name: "p", HasReady: true, Containers: []recommender.Container{{Name: "c"}}}},
				Metrics: []recommender.Observation{{PodSamples: []recommender.PodSample{{Pod: "p", Milli: 1500, Timestamp: t0(), Window: time.Minute}}}},
			},
			wantOpts: defaults,
		},
		{
			name: "sub-milli values round away from zero, as upstream's MilliValue",
			json: `{"metrics": [{"value": "0.0001"}, {"values": ["1n", "-1.5m"]}]}`,
			wantIn: recommender.Input{Metrics: []recommender.Observation{
				{Value: ptr[int64](1)},
				{Values: []int64{1, -2}},
			}},
			wantOpts: defaults,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var req pb.RecommendRequest
			if err := protojson.Unmarshal([]byte(tt.json), &req); err != nil {
				t.Fatal(err)
			}
			in, opts, violations := RecommendFromProto(&req, defaults)
			if len(violations) > 0 {
				t.Fatalf("violations: %v", violations)
			}
			if diff := cmp.Diff(tt.wantIn, in, domainCmp); diff != "" {
				t.Errorf("input mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantOpts, opts); diff != "" {
				t.Errorf("options mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStateFromProto(t *testing.T) {
	tests := []struct {
		name string
		h    *pb.History
		want recommender.State
	}{
		{name: "absent", h: nil, want: recommender.State{}},
		{name: "empty is seeded", h: &pb.History{}, want: recommender.State{Seeded: true}},
		{
			name: "scaledToZero becomes a condition",
			h:    &pb.History{ScaledToZero: true},
			want: recommender.State{Seeded: true, Conditions: []recommender.Condition{{Type: "ScaledToZero", Status: "True", Reason: "ScaledToZero"}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, violations := StateFromProto("history", tt.h)
			if len(violations) > 0 {
				t.Fatalf("violations: %v", violations)
			}
			if diff := cmp.Diff(tt.want, got, domainCmp); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHistoryToProtoScaledToZero(t *testing.T) {
	tests := []struct {
		name  string
		conds []recommender.Condition
		want  bool
	}{
		{name: "none", want: false},
		{name: "true", conds: []recommender.Condition{{Type: "AbleToScale", Status: "True"}, {Type: "ScaledToZero", Status: "True"}}, want: true},
		{name: "false", conds: []recommender.Condition{{Type: "ScaledToZero", Status: "False", Reason: "NotScaledToZero"}}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := HistoryToProto(&recommender.State{Conditions: tt.conds}).GetScaledToZero()
			if got != tt.want {
				t.Errorf("scaledToZero = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDecisionToProto(t *testing.T) {
	d := &recommender.Decision{
		Time:            t0(),
		CurrentReplicas: 2,
		DesiredReplicas: 5,
		CurrentMetrics: []recommender.MetricStatus{
			{Type: "Resource", Resource: &recommender.ResourceMetricStatus{Name: "cpu", Current: recommender.MetricValueStatus{
				AverageUtilization: ptr[int32](95), AverageValue: resource.NewMilliQuantity(2867, resource.DecimalSI)}}},
			{},
			{Type: "Object", Object: &recommender.ObjectMetricStatus{
				Metric:          recommender.MetricIdentifier{Name: "hits"},
				DescribedObject: recommender.ObjectReference{APIVersion: "v1", Kind: "Service", Name: "front"},
				Current:         recommender.MetricValueStatus{Value: resource.NewQuantity(1536*1024*1024, resource.BinarySI)}}},
			{Type: "External", External: &recommender.ExternalMetricStatus{
				Metric:  recommender.MetricIdentifier{Name: "q"},
				Current: recommender.MetricValueStatus{AverageValue: qty("20000m")}}},
			{Type: "ContainerResource", ContainerResource: &recommender.ContainerResourceMetricStatus{Name: "cpu", Container: "app",
				Current: recommender.MetricValueStatus{AverageUtilization: ptr[int32](0), AverageValue: qty("0")}}},
			{Type: "Pods", Pods: &recommender.PodsMetricStatus{Metric: recommender.MetricIdentifier{Name: "rps"},
				Current: recommender.MetricValueStatus{AverageValue: qty("1.5")}}},
		},
		Conditions: []recommender.Condition{
			{Type: "AbleToScale", Status: "True", Reason: "ReadyForNewScale", Message: "m", LastTransitionTime: t0()},
		},
		Explanation: recommender.Explanation{
			Message: "scale up", WinningMetric: 0, Proposal: 5, Stabilized: 5, Limited: 5, Final: 5,
			StabilizationWindow: 0, LimitingPolicy: "scaleUp Pods 4/15s", LimitReason: "ScaleUpLimit",
			Metrics: []recommender.MetricExplanation{{Index: 0, Name: "cpu", Proposal: 5, UsageRatio: 1.58, ReadyPods: 2}},
		},
	}
	want := &pb.RecommendResponse{
		DecisionTime:    timestamppb.New(t0()),
		CurrentReplicas: 2,
		DesiredReplicas: 5,
		Scale:           true,
		CurrentMetrics: []*pb.MetricStatus{
			{Type: "Resource", Resource: &pb.ResourceMetricStatus{Name: "cpu", Current: &pb.MetricValueStatus{
				AverageUtilization: ptr[int32](95), AverageValue: ptr("2867m")}}},
			{},
			{Type: "Object", Object: &pb.ObjectMetricStatus{
				Metric:          &pb.MetricIdentifier{Name: "hits"},
				DescribedObject: &pb.CrossVersionObjectReference{ApiVersion: "v1", Kind: "Service", Name: "front"},
				Current:         &pb.MetricValueStatus{Value: ptr("1536Mi")}}},
			{Type: "External", External: &pb.ExternalMetricStatus{Metric: &pb.MetricIdentifier{Name: "q"},
				Current: &pb.MetricValueStatus{AverageValue: ptr("20")}}},
			{Type: "ContainerResource", ContainerResource: &pb.ContainerResourceMetricStatus{Name: "cpu", Container: "app",
				Current: &pb.MetricValueStatus{AverageUtilization: ptr[int32](0), AverageValue: ptr("0")}}},
			{Type: "Pods", Pods: &pb.PodsMetricStatus{Metric: &pb.MetricIdentifier{Name: "rps"},
				Current: &pb.MetricValueStatus{AverageValue: ptr("1500m")}}},
		},
		Conditions: []*pb.Condition{
			{Type: "AbleToScale", Status: "True", Reason: "ReadyForNewScale", Message: "m", LastTransitionTime: timestamppb.New(t0())},
		},
		Explanation: &pb.Explanation{
			Message: "scale up", Proposal: 5, Stabilized: 5, Limited: 5, Final: 5,
			LimitingPolicy: "scaleUp Pods 4/15s", LimitReason: "ScaleUpLimit",
			Metrics: []*pb.MetricExplanation{{Name: "cpu", Proposal: 5, UsageRatio: 1.58, ReadyPods: 2}},
		},
	}
	got := DecisionToProto(d)
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
	// A failed metric prints as {} (as upstream), and the stabilization window is absent.
	b, err := protojson.Marshal(got.CurrentMetrics[1])
	if err != nil || string(b) != "{}" {
		t.Errorf("failed metric JSON = %s, %v; want {}", b, err)
	}

	d.Explanation.StabilizationWindow = 5 * time.Minute
	step := StepResultToProto(d)
	wantStep := &pb.SimulateStepResult{
		Time: want.DecisionTime, DesiredReplicas: 5, CurrentMetrics: want.CurrentMetrics, Conditions: want.Conditions,
		Explanation: proto.CloneOf(want.Explanation),
	}
	wantStep.Explanation.StabilizationWindow = durationpb.New(5 * time.Minute)
	if diff := cmp.Diff(wantStep, step, protocmp.Transform()); diff != "" {
		t.Errorf("step mismatch (-want +got):\n%s", diff)
	}
}

func TestSimulationFromProtoViolations(t *testing.T) {
	fmtErr := resource.ErrFormatWrong.Error()
	tests := []struct {
		name string
		json string
		req  *pb.SimulateRequest // instead of json, for values protojson itself refuses
		want []FieldViolation
	}{
		{
			name: "target averageValue",
			json: `{"spec": {"metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "AverageValue", "averageValue": "abc"}}}]}}`,
			want: []FieldViolation{{"spec.metrics[0].resource.target.averageValue", fmtErr}},
		},
		{
			name: "empty string quantity that is present",
			json: `{"spec": {"metrics": [{}, {"type": "External", "external": {"target": {"type": "Value", "value": ""}}}]}}`,
			want: []FieldViolation{{"spec.metrics[1].external.target.value", fmtErr}},
		},
		{
			name: "every source",
			json: `{"spec": {"metrics": [{"containerResource": {"target": {"averageValue": "1x"}}, "pods": {"target": {"averageValue": "1.2.3"}},
				"object": {"target": {"value": "--1"}}}]}}`,
			want: []FieldViolation{
				{"spec.metrics[0].containerResource.target.averageValue", fmtErr},
				{"spec.metrics[0].pods.target.averageValue", fmtErr},
				{"spec.metrics[0].object.target.value", resource.ErrSuffix.Error()},
			},
		},
		{
			name: "behavior tolerance",
			json: `{"spec": {"behavior": {"scaleUp": {"tolerance": "5%"}, "scaleDown": {"tolerance": "0.05"}}}}`,
			want: []FieldViolation{{"spec.behavior.scaleUp.tolerance", fmtErr}},
		},
		{
			name: "container requests, sorted by key",
			json: `{"steps": [{}, {}, {}, {"pods": [{}, {"containers": [{"name": "app", "requests": {"memory": "1GB", "cpu": "x", "ok": "1"}}]}]}]}`,
			want: []FieldViolation{
				{"steps[3].pods[1].containers[0].requests[cpu]", fmtErr},
				{"steps[3].pods[1].containers[0].requests[memory]", fmtErr},
			},
		},
		{
			name: "init container and pod-level requests",
			json: `{"steps": [{"pods": [{"initContainers": [{}, {"requests": {"cpu": "1k1"}}], "requests": {"memory": "?"}}]}]}`,
			want: []FieldViolation{
				{"steps[0].pods[0].initContainers[1].requests[cpu]", resource.ErrSuffix.Error()},
				{"steps[0].pods[0].requests[memory]", fmtErr},
			},
		},
		{
			name: "observation values",
			json: `{"steps": [{"metrics": [{"podValues": [{"value": "1"}, {"value": "one"}]}, {"value": "1e"}, {"values": ["1", "2", "three"]}]}]}`,
			want: []FieldViolation{
				{"steps[0].metrics[0].podValues[1].value", fmtErr},
				{"steps[0].metrics[1].value", resource.ErrSuffix.Error()},
				{"steps[0].metrics[2].values[2]", fmtErr},
			},
		},
		{
			name: "missing pod value",
			json: `{"steps": [{"metrics": [{"podValues": [{"pod": "a"}]}]}]}`,
			want: []FieldViolation{{"steps[0].metrics[0].podValues[0].value", fmtErr}},
		},
		{
			name: "metric value out of range",
			// The largest and smallest milli-values pass (9223372036854775807m is upstream's own
			// overflow-test value); one milli-unit beyond either is refused.
			json: `{"steps": [{"metrics": [{"value": "10E"}, {"values": ["-10E"]}, {"value": "9223372036854775"},
				{"value": "9223372036854775807m"}, {"value": "9223372036854775808m"}, {"value": "9223372036854775.8071"},
				{"values": ["-9223372036854775808m", "-9223372036854775809m", "-9223372036854775.8085"]}]}]}`,
			want: []FieldViolation{
				{"steps[0].metrics[0].value", "quantity out of range: its milli-value must fit a signed 64-bit integer"},
				{"steps[0].metrics[1].values[0]", "quantity out of range: its milli-value must fit a signed 64-bit integer"},
				{"steps[0].metrics[4].value", "quantity out of range: its milli-value must fit a signed 64-bit integer"},
				{"steps[0].metrics[5].value", "quantity out of range: its milli-value must fit a signed 64-bit integer"},
				{"steps[0].metrics[6].values[1]", "quantity out of range: its milli-value must fit a signed 64-bit integer"},
			},
		},
		{
			name: "options tolerance NaN",
			json: `{"options": {"tolerance": "NaN"}}`,
			want: []FieldViolation{{"options.tolerance", "must be a finite number"}},
		},
		{
			name: "invalid timestamps and durations",
			req: &pb.SimulateRequest{
				Options: &pb.Options{InitialReadinessDelay: &durationpb.Duration{Seconds: 1, Nanos: -1}},
				History: &pb.History{
					Recommendations: []*pb.HistoryRecommendation{{Time: &timestamppb.Timestamp{Seconds: math.MaxInt64}}},
					ScaleDownEvents: []*pb.ScaleEvent{{}, {Time: &timestamppb.Timestamp{Nanos: -1}}},
				},
				Steps: []*pb.SimulateStep{{
					Time: &timestamppb.Timestamp{Seconds: -math.MaxInt64},
					Pods: []*pb.PodState{{DeletionTimestamp: &timestamppb.Timestamp{Nanos: 2e9}, StartTime: &timestamppb.Timestamp{}}},
					Metrics: []*pb.MetricObservation{{PodValues: []*pb.PodMetricValue{
						{Value: "1", Window: &durationpb.Duration{Seconds: math.MaxInt64}},
					}}},
				}},
			},
			want: []FieldViolation{
				{"options.initialReadinessDelay", "invalid duration: must be within ±10000 years with seconds and nanos of the same sign"},
				{"history.recommendations[0].time", "invalid timestamp: must be from 0001-01-01 to 9999-12-31 with nanos in [0, 1e9)"},
				{"history.scaleDownEvents[1].time", "invalid timestamp: must be from 0001-01-01 to 9999-12-31 with nanos in [0, 1e9)"},
				{"steps[0].time", "invalid timestamp: must be from 0001-01-01 to 9999-12-31 with nanos in [0, 1e9)"},
				{"steps[0].pods[0].deletionTimestamp", "invalid timestamp: must be from 0001-01-01 to 9999-12-31 with nanos in [0, 1e9)"},
				{"steps[0].metrics[0].podValues[0].window", "invalid duration: must be within ±10000 years with seconds and nanos of the same sign"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := tt.req
			if req == nil {
				req = &pb.SimulateRequest{}
				if err := protojson.Unmarshal([]byte(tt.json), req); err != nil {
					t.Fatal(err)
				}
			}
			_, got := SimulationFromProto(req, recommender.DefaultOptions())
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("violations mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRecommendFromProtoViolationPaths(t *testing.T) {
	req := &pb.RecommendRequest{}
	err := protojson.Unmarshal([]byte(`{
		"spec": {"behavior": {"scaleDown": {"tolerance": "x"}}},
		"pods": [{"requests": {"cpu": "x"}}],
		"metrics": [{"value": "x"}],
		"options": {"downscaleStabilizationWindow": "1s", "tolerance": "Infinity"}
	}`), req)
	if err != nil {
		t.Fatal(err)
	}
	fmtErr := resource.ErrFormatWrong.Error()
	want := []FieldViolation{
		{"spec.behavior.scaleDown.tolerance", fmtErr},
		{"pods[0].requests[cpu]", fmtErr},
		{"metrics[0].value", fmtErr},
		{"options.tolerance", "must be a finite number"},
	}
	_, _, got := RecommendFromProto(req, recommender.DefaultOptions())
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("violations mismatch (-want +got):\n%s", diff)
	}
	// The component functions take their path from the caller.
	_, got = PodsFromProto("steps[7].pods", req.GetPods())
	if diff := cmp.Diff([]FieldViolation{{"steps[7].pods[0].requests[cpu]", fmtErr}}, got); diff != "" {
		t.Errorf("PodsFromProto violations mismatch (-want +got):\n%s", diff)
	}
	_, got = ObservationsFromProto("", req.GetMetrics())
	if diff := cmp.Diff([]FieldViolation{{"[0].value", fmtErr}}, got); diff != "" {
		t.Errorf("ObservationsFromProto violations mismatch (-want +got):\n%s", diff)
	}
}

// TestEveryPodsRequestsConverted: pods with equal requests get equal conversions, a different
// map gets its own values, and every bad map is reported, including repeats of the same bad map.
func TestEveryPodsRequestsConverted(t *testing.T) {
	req := &pb.RecommendRequest{}
	err := protojson.Unmarshal([]byte(`{"pods": [
		{"containers": [{"requests": {"cpu": "500m", "memory": "1Gi"}}]},
		{"containers": [{"requests": {"cpu": "500m", "memory": "1Gi"}}, {"requests": {"cpu": "250m"}}]},
		{"containers": [{"requests": {"cpu": "1", "memory": "1Gi"}}]},
		{"containers": [{"requests": {"cpu": "x"}}]},
		{"containers": [{"requests": {"cpu": "x"}}], "requests": {"cpu": "2"}},
		{"containers": [{"requests": {"cpu": "500m", "memory": "1Gi"}}]}
	]}`), req)
	if err != nil {
		t.Fatal(err)
	}
	pods, got := PodsFromProto("pods", req.GetPods())
	fmtErr := resource.ErrFormatWrong.Error()
	want := []FieldViolation{
		{"pods[3].containers[0].requests[cpu]", fmtErr},
		{"pods[4].containers[0].requests[cpu]", fmtErr},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("violations mismatch (-want +got):\n%s", diff)
	}
	cpu := func(p, c int) int64 { q := pods[p].Containers[c].Requests["cpu"]; return q.MilliValue() }
	for _, tc := range []struct {
		pod, container int
		want           int64
	}{{0, 0, 500}, {1, 0, 500}, {1, 1, 250}, {2, 0, 1000}, {5, 0, 500}} {
		if got := cpu(tc.pod, tc.container); got != tc.want {
			t.Errorf("pods[%d].containers[%d] cpu %dm, want %dm", tc.pod, tc.container, got, tc.want)
		}
	}
	if q := pods[4].Requests["cpu"]; q.MilliValue() != 2000 {
		t.Errorf("pods[4] pod-level cpu %dm, want 2000m", q.MilliValue())
	}
	if q := pods[2].Containers[0].Requests["memory"]; q.Value() != 1<<30 {
		t.Errorf("pods[2] memory %d, want 1Gi", q.Value())
	}
}

// TestNilSafety feeds nil and empty messages everywhere: conversion never panics.
func TestNilSafety(t *testing.T) {
	defaults := recommender.DefaultOptions()
	RecommendFromProto(nil, defaults)
	SimulationFromProto(nil, defaults)
	SpecFromProto("spec", nil)
	PodsFromProto("pods", []*pb.PodState{nil})
	ObservationsFromProto("metrics", []*pb.MetricObservation{nil, {PodValues: []*pb.PodMetricValue{nil}}})
	OptionsFromProto("options", nil, defaults)
	StateFromProto("history", nil)
	StateFromProto("history", &pb.History{Recommendations: []*pb.HistoryRecommendation{nil}, ScaleUpEvents: []*pb.ScaleEvent{nil}})
	ConditionsFromProto("conditions", []*pb.Condition{nil})
	_, v := SimulationFromProto(&pb.SimulateRequest{
		Spec: &pb.HorizontalPodAutoscalerSpec{
			Metrics: []*pb.MetricSpec{nil, {
				Resource: &pb.ResourceMetricSource{}, ContainerResource: &pb.ContainerResourceMetricSource{},
				Pods:   &pb.PodsMetricSource{Metric: &pb.MetricIdentifier{Selector: &pb.LabelSelector{MatchExpressions: []*pb.LabelSelectorRequirement{nil}}}},
				Object: &pb.ObjectMetricSource{}, External: &pb.ExternalMetricSource{},
			}},
			Behavior: &pb.HorizontalPodAutoscalerBehavior{ScaleUp: &pb.HPAScalingRules{Policies: []*pb.HPAScalingPolicy{nil}}},
		},
		Steps: []*pb.SimulateStep{nil, {Pods: []*pb.PodState{{Containers: []*pb.ContainerState{nil}, InitContainers: []*pb.InitContainerState{nil}}}}},
	}, defaults)
	if len(v) != 0 {
		t.Errorf("violations: %v", v)
	}

	if DecisionToProto(nil) != nil || StepResultToProto(nil) != nil || SpecToProto(nil) != nil ||
		HistoryToProto(nil) != nil || ExplanationToProto(nil) != nil || SimulationToProto(nil) != nil {
		t.Error("nil domain value gave a non-nil message")
	}
	SimulateResponseToProto(nil, nil)
	DecisionToProto(&recommender.Decision{CurrentMetrics: []recommender.MetricStatus{{}}})
	SpecToProto(&recommender.Spec{Metrics: []recommender.MetricSpec{{}}, Behavior: &recommender.Behavior{}})
}

// FuzzSimulationFromProto: any wire bytes that decode as a SimulateRequest convert without a
// panic, and a conversion without violations survives domain -> proto -> domain unchanged.
func FuzzSimulationFromProto(f *testing.F) {
	n := 0
	for _, raw := range scenarioRequests(f) {
		if n++; n > 20 {
			break
		}
		var req pb.SimulateRequest
		if err := protojson.Unmarshal(raw, &req); err != nil {
			f.Fatal(err)
		}
		b, err := proto.Marshal(&req)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var req pb.SimulateRequest
		if proto.Unmarshal(b, &req) != nil {
			return
		}
		sim, violations := SimulationFromProto(&req, recommender.DefaultOptions())
		if len(violations) > 0 {
			return
		}
		back, violations := SimulationFromProto(SimulationToProto(sim), recommender.Options{})
		if len(violations) > 0 {
			t.Fatalf("round trip violations: %v", violations)
		}
		if diff := cmp.Diff(sim, back, domainCmp); diff != "" {
			t.Fatalf("round trip mismatch (-first +second):\n%s", diff)
		}
	})
}

// TestKubectlSpecDecodes: `kubectl get hpa -o json | jq .spec` of an autoscaling/v2 HPA that
// sets every field pastes verbatim into a request.
func TestKubectlSpecDecodes(t *testing.T) {
	const spec = `{
	  "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
	  "minReplicas": 1,
	  "maxReplicas": 20,
	  "metrics": [
	    {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}},
	    {"type": "ContainerResource", "containerResource": {"name": "memory", "container": "app",
	      "target": {"type": "AverageValue", "averageValue": "1536Mi"}}},
	    {"type": "Pods", "pods": {"metric": {"name": "rps", "selector": {"matchLabels": {"a": "b"},
	      "matchExpressions": [{"key": "tier", "operator": "In", "values": ["x", "y"]}]}},
	      "target": {"type": "AverageValue", "averageValue": "100"}}},
	    {"type": "Object", "object": {"describedObject": {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "name": "main"},
	      "metric": {"name": "hits", "selector": {"matchLabels": {"x": "y"}}},
	      "target": {"type": "Value", "value": "10k"}}},
	    {"type": "External", "external": {"metric": {"name": "queue", "selector": {"matchLabels": {"queue": "jobs"}},
	      "source": {"apiGroup": "external.metrics.example.com"}},
	      "target": {"type": "AverageValue", "averageValue": "30"}}}
	  ],
	  "behavior": {
	    "scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max", "tolerance": "50m",
	      "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15}, {"type": "Percent", "value": 100, "periodSeconds": 15}]},
	    "scaleDown": {"stabilizationWindowSeconds": 300, "selectPolicy": "Min", "tolerance": "0.05",
	      "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}
	  }
	}`
	var req pb.RecommendRequest
	if err := (protojson.UnmarshalOptions{DiscardUnknown: false}).Unmarshal([]byte(`{"spec": `+spec+`}`), &req); err != nil {
		t.Fatal(err)
	}
	in, _, violations := RecommendFromProto(&req, recommender.DefaultOptions())
	if len(violations) > 0 {
		t.Fatalf("violations: %v", violations)
	}
	if got := in.Spec.Behavior.ScaleDown.Tolerance.MilliValue(); got != 50 {
		t.Errorf("scaleDown tolerance = %dm, want 50m", got)
	}
	if got := len(in.Spec.Metrics); got != 5 {
		t.Errorf("%d metrics, want 5", got)
	}
}

// TestMetricValuesInMilli: metric values convert to milli-units as Quantity.MilliValue gives
// them, rounded up, in every form a quantity takes.
func TestMetricValuesInMilli(t *testing.T) {
	for s, want := range map[string]int64{"0": 0, "123": 123000, "123m": 123, "-5": -5000, "-5m": -5, "007": 7000,
		"999999999999999": 999999999999999000, "1.5": 1500, "1e3": 1000000, "5Ki": 5120000, "0.0001": 1, "+5": 5000} {
		obs, v := ObservationsFromProto("metrics", []*pb.MetricObservation{{Values: []string{s}}})
		if len(v) > 0 || len(obs) != 1 || len(obs[0].Values) != 1 || obs[0].Values[0] != want {
			t.Errorf("value %q: %+v, violations %v; want %d milli-units", s, obs, v, want)
		}
	}
}
