package local

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"k8s.io/apimachinery/pkg/api/resource"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
	"github.com/hpa-recommender/hpa-recommender/recommender"
)

// This file reads the API messages into the engine's domain types (only the directions the
// CLI needs: requests in, decisions out). It follows the API's documented reading of each
// field (DESIGN.md "Messages"); the server has its own converter in package server, which the
// clients may not import.

// violation is one bad field, by protojson path.
type violation struct{ field, description string }

// reader collects violations while converting.
type reader struct{ bad []violation }

func (r *reader) fail(field, desc string) { r.bad = append(r.bad, violation{field, desc}) }

func (r *reader) quantity(field, s string) (resource.Quantity, bool) {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		r.fail(field, err.Error())
		return resource.Quantity{}, false
	}
	return q, true
}

func (r *reader) optQuantity(field string, s *string) *resource.Quantity {
	if s == nil {
		return nil
	}
	q, ok := r.quantity(field, *s)
	if !ok {
		return nil
	}
	return &q
}

// milli reads a metric value in milli-units; its milli-value must fit an int64.
func (r *reader) milli(field, s string) int64 {
	q, ok := r.quantity(field, s)
	if !ok {
		return 0
	}
	const maxUnits = math.MaxInt64 / 1000
	if q.CmpInt64(maxUnits) > 0 || q.CmpInt64(-maxUnits) < 0 {
		r.fail(field, "quantity out of range: its milli-value must fit a signed 64-bit integer")
		return 0
	}
	return q.MilliValue()
}

func (r *reader) requests(field string, m map[string]string) map[string]resource.Quantity {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]resource.Quantity, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if q, ok := r.quantity(fmt.Sprintf("%s[%s]", field, k), m[k]); ok {
			out[k] = q
		}
	}
	return out
}

func (r *reader) time(field string, ts *timestamppb.Timestamp) time.Time {
	if ts == nil {
		return time.Time{}
	}
	if err := ts.CheckValid(); err != nil {
		r.fail(field, "invalid timestamp: "+err.Error())
		return time.Time{}
	}
	return ts.AsTime()
}

func (r *reader) duration(field string, d *durationpb.Duration, def time.Duration) time.Duration {
	if d == nil {
		return def
	}
	if err := d.CheckValid(); err != nil {
		r.fail(field, "invalid duration: "+err.Error())
		return def
	}
	return d.AsDuration()
}

func ptrCopy[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func (r *reader) spec(path string, s *pb.HorizontalPodAutoscalerSpec) *recommender.Spec {
	if s == nil {
		return nil
	}
	out := &recommender.Spec{
		ScaleTargetRef: objectRef(s.GetScaleTargetRef()),
		MinReplicas:    ptrCopy(s.MinReplicas),
		MaxReplicas:    s.GetMaxReplicas(),
	}
	for i, m := range s.GetMetrics() {
		out.Metrics = append(out.Metrics, r.metricSpec(fmt.Sprintf("%s.metrics[%d]", path, i), m))
	}
	if b := s.GetBehavior(); b != nil {
		out.Behavior = &recommender.Behavior{
			ScaleUp:   r.rules(path+".behavior.scaleUp", b.GetScaleUp()),
			ScaleDown: r.rules(path+".behavior.scaleDown", b.GetScaleDown()),
		}
	}
	return out
}

// metricSpec reads every source that is set; validation reports one that disagrees with type.
func (r *reader) metricSpec(path string, m *pb.MetricSpec) recommender.MetricSpec {
	out := recommender.MetricSpec{Type: m.GetType()}
	if s := m.GetResource(); s != nil {
		out.Resource = &recommender.ResourceMetricSource{Name: s.GetName(), Target: r.target(path+".resource.target", s.GetTarget())}
	}
	if s := m.GetContainerResource(); s != nil {
		out.ContainerResource = &recommender.ContainerResourceMetricSource{
			Name: s.GetName(), Container: s.GetContainer(), Target: r.target(path+".containerResource.target", s.GetTarget()),
		}
	}
	if s := m.GetPods(); s != nil {
		out.Pods = &recommender.PodsMetricSource{Metric: metricID(s.GetMetric()), Target: r.target(path+".pods.target", s.GetTarget())}
	}
	if s := m.GetObject(); s != nil {
		out.Object = &recommender.ObjectMetricSource{
			DescribedObject: objectRef(s.GetDescribedObject()),
			Metric:          metricID(s.GetMetric()),
			Target:          r.target(path+".object.target", s.GetTarget()),
		}
	}
	if s := m.GetExternal(); s != nil {
		out.External = &recommender.ExternalMetricSource{Metric: metricID(s.GetMetric()), Target: r.target(path+".external.target", s.GetTarget())}
	}
	return out
}

func (r *reader) target(path string, t *pb.MetricTarget) recommender.MetricTarget {
	if t == nil {
		return recommender.MetricTarget{}
	}
	return recommender.MetricTarget{
		Type:               t.GetType(),
		Value:              r.optQuantity(path+".value", t.Value),
		AverageValue:       r.optQuantity(path+".averageValue", t.AverageValue),
		AverageUtilization: ptrCopy(t.AverageUtilization),
	}
}

// rules reads scaling rules; an empty policies list stays nil (absent, defaulted).
func (r *reader) rules(path string, s *pb.HPAScalingRules) *recommender.ScalingRules {
	if s == nil {
		return nil
	}
	out := &recommender.ScalingRules{
		StabilizationWindowSeconds: ptrCopy(s.StabilizationWindowSeconds),
		SelectPolicy:               ptrCopy(s.SelectPolicy),
		Tolerance:                  r.optQuantity(path+".tolerance", s.Tolerance),
	}
	for _, p := range s.GetPolicies() {
		out.Policies = append(out.Policies, recommender.ScalingPolicy{Type: p.GetType(), Value: p.GetValue(), PeriodSeconds: p.GetPeriodSeconds()})
	}
	return out
}

func objectRef(o *pb.CrossVersionObjectReference) recommender.ObjectReference {
	return recommender.ObjectReference{APIVersion: o.GetApiVersion(), Kind: o.GetKind(), Name: o.GetName()}
}

func metricID(m *pb.MetricIdentifier) recommender.MetricIdentifier {
	id := recommender.MetricIdentifier{Name: m.GetName()}
	if s := m.GetSelector(); s != nil {
		id.Selector = &recommender.LabelSelector{}
		if len(s.GetMatchLabels()) > 0 {
			id.Selector.MatchLabels = maps.Clone(s.GetMatchLabels())
		}
		for _, e := range s.GetMatchExpressions() {
			req := recommender.LabelSelectorRequirement{Key: e.GetKey(), Operator: e.GetOperator()}
			if len(e.GetValues()) > 0 {
				req.Values = slices.Clone(e.GetValues())
			}
			id.Selector.MatchExpressions = append(id.Selector.MatchExpressions, req)
		}
	}
	return id
}

func (r *reader) pods(path string, pods []*pb.PodState) []recommender.Pod {
	if len(pods) == 0 {
		return nil
	}
	out := make([]recommender.Pod, len(pods))
	for i, p := range pods {
		pp := fmt.Sprintf("%s[%d]", path, i)
		d := recommender.Pod{
			Name:                p.GetName(),
			Phase:               p.GetPhase(),
			ReadyTransitionTime: r.time(pp+".readyTransitionTime", p.GetReadyTransitionTime()),
			StartTime:           r.time(pp+".startTime", p.GetStartTime()),
			Requests:            r.requests(pp+".requests", p.GetRequests()),
		}
		if p.Ready != nil {
			d.HasReady, d.Ready = true, *p.Ready
		}
		if ts := p.GetDeletionTimestamp(); ts != nil {
			d.Deleting = true
			r.time(pp+".deletionTimestamp", ts)
		}
		for j, c := range p.GetContainers() {
			d.Containers = append(d.Containers, recommender.Container{
				Name: c.GetName(), Requests: r.requests(fmt.Sprintf("%s.containers[%d].requests", pp, j), c.GetRequests()),
			})
		}
		for j, c := range p.GetInitContainers() {
			d.InitContainers = append(d.InitContainers, recommender.Container{
				Name: c.GetName(), RestartPolicy: c.GetRestartPolicy(),
				Requests: r.requests(fmt.Sprintf("%s.initContainers[%d].requests", pp, j), c.GetRequests()),
			})
		}
		out[i] = d
	}
	return out
}

func (r *reader) observations(path string, obs []*pb.MetricObservation) []recommender.Observation {
	if len(obs) == 0 {
		return nil
	}
	out := make([]recommender.Observation, len(obs))
	for i, o := range obs {
		op := fmt.Sprintf("%s[%d]", path, i)
		d := recommender.Observation{Error: o.GetError()}
		for j, pv := range o.GetPodValues() {
			vp := fmt.Sprintf("%s.podValues[%d]", op, j)
			d.PodSamples = append(d.PodSamples, recommender.PodSample{
				Pod:       pv.GetPod(),
				Milli:     r.milli(vp+".value", pv.GetValue()),
				Timestamp: r.time(vp+".timestamp", pv.GetTimestamp()),
				Window:    r.duration(vp+".window", pv.GetWindow(), recommender.DefaultMetricWindow),
			})
		}
		if o.Value != nil {
			v := r.milli(op+".value", *o.Value)
			d.Value = &v
		}
		for j, v := range o.GetValues() {
			d.Values = append(d.Values, r.milli(fmt.Sprintf("%s.values[%d]", op, j), v))
		}
		out[i] = d
	}
	return out
}

// options reads options; an absent field takes defaults', an explicit zero is kept.
func (r *reader) options(o *pb.Options, defaults recommender.Options) recommender.Options {
	out := defaults
	if o == nil {
		return out
	}
	if o.Tolerance != nil {
		if t := *o.Tolerance; math.IsNaN(t) || math.IsInf(t, 0) {
			r.fail("options.tolerance", "must be a finite number")
		} else {
			out.Tolerance = t
		}
	}
	out.CPUInitializationPeriod = r.duration("options.cpuInitializationPeriod", o.GetCpuInitializationPeriod(), defaults.CPUInitializationPeriod)
	out.InitialReadinessDelay = r.duration("options.initialReadinessDelay", o.GetInitialReadinessDelay(), defaults.InitialReadinessDelay)
	out.DownscaleStabilizationWindow = r.duration("options.downscaleStabilizationWindow", o.GetDownscaleStabilizationWindow(), defaults.DownscaleStabilizationWindow)
	return out
}

// state reads a history: present (even {}) means used as given, so Seeded; scaledToZero stands
// for the ScaledToZero=True condition upstream sets after a rescale to zero.
func (r *reader) state(h *pb.History) *recommender.State {
	if h == nil {
		return nil
	}
	st := &recommender.State{Seeded: true}
	for i, rec := range h.GetRecommendations() {
		st.History.Recommendations = append(st.History.Recommendations, recommender.Recommendation{
			Time: r.time(fmt.Sprintf("history.recommendations[%d].time", i), rec.GetTime()), Replicas: rec.GetReplicas(),
		})
	}
	events := func(name string, evs []*pb.ScaleEvent) []recommender.ScaleEvent {
		var out []recommender.ScaleEvent
		for i, e := range evs {
			out = append(out, recommender.ScaleEvent{Time: r.time(fmt.Sprintf("history.%s[%d].time", name, i), e.GetTime()), Change: e.GetChange()})
		}
		return out
	}
	st.History.ScaleUpEvents = events("scaleUpEvents", h.GetScaleUpEvents())
	st.History.ScaleDownEvents = events("scaleDownEvents", h.GetScaleDownEvents())
	if h.GetScaledToZero() {
		st.Conditions = []recommender.Condition{{Type: recommender.ConditionScaledToZero, Status: recommender.StatusTrue, Reason: "ScaledToZero"}}
	}
	return st
}

// Domain -> API.

func tsOrNil(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

func quantityString(q *resource.Quantity) *string {
	if q == nil {
		return nil
	}
	c := q.DeepCopy() // String caches in its receiver: format a copy, never a shared value
	s := c.String()
	return &s
}

func decisionToProto(d *recommender.Decision) *pb.RecommendResponse {
	return &pb.RecommendResponse{
		DecisionTime:    tsOrNil(d.Time),
		DesiredReplicas: d.DesiredReplicas,
		CurrentReplicas: d.CurrentReplicas,
		Scale:           d.Scale(),
		CurrentMetrics:  metricStatuses(d.CurrentMetrics),
		Conditions:      conditions(d.Conditions),
		Explanation:     explanation(&d.Explanation),
	}
}

func stepResult(d *recommender.Decision) *pb.SimulateStepResult {
	return &pb.SimulateStepResult{
		Time:            tsOrNil(d.Time),
		DesiredReplicas: d.DesiredReplicas,
		CurrentMetrics:  metricStatuses(d.CurrentMetrics),
		Conditions:      conditions(d.Conditions),
		Explanation:     explanation(&d.Explanation),
	}
}

func historyToProto(st *recommender.State) *pb.History {
	h := &pb.History{ScaledToZero: recommender.ScaledToZero(st.Conditions)}
	for _, r := range st.History.Recommendations {
		h.Recommendations = append(h.Recommendations, &pb.HistoryRecommendation{Time: tsOrNil(r.Time), Replicas: r.Replicas})
	}
	for _, e := range st.History.ScaleUpEvents {
		h.ScaleUpEvents = append(h.ScaleUpEvents, &pb.ScaleEvent{Time: tsOrNil(e.Time), Change: e.Change})
	}
	for _, e := range st.History.ScaleDownEvents {
		h.ScaleDownEvents = append(h.ScaleDownEvents, &pb.ScaleEvent{Time: tsOrNil(e.Time), Change: e.Change})
	}
	return h
}

func metricStatuses(ms []recommender.MetricStatus) []*pb.MetricStatus {
	var out []*pb.MetricStatus
	for i := range ms {
		m := &ms[i]
		s := &pb.MetricStatus{Type: m.Type}
		if r := m.Resource; r != nil {
			s.Resource = &pb.ResourceMetricStatus{Name: r.Name, Current: valueStatus(&r.Current)}
		}
		if r := m.ContainerResource; r != nil {
			s.ContainerResource = &pb.ContainerResourceMetricStatus{Name: r.Name, Container: r.Container, Current: valueStatus(&r.Current)}
		}
		if p := m.Pods; p != nil {
			s.Pods = &pb.PodsMetricStatus{Metric: metricIDToProto(&p.Metric), Current: valueStatus(&p.Current)}
		}
		if o := m.Object; o != nil {
			s.Object = &pb.ObjectMetricStatus{Metric: metricIDToProto(&o.Metric), Current: valueStatus(&o.Current), DescribedObject: objectRefToProto(o.DescribedObject)}
		}
		if e := m.External; e != nil {
			s.External = &pb.ExternalMetricStatus{Metric: metricIDToProto(&e.Metric), Current: valueStatus(&e.Current)}
		}
		out = append(out, s)
	}
	return out
}

func valueStatus(v *recommender.MetricValueStatus) *pb.MetricValueStatus {
	return &pb.MetricValueStatus{
		Value:              quantityString(v.Value),
		AverageValue:       quantityString(v.AverageValue),
		AverageUtilization: ptrCopy(v.AverageUtilization),
	}
}

func metricIDToProto(m *recommender.MetricIdentifier) *pb.MetricIdentifier {
	out := &pb.MetricIdentifier{Name: m.Name}
	if s := m.Selector; s != nil {
		out.Selector = &pb.LabelSelector{}
		if len(s.MatchLabels) > 0 {
			out.Selector.MatchLabels = maps.Clone(s.MatchLabels)
		}
		for _, e := range s.MatchExpressions {
			req := &pb.LabelSelectorRequirement{Key: e.Key, Operator: e.Operator}
			if len(e.Values) > 0 {
				req.Values = slices.Clone(e.Values)
			}
			out.Selector.MatchExpressions = append(out.Selector.MatchExpressions, req)
		}
	}
	return out
}

func objectRefToProto(r recommender.ObjectReference) *pb.CrossVersionObjectReference {
	if r == (recommender.ObjectReference{}) {
		return nil
	}
	return &pb.CrossVersionObjectReference{ApiVersion: r.APIVersion, Kind: r.Kind, Name: r.Name}
}

func conditions(cs []recommender.Condition) []*pb.Condition {
	var out []*pb.Condition
	for _, c := range cs {
		out = append(out, &pb.Condition{
			Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message,
			LastTransitionTime: tsOrNil(c.LastTransitionTime),
		})
	}
	return out
}

func explanation(e *recommender.Explanation) *pb.Explanation {
	out := &pb.Explanation{
		Message:        e.Message,
		WinningMetric:  e.WinningMetric,
		Proposal:       e.Proposal,
		Stabilized:     e.Stabilized,
		Limited:        e.Limited,
		LimitingPolicy: e.LimitingPolicy,
		Final:          e.Final,
		LimitReason:    e.LimitReason,
	}
	if e.StabilizationWindow != 0 {
		out.StabilizationWindow = durationpb.New(e.StabilizationWindow)
	}
	for _, m := range e.Metrics {
		out.Metrics = append(out.Metrics, &pb.MetricExplanation{
			Index: m.Index, Name: m.Name, Proposal: m.Proposal, UsageRatio: m.UsageRatio,
			ReadyPods: m.ReadyPods, IgnoredPods: m.IgnoredPods, MissingPods: m.MissingPods,
			UnreadyPods: m.UnreadyPods, Error: m.Error,
		})
	}
	return out
}
