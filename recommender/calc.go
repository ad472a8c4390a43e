package recommender

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/big"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

// tolerances is the (down, up) pair of R-TOL.
type tolerances struct {
	down, up float64
}

// within reports whether ratio r needs no change (R-TOL-1: inclusive, in float64).
func (t tolerances) within(r float64) bool {
	return (1.0-t.down) <= r && r <= (1.0+t.up)
}

// ceilToInt32 rounds up and saturates at the int32 range (R-INT, upstream PR #141397).
// NaN keeps the amd64 conversion result upstream left unchanged.
func ceilToInt32(f float64) int32 {
	c := math.Ceil(f)
	switch {
	case math.IsNaN(c):
		return math.MinInt32
	case c >= math.MaxInt32:
		return math.MaxInt32
	case c <= math.MinInt32:
		return math.MinInt32
	}
	return int32(c)
}

// truncToInt32 truncates toward zero and saturates at the int32 range.
func truncToInt32(f float64) int32 {
	t := math.Trunc(f)
	switch {
	case math.IsNaN(t):
		return math.MinInt32
	case t >= math.MaxInt32:
		return math.MaxInt32
	case t <= math.MinInt32:
		return math.MinInt32
	}
	return int32(t)
}

// podGroups is the outcome of R-GRP for one metric.
type podGroups struct {
	ready   int
	unready []int // indexes into the pod list
	missing []int
	ignored int
}

// calcContext carries what every per-metric calculation reads.
type calcContext struct {
	now            time.Time
	opts           Options
	rules          Rules
	tol            tolerances
	specReplicas   int32
	statusReplicas int32
	pods           []Pod
	// scratch is the working maps of this call's per-pod metrics, which are computed one
	// after another: each reuses, emptied, what the one before left, so a decision allocates
	// them once, sized for its pods. Nothing in them outlives the metric that filled them.
	scratch struct {
		samples  sampleMap
		requests map[string]int64
	}
}

// metricResult is one metric's proposal, its status entry and its explanation.
type metricResult struct {
	proposal int32
	name     string // upstream's, for the conditions and the scale reason
	display  string // the explanation's name, where upstream's reads badly (empty: name)
	status   MetricStatus
	explain  MetricExplanation
	facts    metricFacts
	reason   string // the ScalingActive reason when err is set
	err      error
}

// Outcomes of a metric's tolerance and re-count rules, for the explanation's sentence.
const (
	factProposed    = iota // the ratio moved the count (no rule held it)
	factWithin             // R-TOL-1: the ratio is inside the tolerance band
	factReversed           // R-CALC-5: the re-count reversed the ratio's direction
	factCountFlip          // R-CALC-5: the re-counted count moved against the direction
	factNoTolerance        // R-TOL-5: at zero replicas a Value target applies no tolerance
)

// metricFacts is what one metric's rules did, beyond its MetricExplanation, so the sentence can
// name them: the tolerance band, and the missing and unready pods re-counted (R-CALC-4/5). It is
// internal: the public Explanation keeps its fields and the proto its shape.
type metricFacts struct {
	tol     tolerances
	outcome int
	// recounted is set when R-CALC-4 filled pods in; missing and unready are the pods filled,
	// missingFill says at what value the missing ones were counted, ratio2 is the ratio after.
	recounted   bool
	missing     int
	unready     int
	missingFill string
	unreadyFill string
	ratio2      float64
	count       int32 // the re-counted proposal R-CALC-5 dropped (factCountFlip)
}

var errNoPods = errors.New("no pods returned by selector while calculating replica count")
var errAllUnready = errors.New("did not receive metrics for targeted pods (pods might be unready)")

// sampleMap is the working map of R-GRP-3: pod name -> sample, with upstream's map semantics
// (the last sample for a name wins; deletions; fill-ins overwrite). To keep the map small it
// holds indexes: below len(obs) into the caller's samples (read only), above into fills.
type sampleMap struct {
	idx   map[string]int32
	obs   []PodSample
	fills []int64
}

// sampleMap returns the call's working map over samples, emptied of the previous metric's. It
// is valid until the next call of sampleMap.
func (c *calcContext) sampleMap(samples []PodSample) *sampleMap {
	m := &c.scratch.samples
	if m.idx == nil {
		m.idx = make(map[string]int32, max(len(samples), len(c.pods)))
	}
	clear(m.idx)
	m.obs, m.fills = samples, m.fills[:0]
	for i := range samples {
		m.idx[samples[i].Pod] = int32(i)
	}
	return m
}

func (m *sampleMap) len() int { return len(m.idx) }

// sample returns the observed sample for name, with the default window applied.
func (m *sampleMap) sample(name string) (PodSample, bool) {
	i, ok := m.idx[name]
	if !ok {
		return PodSample{}, false
	}
	if int(i) >= len(m.obs) {
		return PodSample{Pod: name, Milli: m.fills[int(i)-len(m.obs)]}, true
	}
	s := m.obs[i]
	if s.Window == 0 {
		s.Window = DefaultMetricWindow
	}
	return s, true
}

func (m *sampleMap) milli(i int32) int64 {
	if int(i) >= len(m.obs) {
		return m.fills[int(i)-len(m.obs)]
	}
	return m.obs[i].Milli
}

func (m *sampleMap) delete(name string) { delete(m.idx, name) }

// set stores a fill-in value for name.
func (m *sampleMap) set(name string, milli int64) {
	m.idx[name] = int32(len(m.obs) + len(m.fills))
	m.fills = append(m.fills, milli)
}

// groupPods applies R-GRP rules 1-5 in order. cpu selects the CPU readiness rules.
func (c *calcContext) groupPods(samples *sampleMap, cpu bool) podGroups {
	var g podGroups
	for i := range c.pods {
		p := &c.pods[i]
		if p.Deleting || p.Phase == PodFailed || (p.Phase == PodSucceeded && c.rules.IgnoreSucceededPods) {
			g.ignored++
			samples.delete(p.Name)
			continue
		}
		if p.Phase == PodPending {
			g.unready = append(g.unready, i)
			samples.delete(p.Name)
			continue
		}
		s, ok := samples.sample(p.Name)
		if !ok {
			g.missing = append(g.missing, i)
			continue
		}
		if cpu && c.cpuUnready(p, s) {
			g.unready = append(g.unready, i)
			samples.delete(p.Name)
			continue
		}
		g.ready++
	}
	return g
}

// cpuUnready is R-GRP rule 4.
func (c *calcContext) cpuUnready(p *Pod, s PodSample) bool {
	if !p.HasReady || p.StartTime.IsZero() {
		return true
	}
	if p.StartTime.Add(c.opts.CPUInitializationPeriod).After(c.now) {
		return !p.Ready || s.Timestamp.Before(p.ReadyTransitionTime.Add(s.Window))
	}
	return !p.Ready && p.StartTime.Add(c.opts.InitialReadinessDelay).After(p.ReadyTransitionTime)
}

// podRequests computes each of the call's pods' request for res in milli-units (R-RES-1,
// R-CRES), into the call's scratch map: it is valid until the next call of podRequests.
func (c *calcContext) podRequests(res, container string) (map[string]int64, error) {
	if c.scratch.requests == nil {
		c.scratch.requests = make(map[string]int64, len(c.pods))
	}
	out := c.scratch.requests
	clear(out)
	if err := fillRequests(out, c.pods, res, container, c.rules); err != nil {
		return nil, err
	}
	return out, nil
}

// fillRequests is podRequests into out, by the release's rules.
func fillRequests(out map[string]int64, pods []Pod, res, container string, rules Rules) error {
	for i := range pods {
		p := &pods[i]
		if container == "" && hasPodLevelRequests(p) {
			q, ok := effectivePodRequest(p, res, rules.PodOverheadInRequests)
			if !ok {
				return fmt.Errorf("missing pod-level request for %s in Pod %s", res, p.Name)
			}
			out[p.Name] = q
			continue
		}
		var sum int64
		found := false
		add := func(c *Container) error {
			if container != "" && c.Name != container {
				return nil
			}
			found = true
			q, ok := c.Requests[res]
			if !ok {
				return fmt.Errorf("missing request for %s in container %s of Pod %s", res, c.Name, p.Name)
			}
			sum += q.MilliValue()
			return nil
		}
		addAll := func(cs []Container, sidecarsOnly bool) error {
			for j := range cs {
				if sidecarsOnly && cs[j].RestartPolicy != "Always" {
					continue
				}
				if err := add(&cs[j]); err != nil {
					return err
				}
			}
			return nil
		}
		first, second, firstSidecars := p.Containers, p.InitContainers, false
		if rules.SidecarRequestsFirst {
			first, second, firstSidecars = p.InitContainers, p.Containers, true
		}
		if err := addAll(first, firstSidecars); err != nil {
			return err
		}
		if err := addAll(second, !firstSidecars); err != nil {
			return err
		}
		if container != "" && !found && rules.MissingContainerFails {
			return fmt.Errorf("container %s not found in Pod %s", container, p.Name)
		}
		out[p.Name] = sum
	}
	return nil
}

// podLevelResource reports whether pod-level requests may set res (cpu, memory, hugepages-*).
func podLevelResource(res string) bool {
	return res == "cpu" || res == "memory" || len(res) > 10 && res[:10] == "hugepages-"
}

func hasPodLevelRequests(p *Pod) bool {
	for name := range p.Requests {
		if podLevelResource(name) {
			return true
		}
	}
	return false
}

// effectivePodRequest is the scheduler's pod request for res: the containers' aggregate by the
// sidecar formula with exact quantity arithmetic, overridden by a pod-level entry, plus the
// pod's overhead when withOverhead (component-helpers PodRequests without ExcludeOverhead).
func effectivePodRequest(p *Pod, res string, withOverhead bool) (int64, bool) {
	q, found := podRequest(p, res)
	if o, ok := p.Overhead[res]; ok && withOverhead {
		q.Add(o)
		found = true
	}
	if !found {
		return 0, false
	}
	return q.MilliValue(), true
}

// podRequest is effectivePodRequest without the overhead, as a quantity.
func podRequest(p *Pod, res string) (resource.Quantity, bool) {
	if q, ok := p.Requests[res]; ok && podLevelResource(res) {
		return q.DeepCopy(), true
	}
	var sum resource.Quantity
	found := false
	for i := range p.Containers {
		if q, ok := p.Containers[i].Requests[res]; ok {
			sum.Add(q)
			found = true
		}
	}
	// Init containers: sidecars add to the running total; a regular init container needs
	// its own request plus the sidecars started before it.
	var sidecars, initMax resource.Quantity
	for i := range p.InitContainers {
		c := &p.InitContainers[i]
		q, ok := c.Requests[res]
		if c.RestartPolicy == "Always" {
			if ok {
				sidecars.Add(q)
				found = true
			}
			if sidecars.Cmp(initMax) > 0 {
				initMax = sidecars.DeepCopy()
			}
			continue
		}
		if ok {
			found = true
			t := sidecars.DeepCopy()
			t.Add(q)
			if t.Cmp(initMax) > 0 {
				initMax = t
			}
		}
	}
	sum.Add(sidecars)
	if initMax.Cmp(sum) > 0 {
		sum = initMax
	}
	return sum, found
}

// utilizationRatio is upstream's GetResourceUtilizationRatio (R-RES-2). The sums are exact and
// the percent saturates at the int32 range in every release (R-INT; upstream from 1.38,
// kubernetes/kubernetes#142192: before, they wrapped).
func utilizationRatio(samples *sampleMap, requests map[string]int64, target int32) (float64, int32, int64, error) {
	var usage, req wideSum
	n := int64(0)
	for name, i := range samples.idx {
		r, ok := requests[name]
		if !ok {
			continue
		}
		usage.add(samples.milli(i))
		req.add(r)
		n++
	}
	if req.sign() == 0 {
		return 0, 0, 0, errors.New("no metrics returned matched known pods")
	}
	var util int32
	if usage.big == nil && req.big == nil && usage.small <= math.MaxInt64/100 && usage.small >= math.MinInt64/100 {
		util = clampToInt32(usage.small * 100 / req.small)
	} else {
		pct := new(big.Int).Mul(usage.value(), big.NewInt(100))
		pct.Quo(pct, req.value())
		switch {
		case pct.Cmp(big.NewInt(math.MaxInt32)) > 0:
			util = math.MaxInt32
		case pct.Cmp(big.NewInt(math.MinInt32)) < 0:
			util = math.MinInt32
		default:
			util = int32(pct.Int64())
		}
	}
	return float64(util) / float64(target), util, usage.quo(n), nil
}

// averageRatio is upstream's GetMetricUsageRatio (R-PLAIN-1), with an exact sum (R-INT).
func averageRatio(samples *sampleMap, target int64) (float64, int64) {
	var total wideSum
	for _, i := range samples.idx {
		total.add(samples.milli(i))
	}
	avg := total.quo(int64(samples.len()))
	return float64(avg) / float64(target), avg
}

// wideSum adds int64 values without wrapping: in an int64 while the sum fits, else in a
// big.Int (only for values near the int64 range, so the usual case allocates nothing).
type wideSum struct {
	small int64
	big   *big.Int
}

func (w *wideSum) add(v int64) {
	if w.big != nil {
		w.big.Add(w.big, big.NewInt(v))
		return
	}
	s := w.small + v
	if (v > 0 && s < w.small) || (v < 0 && s > w.small) {
		w.big = new(big.Int).Add(big.NewInt(w.small), big.NewInt(v))
		return
	}
	w.small = s
}

func (w *wideSum) sign() int {
	if w.big != nil {
		return w.big.Sign()
	}
	return cmp.Compare(w.small, 0)
}

func (w *wideSum) value() *big.Int {
	if w.big != nil {
		return new(big.Int).Set(w.big)
	}
	return big.NewInt(w.small)
}

// quo is the sum divided by n > 0, truncated toward zero; the mean of int64 values fits.
func (w *wideSum) quo(n int64) int64 {
	if w.big == nil {
		return w.small / n
	}
	return new(big.Int).Quo(w.big, big.NewInt(n)).Int64()
}

// podAverage is the shared procedure of R-CALC for Resource, ContainerResource and Pods.
// ratio computes the usage ratio over the working map; fill is the scale-down value of a
// missing pod. It returns the proposal, the first-pass ratio and the pod groups.
// missingUp and missingDown say at what value the missing pods count (R-CALC-4), for the
// explanation (missingDown is formatted only when a scale-down re-counts, not on every call).
// f records which rules held or moved the count.
func (c *calcContext) podAverage(samples *sampleMap, g podGroups, ratio func(*sampleMap) (float64, error), fill func(name string) int64, missingUp string, missingDown func() string, f *metricFacts) (int32, float64, error) {
	f.tol = c.tol
	r, err := ratio(samples)
	if err != nil {
		return 0, 0, err
	}
	scaleUpWithUnready := len(g.unready) > 0 && r > 1.0
	if !scaleUpWithUnready && len(g.missing) == 0 {
		if c.tol.within(r) {
			f.outcome = factWithin
			return c.specReplicas, r, nil
		}
		return ceilToInt32(r * float64(g.ready)), r, nil
	}
	f.recounted, f.unreadyFill = true, missingUp
	if len(g.missing) > 0 {
		switch {
		case r < 1.0:
			f.missing, f.missingFill = len(g.missing), missingDown()
			for _, i := range g.missing {
				name := c.pods[i].Name
				samples.set(name, fill(name))
			}
		case r > 1.0:
			f.missing, f.missingFill = len(g.missing), missingUp
			for _, i := range g.missing {
				samples.set(c.pods[i].Name, 0)
			}
		}
	}
	if scaleUpWithUnready {
		f.unready = len(g.unready)
		for _, i := range g.unready {
			samples.set(c.pods[i].Name, 0)
		}
	}
	r2, err := ratio(samples)
	if err != nil {
		return 0, r, err
	}
	f.ratio2 = r2
	switch {
	case c.tol.within(r2):
		f.outcome = factWithin
		return c.specReplicas, r, nil
	case (r < 1.0 && r2 > 1.0) || (r > 1.0 && r2 < 1.0):
		f.outcome = factReversed
		return c.specReplicas, r, nil
	}
	n := ceilToInt32(r2 * float64(samples.len()))
	if (r2 < 1.0 && n > c.specReplicas) || (r2 > 1.0 && n < c.specReplicas) {
		f.outcome, f.count = factCountFlip, n
		return c.specReplicas, r, nil
	}
	return n, r, nil
}

// plainAverage is R-PLAIN: the pod-average procedure on the mean of the samples against an
// average-value target (milli-units); a missing pod is filled with the target on scale-down.
// It also returns the first-pass average, which the status reports (R-CALC-6).
func (c *calcContext) plainAverage(samples *sampleMap, g podGroups, target int64, f *metricFacts) (int32, float64, int64, error) {
	first := true
	var avg int64
	p, r, err := c.podAverage(samples, g, func(m *sampleMap) (float64, error) {
		r, a := averageRatio(m, target)
		if first {
			avg, first = a, false
		}
		return r, nil
	}, func(string) int64 { return target }, "0", func() string { return "the target" }, f)
	return p, r, avg, err
}

func (g podGroups) explain(e *MetricExplanation) {
	e.ReadyPods = int32(g.ready)
	e.UnreadyPods = int32(len(g.unready))
	e.MissingPods = int32(len(g.missing))
	e.IgnoredPods = int32(g.ignored)
}

// resourceMetric computes Resource and ContainerResource proposals (R-RES, R-PLAIN, R-CRES).
func (c *calcContext) resourceMetric(res, container string, target MetricTarget, obs *Observation, out *metricResult) {
	kind := MetricResource
	out.reason = "FailedGetResourceMetric"
	if container != "" {
		kind = MetricContainerResource
		out.reason = "FailedGetContainerResourceMetric"
	}
	fail := func(err error) {
		out.err = fmt.Errorf("failed to get %s utilization: %w", res, err)
	}
	if obs.Error != "" {
		fail(fmt.Errorf("unable to get metrics for resource %s: %s", res, obs.Error))
		return
	}
	if len(obs.PodSamples) == 0 {
		fail(fmt.Errorf("unable to get metrics for resource %s: no metrics returned from resource metrics API", res))
		return
	}
	if len(c.pods) == 0 {
		fail(errNoPods)
		return
	}
	samples := c.sampleMap(obs.PodSamples)
	g := c.groupPods(samples, res == "cpu")
	g.explain(&out.explain)
	if samples.len() == 0 {
		fail(errAllUnready)
		return
	}
	current := MetricValueStatus{}
	if target.AverageValue != nil {
		p, r, avg, err := c.plainAverage(samples, g, target.AverageValue.MilliValue(), &out.facts)
		if err != nil {
			fail(err)
			return
		}
		out.proposal, out.explain.UsageRatio = p, r
		out.name = res + " resource"
		current.AverageValue = milliQuantity(avg, res)
	} else {
		if target.AverageUtilization == nil {
			out.err = errors.New("invalid resource metric source: neither an average utilization target nor an average value (usage) target was set")
			return
		}
		tu := *target.AverageUtilization
		requests, err := c.podRequests(res, container)
		if err != nil {
			fail(err)
			return
		}
		first := true
		var util int32
		var raw int64
		p, r, err := c.podAverage(samples, g, func(m *sampleMap) (float64, error) {
			r, u, a, err := utilizationRatio(m, requests, tu)
			if first {
				util, raw, first = u, a, false
			}
			return r, err
		}, func(name string) int64 { return requests[name] * int64(max(100, tu)) / 100 },
			"0% of request", func() string { return fmt.Sprintf("%d%% of request", max(100, tu)) }, &out.facts)
		if err != nil {
			fail(err)
			return
		}
		out.proposal, out.explain.UsageRatio = p, r
		out.name = res + " resource utilization (percentage of request)"
		if container != "" {
			out.name = res + " container resource utilization (percentage of request)"
		}
		current.AverageUtilization = &util
		current.AverageValue = milliQuantity(raw, res)
	}
	out.status.Type = kind
	if container != "" {
		out.status.ContainerResource = &ContainerResourceMetricStatus{Name: res, Container: container, Current: current}
	} else {
		out.status.Resource = &ResourceMetricStatus{Name: res, Current: current}
	}
}

// milliQuantity builds a status quantity; memory is binary, everything else decimal (R-RES-5).
func milliQuantity(v int64, res string) *resource.Quantity {
	if res == "memory" {
		return resource.NewMilliQuantity(v, resource.BinarySI)
	}
	return resource.NewMilliQuantity(v, resource.DecimalSI)
}

// podsMetric computes a Pods metric proposal (R-PODS).
func (c *calcContext) podsMetric(src *PodsMetricSource, obs *Observation, out *metricResult) {
	out.reason = "FailedGetPodsMetric"
	fail := func(err error) {
		out.err = fmt.Errorf("failed to get pods metric value: %w", err)
	}
	if obs.Error != "" {
		fail(fmt.Errorf("unable to get metric %s: %s", src.Metric.Name, obs.Error))
		return
	}
	if len(obs.PodSamples) == 0 {
		fail(fmt.Errorf("unable to get metric %s: no metrics returned from custom metrics API", src.Metric.Name))
		return
	}
	if src.Target.AverageValue == nil {
		fail(errors.New("invalid pods metric source: no average value target was set"))
		return
	}
	if len(c.pods) == 0 {
		fail(errNoPods)
		return
	}
	tv := src.Target.AverageValue.MilliValue()
	samples := c.sampleMap(obs.PodSamples)
	g := c.groupPods(samples, false)
	g.explain(&out.explain)
	if samples.len() == 0 {
		fail(errAllUnready)
		return
	}
	p, r, avg, err := c.plainAverage(samples, g, tv, &out.facts)
	if err != nil {
		fail(err)
		return
	}
	out.proposal, out.explain.UsageRatio = p, r
	out.name = "pods metric " + src.Metric.Name
	out.status = MetricStatus{Type: MetricPods, Pods: &PodsMetricStatus{
		Metric:  src.Metric,
		Current: MetricValueStatus{AverageValue: resource.NewMilliQuantity(avg, resource.DecimalSI)},
	}}
}

// readyPods counts Running pods with Ready=True (R-OBJ-2).
func (c *calcContext) readyPods() (int64, error) {
	if len(c.pods) == 0 {
		return 0, errNoPods
	}
	var n int64
	for i := range c.pods {
		p := &c.pods[i]
		if p.Phase == PodRunning && p.HasReady && p.Ready {
			n++
		}
	}
	return n, nil
}

// valueProposal is upstream's getUsageRatioReplicaCount (R-OBJ-2, R-OBJ-3, R-TOL-5).
func (c *calcContext) valueProposal(r float64, e *MetricExplanation, f *metricFacts) (int32, error) {
	f.tol = c.tol
	if c.specReplicas == 0 {
		f.outcome = factNoTolerance
		return ceilToInt32(r), nil
	}
	if c.tol.within(r) {
		f.outcome = factWithin
		return c.specReplicas, nil
	}
	n, err := c.readyPods()
	if err != nil {
		return 0, fmt.Errorf("unable to calculate ready pods: %w", err)
	}
	e.ReadyPods = int32(n)
	return ceilToInt32(r * float64(n)), nil
}

// perPodProposal is the AverageValue procedure of R-OBJAVG / R-EXTAVG over statusReplicas.
func (c *calcContext) perPodProposal(usage, target int64, f *metricFacts) (int32, float64, int64) {
	f.tol = c.tol
	replicas := c.statusReplicas
	r := float64(usage) / (float64(target) * float64(replicas))
	if !c.tol.within(r) {
		replicas = ceilToInt32(float64(usage) / float64(target))
	} else {
		f.outcome = factWithin
	}
	var avg int64
	if c.statusReplicas != 0 {
		avg = ceilToInt64(float64(usage) / float64(c.statusReplicas))
	}
	return replicas, r, avg
}

func ceilToInt64(f float64) int64 {
	c := math.Ceil(f)
	switch {
	case math.IsNaN(c):
		return 0
	case c >= math.MaxInt64:
		return math.MaxInt64
	case c <= math.MinInt64:
		return math.MinInt64
	}
	return int64(c)
}

// objectMetric computes an Object metric proposal (R-OBJ, R-OBJAVG).
func (c *calcContext) objectMetric(src *ObjectMetricSource, obs *Observation, out *metricResult) {
	out.reason = "FailedGetObjectMetric"
	t := src.Target
	isValue := t.Type == TargetValue && t.Value != nil
	isAvg := t.Type == TargetAverageValue && t.AverageValue != nil
	if !isValue && !isAvg {
		out.err = errors.New("invalid object metric source: neither a value target nor an average value target was set")
		return
	}
	var usage int64
	switch {
	case obs.Error != "":
		out.err = fmt.Errorf("failed to get object metric value: unable to get metric %s: %s", src.Metric.Name, obs.Error)
		return
	case obs.Value == nil:
		out.err = fmt.Errorf("failed to get object metric value: unable to get metric %s: no metrics returned from custom metrics API", src.Metric.Name)
		return
	default:
		usage = *obs.Value
	}
	if isValue {
		r := float64(usage) / float64(t.Value.MilliValue())
		out.explain.UsageRatio = r
		p, err := c.valueProposal(r, &out.explain, &out.facts)
		if err != nil {
			out.err = fmt.Errorf("failed to get object metric value: %w", err)
			return
		}
		out.proposal = p
		out.name = src.DescribedObject.Kind + " metric " + src.Metric.Name
		out.status = MetricStatus{Type: MetricObject, Object: &ObjectMetricStatus{
			Metric:          src.Metric,
			DescribedObject: src.DescribedObject,
			Current:         MetricValueStatus{Value: resource.NewMilliQuantity(usage, resource.DecimalSI)},
		}}
		return
	}
	p, r, avg := c.perPodProposal(usage, t.AverageValue.MilliValue(), &out.facts)
	out.proposal, out.explain.UsageRatio = p, r
	// Before 1.38 upstream labels the per-pod Object metric with the External wording
	// (HPA-ALGORITHM §13.17).
	out.name = "external metric " + metricLabel(src.Metric)
	if c.rules.ObjectAverageValueKindName {
		out.name = src.DescribedObject.Kind + " metric " + src.Metric.Name
	}
	out.display = src.DescribedObject.Kind + " metric " + selectorLabel(src.Metric)
	out.status = MetricStatus{Type: MetricObject, Object: &ObjectMetricStatus{
		Metric:  src.Metric,
		Current: MetricValueStatus{AverageValue: resource.NewMilliQuantity(avg, resource.DecimalSI)},
	}}
}

// externalMetric computes an External metric proposal (R-EXT, R-EXTAVG).
func (c *calcContext) externalMetric(src *ExternalMetricSource, obs *Observation, out *metricResult) {
	out.reason = "FailedGetExternalMetric"
	t := src.Target
	if t.AverageValue == nil && t.Value == nil {
		out.err = errors.New("invalid external metric source: neither a value target nor an average value target was set")
		return
	}
	if obs.Error != "" || len(obs.Values) == 0 {
		msg := obs.Error
		if msg == "" {
			msg = "no metrics returned from external metrics API"
		}
		out.err = fmt.Errorf("failed to get external metric %s: %s", src.Metric.Name, msg)
		return
	}
	out.name = "external metric " + metricLabel(src.Metric)
	out.display = "external metric " + selectorLabel(src.Metric)
	if t.AverageValue != nil {
		// R-EXTAVG: a sum that turns negative saturates and stops.
		var usage int64
		for _, v := range obs.Values {
			usage += v
			if usage < 0 {
				usage = math.MaxInt64
				break
			}
		}
		p, r, avg := c.perPodProposal(usage, t.AverageValue.MilliValue(), &out.facts)
		out.proposal, out.explain.UsageRatio = p, r
		out.status = MetricStatus{Type: MetricExternal, External: &ExternalMetricStatus{
			Metric:  src.Metric,
			Current: MetricValueStatus{AverageValue: resource.NewMilliQuantity(avg, resource.DecimalSI)},
		}}
		return
	}
	// R-EXT: positive overflow is capped.
	var usage int64
	for _, v := range obs.Values {
		if v > 0 && usage > math.MaxInt64-v {
			usage = math.MaxInt64
			continue
		}
		usage += v
	}
	r := float64(usage) / float64(t.Value.MilliValue())
	out.explain.UsageRatio = r
	p, err := c.valueProposal(r, &out.explain, &out.facts)
	if err != nil {
		out.err = fmt.Errorf("failed to get external metric %s: %w", src.Metric.Name, err)
		return
	}
	out.proposal = p
	out.status = MetricStatus{Type: MetricExternal, External: &ExternalMetricStatus{
		Metric:  src.Metric,
		Current: MetricValueStatus{Value: resource.NewMilliQuantity(usage, resource.DecimalSI)},
	}}
}

// selectorLabel renders a metric for the explanation: its name, then its selector, if any, in
// kubectl's syntax: "qps{queue=a,tier in (x,y)}".
func selectorLabel(m MetricIdentifier) string {
	s := m.Selector
	if s == nil || len(s.MatchLabels)+len(s.MatchExpressions) == 0 {
		return m.Name
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(s.MatchLabels)) {
		parts = append(parts, k+"="+s.MatchLabels[k])
	}
	for _, r := range s.MatchExpressions {
		switch r.Operator {
		case "Exists":
			parts = append(parts, r.Key)
		case "DoesNotExist":
			parts = append(parts, "!"+r.Key)
		default:
			parts = append(parts, r.Key+" "+strings.ToLower(r.Operator)+" ("+strings.Join(r.Values, ",")+")")
		}
	}
	return m.Name + "{" + strings.Join(parts, ",") + "}"
}

// metricLabel renders "name(selector)" as upstream's messages do.
func metricLabel(m MetricIdentifier) string {
	if m.Selector == nil {
		return m.Name + "(<nil>)"
	}
	// What fmt.Sprintf("%s(&LabelSelector{MatchLabels:%v,MatchExpressions:%v,})", ...) writes
	// (upstream formats the selector so), without fmt's reflection: TestMetricLabelMatchesFmt.
	b := make([]byte, 0, 64)
	b = append(b, m.Name...)
	b = append(b, "(&LabelSelector{MatchLabels:map["...)
	keys := make([]string, 0, len(m.Selector.MatchLabels))
	for k := range m.Selector.MatchLabels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for i, k := range keys {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, k...)
		b = append(b, ':')
		b = append(b, m.Selector.MatchLabels[k]...)
	}
	b = append(b, "],MatchExpressions:["...)
	for i, r := range m.Selector.MatchExpressions {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, '{')
		b = append(b, r.Key...)
		b = append(b, ' ')
		b = append(b, r.Operator...)
		b = append(b, " ["...)
		for j, v := range r.Values {
			if j > 0 {
				b = append(b, ' ')
			}
			b = append(b, v...)
		}
		b = append(b, "]}"...)
	}
	b = append(b, "],})"...)
	return string(b)
}

// computeMetric dispatches one metric spec (R-OBJ-4, R-PLAIN-4, R-EXTAVG dispatch).
func (c *calcContext) computeMetric(i int, spec *MetricSpec, obs *Observation) metricResult {
	out := metricResult{explain: MetricExplanation{Index: int32(i)}}
	switch spec.Type {
	case MetricResource:
		if spec.Resource != nil {
			c.resourceMetric(spec.Resource.Name, "", spec.Resource.Target, obs, &out)
		}
	case MetricContainerResource:
		if spec.ContainerResource != nil {
			c.resourceMetric(spec.ContainerResource.Name, spec.ContainerResource.Container, spec.ContainerResource.Target, obs, &out)
		}
	case MetricPods:
		if spec.Pods != nil {
			c.podsMetric(spec.Pods, obs, &out)
		}
	case MetricObject:
		if spec.Object != nil {
			c.objectMetric(spec.Object, obs, &out)
		}
	case MetricExternal:
		if spec.External != nil {
			c.externalMetric(spec.External, obs, &out)
		}
	default:
		out.reason = "InvalidMetricSourceType"
		out.err = fmt.Errorf("unknown metric source type %q", spec.Type)
	}
	if out.err == nil && out.name == "" {
		out.reason = "InvalidMetricSourceType"
		out.err = fmt.Errorf("metric source %q is not set", spec.Type)
	}
	if out.err != nil {
		out.status = MetricStatus{}
		out.explain.Error = out.err.Error()
		out.explain.Name = metricSpecName(spec)
	} else {
		out.explain.Name = cmp.Or(out.display, out.name)
		out.explain.Proposal = out.proposal
	}
	return out
}

// metricSpecName names a metric for the explanation when it failed.
func metricSpecName(spec *MetricSpec) string {
	switch {
	case spec.Resource != nil:
		return spec.Resource.Name + " resource"
	case spec.ContainerResource != nil:
		return spec.ContainerResource.Name + " container resource"
	case spec.Pods != nil:
		return "pods metric " + spec.Pods.Metric.Name
	case spec.Object != nil:
		return spec.Object.DescribedObject.Kind + " metric " + spec.Object.Metric.Name
	case spec.External != nil:
		return "external metric " + spec.External.Metric.Name
	}
	return spec.Type
}
