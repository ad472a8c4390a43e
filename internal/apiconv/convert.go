package apiconv

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"k8s.io/apimachinery/pkg/api/resource"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
	"github.com/hpa-recommender/hpa-recommender/recommender"
)

// This file and its convert_*.go siblings translate between the public API messages and the
// domain types of package recommender. Conversion only parses: quantities, timestamps and
// durations that cannot be represented are reported as FieldViolations; whether a value makes
// sense (counts, required fields, metric types) is validation's job. Nil messages are accepted
// everywhere and read as their zero value.

// FieldViolation is one bad field of a request: Field is its protojson path
// ("spec.metrics[0].resource.target.averageValue", "steps[3].pods[1].requests[cpu]"), the form
// google.rpc.BadRequest.FieldViolation.field takes.
type FieldViolation struct {
	Field       string
	Description string
}

// The bounds of a quantity whose milli-value (rounded up, as Quantity.MilliValue rounds) fits
// an int64: at most MaxInt64 milli-units, and more than MinInt64 - 1 of them. Read only through
// milliFits, which compares copies.
var (
	maxMilli      = *resource.NewMilliQuantity(math.MaxInt64, resource.DecimalSI)
	belowMinMilli = resource.MustParse("-9223372036854775809m")
)

// milliFits reports whether q's milli-value fits an int64, exactly. Its arguments are copies:
// Quantity.Cmp may convert both operands to their inf.Dec form in place, which would change
// how q rounds afterwards and race on the shared bounds.
func milliFits(q, hi, lo resource.Quantity) bool {
	// Within ±9e15 units the milli-value fits with room to spare, and the comparison with an
	// int64 needs no decimal conversion (the exact bounds cost several allocations each).
	if q.CmpInt64(9e15) < 0 && q.CmpInt64(-9e15) > 0 {
		return true
	}
	return q.Cmp(hi) <= 0 && q.Cmp(lo) > 0
}

// pathElem is one step of a protojson path: a field name, optionally followed by a list index
// or a map key.
type pathElem struct {
	name   string
	index  int // -1 when the element has no index
	key    string
	hasKey bool
}

// converter walks one request. It keeps the current path as a stack and formats it only when a
// violation is reported, so a clean conversion builds no path strings.
type converter struct {
	path       []pathElem
	violations []FieldViolation
}

func newConverter(field string) *converter {
	c := &converter{path: make([]pathElem, 0, 8)}
	if field != "" {
		c.push(field)
	}
	return c
}

func (c *converter) push(name string) {
	c.path = append(c.path, pathElem{name: name, index: -1})
}

func (c *converter) pushIndex(name string, i int) {
	c.path = append(c.path, pathElem{name: name, index: i})
}

func (c *converter) pop() { c.path = c.path[:len(c.path)-1] }

// fail reports a violation of the current path, extended by name when name is not empty.
func (c *converter) fail(name, description string) {
	c.failElem(pathElem{name: name, index: -1}, description)
}

// failKey reports a violation of the map entry key of the field name.
func (c *converter) failKey(name, key, description string) {
	c.failElem(pathElem{name: name, index: -1, key: key, hasKey: true}, description)
}

func (c *converter) failElem(last pathElem, description string) {
	var b strings.Builder
	for _, e := range c.path {
		writeElem(&b, e)
	}
	if last.name != "" || last.hasKey {
		writeElem(&b, last)
	}
	c.violations = append(c.violations, FieldViolation{Field: b.String(), Description: description})
}

func writeElem(b *strings.Builder, e pathElem) {
	if e.name != "" {
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(e.name)
	}
	if e.index >= 0 {
		b.WriteByte('[')
		b.WriteString(strconv.Itoa(e.index))
		b.WriteByte(']')
	}
	if e.hasKey {
		b.WriteByte('[')
		b.WriteString(e.key)
		b.WriteByte(']')
	}
}

// quantity parses the quantity s of the field name.
func (c *converter) quantity(name, s string) (resource.Quantity, bool) {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		c.fail(name, err.Error())
		return resource.Quantity{}, false
	}
	return q, true
}

// optQuantity parses an optional quantity; nil stays nil.
func (c *converter) optQuantity(name string, s *string) *resource.Quantity {
	if s == nil {
		return nil
	}
	q, ok := c.quantity(name, *s)
	if !ok {
		return nil
	}
	return &q
}

// milli parses a metric value into milli-units, as upstream's metrics client does with
// Quantity.MilliValue.
func (c *converter) milli(name, s string) int64 {
	q, ok := c.quantity(name, s)
	if !ok {
		return 0
	}
	if !milliFits(q, maxMilli, belowMinMilli) {
		c.fail(name, "quantity out of range: its milli-value must fit a signed 64-bit integer")
		return 0
	}
	return q.MilliValue()
}

// requests parses a map of resource name to quantity; an empty map is nil.
func (c *converter) requests(name string, m map[string]string) map[string]resource.Quantity {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]resource.Quantity, len(m))
	var bad []string
	for k, v := range m {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			bad = append(bad, k)
			continue
		}
		out[k] = q
	}
	if len(bad) > 0 {
		slices.Sort(bad) // map order is random; violations are reported in key order
		for _, k := range bad {
			_, err := resource.ParseQuantity(m[k])
			c.failKey(name, k, err.Error())
		}
	}
	return out
}

// time converts a timestamp; nil is the zero time.
func (c *converter) time(name string, ts *timestamppb.Timestamp) time.Time {
	if ts == nil {
		return time.Time{}
	}
	if err := ts.CheckValid(); err != nil {
		c.fail(name, "invalid timestamp: must be from 0001-01-01 to 9999-12-31 with nanos in [0, 1e9)")
		return time.Time{}
	}
	return ts.AsTime()
}

// duration converts a duration; nil is def.
func (c *converter) duration(name string, d *durationpb.Duration, def time.Duration) time.Duration {
	if d == nil {
		return def
	}
	if err := d.CheckValid(); err != nil {
		c.fail(name, "invalid duration: must be within ±10000 years with seconds and nanos of the same sign")
		return def
	}
	return d.AsDuration()
}

// Simulation is a SimulateRequest in domain form: the arguments of recommender.Simulate.
type Simulation struct {
	Spec            *recommender.Spec
	Options         recommender.Options
	InitialReplicas int32
	// State is the starting state; nil when the request has no history (first sight: the
	// replay seeds it from the first step).
	State *recommender.State
	Steps []recommender.Step
}

// RecommendFromProto converts a RecommendRequest's decision inputs. Absent options take
// defaults; an absent statusReplicas is currentReplicas. A nil spec stays nil.
func RecommendFromProto(req *pb.RecommendRequest, defaults recommender.Options) (recommender.Input, recommender.Options, []FieldViolation) {
	c := newConverter("")
	var spec *recommender.Spec
	if s := req.GetSpec(); s != nil {
		c.push("spec")
		spec = c.spec(s)
		c.pop()
	}
	in, opts := c.recommendInput(req, defaults)
	in.Spec = spec
	return in, opts, c.violations
}

// recommendInput converts everything of a RecommendRequest but its spec (in.Spec stays nil).
func (c *converter) recommendInput(req *pb.RecommendRequest, defaults recommender.Options) (recommender.Input, recommender.Options) {
	in := recommender.Input{
		CurrentReplicas: req.GetCurrentReplicas(),
		StatusReplicas:  req.GetCurrentReplicas(),
	}
	if req != nil && req.StatusReplicas != nil {
		in.StatusReplicas = *req.StatusReplicas
	}
	in.Pods = c.pods("pods", req.GetPods())
	in.Metrics = c.observations("metrics", req.GetMetrics())
	c.push("options")
	opts := c.options(req.GetOptions(), defaults)
	c.pop()
	return in, opts
}

// SimulationFromProto converts a SimulateRequest. Absent options take defaults.
func SimulationFromProto(req *pb.SimulateRequest, defaults recommender.Options) (*Simulation, []FieldViolation) {
	c := newConverter("")
	sim := &Simulation{InitialReplicas: req.GetInitialReplicas()}
	if s := req.GetSpec(); s != nil {
		c.push("spec")
		sim.Spec = c.spec(s)
		c.pop()
	}
	c.push("options")
	sim.Options = c.options(req.GetOptions(), defaults)
	c.pop()
	if h := req.GetHistory(); h != nil {
		c.push("history")
		st := c.state(h)
		c.pop()
		sim.State = &st
	}
	if steps := req.GetSteps(); len(steps) > 0 {
		sim.Steps = make([]recommender.Step, len(steps))
		for i, s := range steps {
			c.pushIndex("steps", i)
			st := recommender.Step{
				Time:    c.time("time", s.GetTime()),
				Pods:    c.pods("pods", s.GetPods()),
				Metrics: c.observations("metrics", s.GetMetrics()),
			}
			if s != nil {
				st.CurrentReplicas = copyPtr(s.CurrentReplicas)
				st.StatusReplicas = copyPtr(s.StatusReplicas)
			}
			sim.Steps[i] = st
			c.pop()
		}
	}
	return sim, c.violations
}

func (c *converter) pods(name string, pods []*pb.PodState) []recommender.Pod {
	if len(pods) == 0 {
		return nil
	}
	out := make([]recommender.Pod, len(pods))
	for i, p := range pods {
		c.pushIndex(name, i)
		d := &out[i]
		d.Name = p.GetName()
		d.Phase = p.GetPhase()
		if p != nil && p.Ready != nil {
			d.HasReady = true
			d.Ready = *p.Ready
		}
		d.ReadyTransitionTime = c.time("readyTransitionTime", p.GetReadyTransitionTime())
		d.StartTime = c.time("startTime", p.GetStartTime())
		if dt := p.GetDeletionTimestamp(); dt != nil {
			d.Deleting = true
			d.DeletionTime = c.time("deletionTimestamp", dt)
		}
		if cs := p.GetContainers(); len(cs) > 0 {
			d.Containers = make([]recommender.Container, len(cs))
			for j, ct := range cs {
				c.pushIndex("containers", j)
				d.Containers[j] = recommender.Container{
					Name:     ct.GetName(),
					Requests: c.requests("requests", ct.GetRequests()),
				}
				c.pop()
			}
		}
		if cs := p.GetInitContainers(); len(cs) > 0 {
			d.InitContainers = make([]recommender.Container, len(cs))
			for j, ct := range cs {
				c.pushIndex("initContainers", j)
				d.InitContainers[j] = recommender.Container{
					Name:          ct.GetName(),
					RestartPolicy: ct.GetRestartPolicy(),
					Requests:      c.requests("requests", ct.GetRequests()),
				}
				c.pop()
			}
		}
		d.Requests = c.requests("requests", p.GetRequests())
		d.Overhead = c.requests("overhead", p.GetOverhead())
		c.pop()
	}
	return out
}

func (c *converter) observations(name string, obs []*pb.MetricObservation) []recommender.Observation {
	if len(obs) == 0 {
		return nil
	}
	out := make([]recommender.Observation, len(obs))
	for i, o := range obs {
		c.pushIndex(name, i)
		d := &out[i]
		d.Error = o.GetError()
		if pvs := o.GetPodValues(); len(pvs) > 0 {
			d.PodSamples = make([]recommender.PodSample, len(pvs))
			for j, pv := range pvs {
				c.pushIndex("podValues", j)
				d.PodSamples[j] = recommender.PodSample{
					Pod:       pv.GetPod(),
					Milli:     c.milli("value", pv.GetValue()),
					Timestamp: c.time("timestamp", pv.GetTimestamp()),
					Window:    c.duration("window", pv.GetWindow(), recommender.DefaultMetricWindow),
				}
				c.pop()
			}
		}
		if o != nil && o.Value != nil {
			v := c.milli("value", *o.Value)
			d.Value = &v
		}
		if vs := o.GetValues(); len(vs) > 0 {
			d.Values = make([]int64, len(vs))
			for j, v := range vs {
				c.pushIndex("values", j)
				d.Values[j] = c.milli("", v)
				c.pop()
			}
		}
		c.pop()
	}
	return out
}

func (c *converter) options(o *pb.Options, defaults recommender.Options) recommender.Options {
	out := defaults
	if o == nil {
		return out
	}
	if o.Tolerance != nil {
		if t := *o.Tolerance; math.IsNaN(t) || math.IsInf(t, 0) {
			c.fail("tolerance", "must be a finite number")
		} else {
			out.Tolerance = t
		}
	}
	out.CPUInitializationPeriod = c.duration("cpuInitializationPeriod", o.GetCpuInitializationPeriod(), defaults.CPUInitializationPeriod)
	out.InitialReadinessDelay = c.duration("initialReadinessDelay", o.GetInitialReadinessDelay(), defaults.InitialReadinessDelay)
	out.DownscaleStabilizationWindow = c.duration("downscaleStabilizationWindow", o.GetDownscaleStabilizationWindow(), defaults.DownscaleStabilizationWindow)
	if o.KubernetesVersion != nil {
		if *o.KubernetesVersion == "" {
			// Present but empty is a mistake, not "the default": absent says that.
			c.fail("kubernetesVersion", "must not be empty: supported are "+recommender.OldestKubernetesVersion+" to "+recommender.NewestKubernetesVersion+" (absent: the server's default)")
		} else if _, err := recommender.RulesFor(recommender.Options{KubernetesVersion: *o.KubernetesVersion}); err != nil {
			c.fail("kubernetesVersion", err.Error())
		} else {
			out.KubernetesVersion = *o.KubernetesVersion
		}
	}
	if o.HpaConfigurableTolerance != nil {
		v := *o.HpaConfigurableTolerance
		out.HPAConfigurableTolerance = &v
		if _, err := recommender.RulesFor(out); err != nil {
			c.fail("hpaConfigurableTolerance", err.Error())
			out.HPAConfigurableTolerance = defaults.HPAConfigurableTolerance
		}
	}
	if o.HpaScaleToZero != nil {
		v := *o.HpaScaleToZero
		out.HPAScaleToZero = &v
	}
	return out
}

// scaledToZeroCondition is what history.scaledToZero stands for: upstream's condition after a
// rescale to zero.
func scaledToZeroCondition() recommender.Condition {
	return recommender.Condition{
		Type:   recommender.ConditionScaledToZero,
		Status: recommender.StatusTrue,
		Reason: "ScaledToZero",
	}
}

// StateFromProto converts a history into the algorithm's state. A non-nil history is used as
// given, so the state is Seeded (even for {}); a nil one is the unseeded zero state.
// scaledToZero becomes a ScaledToZero=True condition. field is the message's path ("history").
func StateFromProto(field string, h *pb.History) (recommender.State, []FieldViolation) {
	c := newConverter(field)
	out := c.state(h)
	return out, c.violations
}

func (c *converter) state(h *pb.History) recommender.State {
	if h == nil {
		return recommender.State{}
	}
	st := recommender.State{Seeded: true}
	if rs := h.GetRecommendations(); len(rs) > 0 {
		st.History.Recommendations = make([]recommender.Recommendation, len(rs))
		for i, r := range rs {
			c.pushIndex("recommendations", i)
			st.History.Recommendations[i] = recommender.Recommendation{
				Time:     c.time("time", r.GetTime()),
				Replicas: r.GetReplicas(),
			}
			c.pop()
		}
	}
	st.History.ScaleUpEvents = c.scaleEvents("scaleUpEvents", h.GetScaleUpEvents())
	st.History.ScaleDownEvents = c.scaleEvents("scaleDownEvents", h.GetScaleDownEvents())
	if h.GetScaledToZero() {
		st.Conditions = []recommender.Condition{scaledToZeroCondition()}
	}
	return st
}

func (c *converter) scaleEvents(name string, evs []*pb.ScaleEvent) []recommender.ScaleEvent {
	if len(evs) == 0 {
		return nil
	}
	out := make([]recommender.ScaleEvent, len(evs))
	for i, e := range evs {
		c.pushIndex(name, i)
		out[i] = recommender.ScaleEvent{Time: c.time("time", e.GetTime()), Change: e.GetChange()}
		c.pop()
	}
	return out
}

// HistoryToProto writes a state's history; scaledToZero is true when the state has a
// ScaledToZero=True condition. Other conditions are not part of a history. A nil state is nil.
func HistoryToProto(st *recommender.State) *pb.History {
	if st == nil {
		return nil
	}
	h := &pb.History{ScaledToZero: recommender.ScaledToZero(st.Conditions)}
	if rs := st.History.Recommendations; len(rs) > 0 {
		h.Recommendations = make([]*pb.HistoryRecommendation, len(rs))
		for i, r := range rs {
			h.Recommendations[i] = &pb.HistoryRecommendation{Time: timeToProto(r.Time), Replicas: r.Replicas}
		}
	}
	h.ScaleUpEvents = scaleEventsToProto(st.History.ScaleUpEvents)
	h.ScaleDownEvents = scaleEventsToProto(st.History.ScaleDownEvents)
	return h
}

func scaleEventsToProto(evs []recommender.ScaleEvent) []*pb.ScaleEvent {
	if len(evs) == 0 {
		return nil
	}
	out := make([]*pb.ScaleEvent, len(evs))
	for i, e := range evs {
		out[i] = &pb.ScaleEvent{Time: timeToProto(e.Time), Change: e.Change}
	}
	return out
}

// timeToProto writes a time; the zero time is nil (absent).
func timeToProto(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

func copyPtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
