package recommender

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"
)

// Upstream's condition reasons and messages.
const (
	reasonSucceededGetScale   = "SucceededGetScale"
	reasonReadyForNewScale    = "ReadyForNewScale"
	reasonScaleUpStabilized   = "ScaleUpStabilized"
	reasonScaleDownStabilized = "ScaleDownStabilized"
	reasonSucceededRescale    = "SucceededRescale"
	reasonFailedUpdateScale   = "FailedUpdateScale"
	reasonValidMetricFound    = "ValidMetricFound"
	reasonScalingDisabled     = "ScalingDisabled"
	reasonDesiredWithinRange  = "DesiredWithinRange"
	reasonTooFewReplicas      = "TooFewReplicas"
	reasonTooManyReplicas     = "TooManyReplicas"
	reasonScaleUpLimit        = "ScaleUpLimit"
	reasonScaleDownLimit      = "ScaleDownLimit"
	reasonScaledToZero        = "ScaledToZero"
	reasonNotScaledToZero     = "NotScaledToZero"

	msgWithinRange   = "the desired count is within the acceptable range"
	msgTooFew        = "the desired replica count is less than the minimum replica count"
	msgTooMany       = "the desired replica count is more than the maximum replica count"
	msgUpRate        = "the desired replica count is increasing faster than the maximum scale rate"
	msgDownRate      = "the desired replica count is decreasing faster than the maximum scale rate"
	msgUpStabilized  = "recent recommendations were lower than current one, applying the lowest recent recommendation"
	msgDownStabilzed = "recent recommendations were higher than current one, applying the highest recent recommendation"
)

// Legacy scale-up cap constants (R-LEG-2).
const (
	scaleUpLimitFactor  = 2.0
	scaleUpLimitMinimum = 4.0
)

// setCondition updates or appends a condition; the transition time moves only when the
// status flips (HPA-ALGORITHM §8).
func setCondition(conds []Condition, now time.Time, typ, status, reason, msg string) []Condition {
	for i := range conds {
		if conds[i].Type == typ {
			if conds[i].Status != status {
				conds[i].LastTransitionTime = now
			}
			conds[i].Status, conds[i].Reason, conds[i].Message = status, reason, msg
			return conds
		}
	}
	return append(conds, Condition{Type: typ, Status: status, Reason: reason, Message: msg, LastTransitionTime: now})
}

// ScaledToZero reports whether the conditions say the autoscaler itself scaled the target to zero.
func ScaledToZero(conds []Condition) bool {
	for _, c := range conds {
		if c.Type == ConditionScaledToZero {
			return c.Status == StatusTrue
		}
	}
	return false
}

// Clone returns a deep copy of s, so a decision never aliases its caller's state.
func (s State) Clone() State {
	return State{
		Seeded: s.Seeded,
		History: History{
			Recommendations: append([]Recommendation(nil), s.History.Recommendations...),
			ScaleUpEvents:   append([]ScaleEvent(nil), s.History.ScaleUpEvents...),
			ScaleDownEvents: append([]ScaleEvent(nil), s.History.ScaleDownEvents...),
		},
		Conditions: append([]Condition(nil), s.Conditions...),
	}
}

func hasObjectOrExternal(spec *Spec) bool {
	for i := range spec.Metrics {
		if t := spec.Metrics[i].Type; t == MetricObject || t == MetricExternal {
			return true
		}
	}
	return false
}

func minReplicasOf(spec *Spec) int32 {
	if spec.MinReplicas != nil {
		return *spec.MinReplicas
	}
	return 1
}

// tolerancesFor is R-TOL-2 and R-TOL-3: the per-direction overrides count only with the
// HPAConfigurableTolerance feature gate on.
func tolerancesFor(spec *Spec, opts Options, rules Rules) tolerances {
	t := tolerances{down: opts.Tolerance, up: opts.Tolerance}
	if b := spec.Behavior; b != nil && rules.ConfigurableTolerance {
		if b.ScaleDown != nil && b.ScaleDown.Tolerance != nil {
			t.down = b.ScaleDown.Tolerance.AsApproximateFloat64()
		}
		if b.ScaleUp != nil && b.ScaleUp.Tolerance != nil {
			t.up = b.ScaleUp.Tolerance.AsApproximateFloat64()
		}
	}
	return t
}

// Decide runs one upstream reconcile at now for the target described by in, given the state
// stored after the previous one. It returns the decision and the state to store: the seeded
// history, the recommendation recorded by normalization and the updated conditions. The scale
// write's outcome is applied separately with RecordRescale. in.Spec must be valid
// (ValidateSpec); it is defaulted here, never modified. opts must be valid (RulesFor accepts them): the release and feature gates they
// name decide (Rules).
func Decide(now time.Time, opts Options, in Input, prev State) (Decision, State) {
	rules := rulesOf(opts)
	spec := SetDefaults(in.Spec)
	st := prev.Clone()
	current := in.CurrentReplicas
	d := Decision{Time: now, CurrentReplicas: current}
	st.Conditions = setCondition(st.Conditions, now, ConditionAbleToScale, StatusTrue, reasonSucceededGetScale,
		"the HPA controller was able to get the target's current scale")
	// R-HIST: first sight seeds the history with the current count.
	if !st.Seeded {
		st.Seeded = true
		st.History.Recommendations = []Recommendation{{Time: now, Replicas: current}}
	}
	minReplicas := minReplicasOf(spec)
	ex := &d.Explanation
	var facts decisionFacts
	ex.WinningMetric = -1

	// R-REC-4(a) by the release's rules (Rules.Zero): only ZeroByCondition keeps a ScaledToZero
	// condition; the others never set one (1.36 on removes it with the gate off).
	scaledToZero := false
	if rules.Zero == ZeroByCondition {
		scaledToZero = ScaledToZero(st.Conditions)
	} else {
		st.Conditions = removeCondition(st.Conditions, ConditionScaledToZero)
	}
	resumes := false
	switch rules.Zero {
	case ZeroByMinReplicas:
		resumes = minReplicas == 0
	case ZeroByCondition:
		resumes = scaledToZero && (minReplicas != 0 || hasObjectOrExternal(spec))
	}
	var desired int32
	var reason string
	switch {
	case current == 0 && !resumes:
		// R-REC-4(a): a target at zero that the autoscaler may not resume stays paused.
		st.Conditions = setCondition(st.Conditions, now, ConditionScalingActive, StatusFalse, reasonScalingDisabled,
			"scaling is disabled since the replica count of the target is zero")
		d.DesiredReplicas = 0
		ex.Message = zeroMessage(rules)
		d.Conditions = append([]Condition(nil), st.Conditions...)
		return d, st
	case current == 0:
		// R-REC-4(a): resuming from zero computes metrics.
		desired, reason = decideFromMetrics(now, opts, rules, spec, in, &st, &d, minReplicas, scaledToZero, &facts)
		if desired < 0 {
			return d, st
		}
	case current > spec.MaxReplicas:
		// R-REC-4(b): corrected at once, without metrics, stabilization or policies.
		desired = spec.MaxReplicas
		reason = "Current number of replicas above Spec.MaxReplicas"
		ex.Proposal, ex.Stabilized, ex.Limited, ex.Final = desired, desired, desired, desired
		ex.LimitReason = reasonTooManyReplicas
	case current < minReplicas:
		desired = minReplicas
		reason = "Current number of replicas below Spec.MinReplicas"
		ex.Proposal, ex.Stabilized, ex.Limited, ex.Final = desired, desired, desired, desired
		ex.LimitReason = reasonTooFewReplicas
	default:
		desired, reason = decideFromMetrics(now, opts, rules, spec, in, &st, &d, minReplicas, scaledToZero, &facts)
		if desired < 0 {
			return d, st
		}
	}
	ex.Final = desired
	d.DesiredReplicas = desired
	ex.Message = explainDecision(spec, d, reason, ex, &facts)
	d.Conditions = append([]Condition(nil), st.Conditions...)
	return d, st
}

// decideFromMetrics is the metric path of R-REC-5: the proposal, normalization and the
// scale-from-zero floor. It returns -1 when the metrics block any change (d is then final).
func decideFromMetrics(now time.Time, opts Options, rules Rules, spec *Spec, in Input, st *State, d *Decision, minReplicas int32, scaledToZero bool, facts *decisionFacts) (int32, string) {
	ex := &d.Explanation
	current := in.CurrentReplicas
	proposal, winner, statuses, ok := computeMetrics(now, opts, rules, spec, in, st, ex, facts)
	d.CurrentMetrics = statuses
	if !ok {
		d.DesiredReplicas = current
		ex.Final = current
		ex.Message = explainFailure(current, ex)
		d.Conditions = append([]Condition(nil), st.Conditions...)
		return -1, ""
	}
	desired := max(0, proposal)
	ex.Proposal = desired
	var reason string
	switch {
	case desired > current:
		reason = winner + " above target"
	case desired < current:
		reason = "All metrics below target"
	}
	if spec.Behavior == nil {
		desired = normalizeLegacy(now, opts, spec, st, current, desired, minReplicas, ex, facts)
	} else {
		desired = normalizeBehavior(now, opts, spec, st, current, desired, minReplicas, ex, facts)
	}
	ex.Limited = desired
	if current == 0 && minReplicas != 0 && scaledToZero && desired < minReplicas {
		desired = minReplicas
		reason = "Current number of replicas below Spec.MinReplicas"
		facts.resumeFloor = true
	}
	return desired, reason
}

// computeMetrics is R-MULTI: every metric's proposal, the max of the valid ones, and the
// partial-failure rule. ok is false when the reconcile must stop without scaling.
func computeMetrics(now time.Time, opts Options, rules Rules, spec *Spec, in Input, st *State, ex *Explanation, facts *decisionFacts) (int32, string, []MetricStatus, bool) {
	c := calcContext{
		now:            now,
		opts:           opts,
		rules:          rules,
		tol:            tolerancesFor(spec, opts, rules),
		specReplicas:   in.CurrentReplicas,
		statusReplicas: in.StatusReplicas,
		pods:           in.Pods,
	}
	statuses := make([]MetricStatus, len(spec.Metrics))
	ex.Metrics = make([]MetricExplanation, len(spec.Metrics))
	var replicas int32
	var winner string
	invalid := 0
	var firstErr *metricResult
	var empty Observation
	for i := range spec.Metrics {
		obs := &empty
		if i < len(in.Metrics) {
			obs = &in.Metrics[i]
		}
		res := c.computeMetric(i, &spec.Metrics[i], obs)
		ex.Metrics[i] = res.explain
		if res.err != nil {
			if invalid == 0 {
				r := res
				firstErr = &r
			}
			invalid++
			continue
		}
		statuses[i] = res.status
		if replicas == 0 || res.proposal > replicas {
			replicas = res.proposal
			winner = res.name
			ex.WinningMetric = int32(i)
			facts.metric = res.facts
		}
	}
	if invalid >= len(spec.Metrics) || (invalid > 0 && replicas < in.CurrentReplicas) {
		st.Conditions = setCondition(st.Conditions, now, ConditionScalingActive, StatusFalse, firstErr.reason,
			"the HPA was unable to compute the replica count: "+firstErr.err.Error())
		ex.WinningMetric = -1
		return 0, "", statuses, false
	}
	st.Conditions = setCondition(st.Conditions, now, ConditionScalingActive, StatusTrue, reasonValidMetricFound,
		"the HPA was able to successfully calculate a replica count from "+winner)
	return replicas, winner, statuses, true
}

// recordRecommendation stores {desired, now}, reusing the last slot for which expired
// reports true, else appending (R-LEG-1, R-BEH-1).
func recordRecommendation(h *History, now time.Time, desired int32, expired func(time.Time) bool) {
	idx := -1
	for i, r := range h.Recommendations {
		if expired(r.Time) {
			idx = i
		}
	}
	rec := Recommendation{Time: now, Replicas: desired}
	if idx >= 0 {
		h.Recommendations[idx] = rec
		return
	}
	h.Recommendations = append(h.Recommendations, rec)
}

// normalizeLegacy is R-LEG: inclusive down-stabilization, then the max(2x, 4) cap and the
// min/max range.
func normalizeLegacy(now time.Time, opts Options, spec *Spec, st *State, current, desired, minReplicas int32, ex *Explanation, facts *decisionFacts) int32 {
	cutoff := now.Add(-opts.DownscaleStabilizationWindow)
	stab := desired
	for _, r := range st.History.Recommendations {
		if !r.Time.Before(cutoff) && r.Replicas > stab {
			stab = r.Replicas
		}
	}
	facts.held = heldBy(st.History.Recommendations, stab, func(t time.Time) bool { return !t.Before(cutoff) })
	recordRecommendation(&st.History, now, desired, func(t time.Time) bool { return t.Before(cutoff) })
	ex.Stabilized = stab
	if stab != desired {
		ex.StabilizationWindow = opts.DownscaleStabilizationWindow
		st.Conditions = setCondition(st.Conditions, now, ConditionAbleToScale, StatusTrue, reasonScaleDownStabilized, msgDownStabilzed)
	} else {
		st.Conditions = setCondition(st.Conditions, now, ConditionAbleToScale, StatusTrue, reasonReadyForNewScale, "recommended size matches current size")
	}

	// Upstream converts with a plain int32(...), which wraps past MaxInt32 (R-INT: saturated here).
	scaleUpLimit := truncToInt32(math.Max(scaleUpLimitFactor*float64(current), scaleUpLimitMinimum))
	maxAllowed, limReason, limMsg := spec.MaxReplicas, reasonTooManyReplicas, msgTooMany
	if spec.MaxReplicas > scaleUpLimit {
		maxAllowed, limReason, limMsg = scaleUpLimit, reasonScaleUpLimit, msgUpRate
	}
	result, reason, msg := stab, reasonDesiredWithinRange, msgWithinRange
	switch {
	case stab < minReplicas:
		result, reason, msg = minReplicas, reasonTooFewReplicas, msgTooFew
	case stab > maxAllowed:
		result, reason, msg = maxAllowed, limReason, limMsg
		if limReason == reasonScaleUpLimit {
			ex.LimitingPolicy = fmt.Sprintf("legacy scale-up limit max(2 x %d, 4) = %d", current, scaleUpLimit)
		}
	}
	return setLimited(st, now, result, stab, reason, msg, ex)
}

func setLimited(st *State, now time.Time, result, stab int32, reason, msg string, ex *Explanation) int32 {
	status := StatusFalse
	if result != stab {
		status = StatusTrue
		ex.LimitReason = reason
	}
	st.Conditions = setCondition(st.Conditions, now, ConditionScalingLimited, status, reason, msg)
	return result
}

func windowSeconds(s int32) time.Duration { return time.Duration(s) * time.Second }

// normalizeBehavior is R-BEH: stabilization over the shared history, then the rate policies.
func normalizeBehavior(now time.Time, opts Options, spec *Spec, st *State, current, desired, minReplicas int32, ex *Explanation, facts *decisionFacts) int32 {
	up, down := spec.Behavior.ScaleUp, spec.Behavior.ScaleDown
	wu := windowSeconds(*up.StabilizationWindowSeconds)
	wd := windowSeconds(int32(opts.DownscaleStabilizationWindow.Seconds()))
	if down.StabilizationWindowSeconds != nil {
		wd = windowSeconds(*down.StabilizationWindowSeconds)
	}
	upCutoff, downCutoff := now.Add(-wu), now.Add(-wd)
	upRec, downRec := desired, desired
	for _, r := range st.History.Recommendations {
		if r.Time.After(upCutoff) {
			upRec = min(upRec, r.Replicas)
		}
		if r.Time.After(downCutoff) {
			downRec = max(downRec, r.Replicas)
		}
	}
	stab := current
	if stab < upRec {
		stab = upRec
	}
	if stab > downRec {
		stab = downRec
	}
	// When stab differs from desired, the window that held it back is the one of desired's
	// direction: the down window kept a scale-down above desired (possibly at current), the up
	// window kept a scale-up below it.
	window := wu
	facts.held = heldBy(st.History.Recommendations, upRec, func(t time.Time) bool { return t.After(upCutoff) })
	if desired < current {
		window = wd
		facts.held = heldBy(st.History.Recommendations, downRec, func(t time.Time) bool { return t.After(downCutoff) })
	}
	recordRecommendation(&st.History, now, desired, func(t time.Time) bool { return t.Before(upCutoff) && t.Before(downCutoff) })
	ex.Stabilized = stab
	if stab != desired {
		ex.StabilizationWindow = window
		if desired >= current {
			st.Conditions = setCondition(st.Conditions, now, ConditionAbleToScale, StatusTrue, reasonScaleUpStabilized, msgUpStabilized)
		} else {
			st.Conditions = setCondition(st.Conditions, now, ConditionAbleToScale, StatusTrue, reasonScaleDownStabilized, msgDownStabilzed)
		}
	} else {
		st.Conditions = setCondition(st.Conditions, now, ConditionAbleToScale, StatusTrue, reasonReadyForNewScale, "recommended size matches current size")
	}

	result, reason, msg := stab, reasonDesiredWithinRange, msgWithinRange
	h := &st.History
	switch {
	case stab > current:
		limit, policy, pol := rateLimit(now, current, h, up, true)
		if limit < current {
			limit = current
		}
		maxAllowed, limReason, limMsg := spec.MaxReplicas, reasonTooManyReplicas, msgTooMany
		if spec.MaxReplicas > limit {
			maxAllowed, limReason, limMsg = limit, reasonScaleUpLimit, msgUpRate
		}
		if stab > maxAllowed {
			result, reason, msg = maxAllowed, limReason, limMsg
			if limReason == reasonScaleUpLimit {
				ex.LimitingPolicy = "scaleUp " + policy
				facts.policy = pol
			}
		}
	case stab < current:
		limit, policy, pol := rateLimit(now, current, h, down, false)
		if limit > current {
			limit = current
		}
		minAllowed, limReason, limMsg := minReplicas, reasonTooFewReplicas, msgTooFew
		if minReplicas < limit {
			minAllowed, limReason, limMsg = limit, reasonScaleDownLimit, msgDownRate
		}
		if stab < minAllowed {
			result, reason, msg = minAllowed, limReason, limMsg
			if limReason == reasonScaleDownLimit {
				ex.LimitingPolicy = "scaleDown " + policy
				facts.policy = pol
			}
		}
	}
	return setLimited(st, now, result, stab, reason, msg, ex)
}

// changeInPeriod sums the events strictly newer than now - period. The sum is an int64:
// upstream's int32 sum can wrap (R-INT: never here).
func changeInPeriod(now time.Time, periodSeconds int32, events []ScaleEvent) int64 {
	cutoff := now.Add(-windowSeconds(periodSeconds))
	var n int64
	for _, e := range events {
		if e.Time.After(cutoff) {
			n += int64(e.Change)
		}
	}
	return n
}

// clampToInt32 saturates n at the int32 range (R-INT).
func clampToInt32(n int64) int32 {
	return int32(max(math.MinInt32, min(n, math.MaxInt32)))
}

func policyName(p ScalingPolicy) string {
	return fmt.Sprintf("%s %d/%ds", p.Type, p.Value, p.PeriodSeconds)
}

// rateLimit is R-POL: the replica limit the direction's policies allow from current, and
// the policy that set it. For scale-up the "Max" select policy takes the largest proposal;
// for scale-down it takes the smallest (both: the most permissive policy wins).
func rateLimit(now time.Time, current int32, h *History, rules *ScalingRules, up bool) (int32, string, *ScalingPolicy) {
	sel := SelectMax
	if rules.SelectPolicy != nil {
		sel = *rules.SelectPolicy
	}
	if sel == SelectDisabled {
		return current, "selectPolicy Disabled", nil
	}
	takeMax := (sel != SelectMin) == up
	proposal := func(p ScalingPolicy) int32 {
		// In int64 and saturated: upstream's int32 arithmetic here wraps (R-INT).
		start := int64(current) - changeInPeriod(now, p.PeriodSeconds, h.ScaleUpEvents) + changeInPeriod(now, p.PeriodSeconds, h.ScaleDownEvents)
		switch {
		case up && p.Type == PolicyPods:
			return clampToInt32(start + int64(p.Value))
		case up && p.Type == PolicyPercent:
			return ceilToInt32(float64(start) * (1 + float64(p.Value)/100))
		case p.Type == PolicyPods:
			return clampToInt32(start - int64(p.Value))
		case p.Type == PolicyPercent:
			return truncToInt32(float64(start) * (1 - float64(p.Value)/100))
		}
		return 0
	}
	result := int32(math.MaxInt32)
	if takeMax {
		result = math.MinInt32
	}
	for _, p := range rules.Policies {
		if takeMax {
			result = max(result, proposal(p))
		} else {
			result = min(result, proposal(p))
		}
	}
	for _, p := range rules.Policies {
		if proposal(p) == result {
			return result, policyName(p), &p
		}
	}
	return result, "", nil
}

// RecordRescale is RecordRescaleFor under the newest release's rules, which record the
// ScaledToZero condition. A decision under an older release's rules (or with HPAScaleToZero off)
// then finds a condition that release would not have kept, and Decide drops it (Rules.Zero), so
// the decisions are those of that release; callers that know the options use RecordRescaleFor.
func RecordRescale(now time.Time, spec *Spec, st State, d *Decision, succeeded bool, errMsg string) State {
	return RecordRescaleFor(now, Options{}, spec, st, d, succeeded, errMsg)
}

// RecordRescaleFor applies the outcome of the scale write that decision d asked for: on success
// the scale event (behavior HPAs only), AbleToScale SucceededRescale and, by opts' rules
// (Rules.Zero), the ScaledToZero condition; on failure AbleToScale False FailedUpdateScale.
// spec and opts are those d was decided with.
func RecordRescaleFor(now time.Time, opts Options, spec *Spec, st State, d *Decision, succeeded bool, errMsg string) State {
	st = st.Clone()
	if !succeeded {
		st.Conditions = setCondition(st.Conditions, now, ConditionAbleToScale, StatusFalse, reasonFailedUpdateScale,
			"the HPA controller was unable to update the target scale: "+errMsg)
		return st
	}
	spec = SetDefaults(spec)
	st.Conditions = setCondition(st.Conditions, now, ConditionAbleToScale, StatusTrue, reasonSucceededRescale,
		fmt.Sprintf("the HPA controller was able to update the target scale to %d", d.DesiredReplicas))
	if spec.Behavior != nil {
		storeScaleEvent(now, spec.Behavior, &st.History, d.CurrentReplicas, d.DesiredReplicas)
	}
	switch rulesOf(opts).Zero {
	case ZeroByCondition:
		if d.CurrentReplicas > 0 && d.DesiredReplicas == 0 && minReplicasOf(spec) == 0 && hasObjectOrExternal(spec) {
			st.Conditions = setCondition(st.Conditions, now, ConditionScaledToZero, StatusTrue, reasonScaledToZero,
				"the HPA controller scaled the target to zero replicas")
		} else {
			st.Conditions = setCondition(st.Conditions, now, ConditionScaledToZero, StatusFalse, reasonNotScaledToZero,
				"the target was not scaled to zero by the HPA controller")
		}
	case ZeroDisabled:
		st.Conditions = removeCondition(st.Conditions, ConditionScaledToZero)
	}
	return st
}

// removeCondition drops the condition of type typ, if any, keeping the others' order.
func removeCondition(conds []Condition, typ string) []Condition {
	i := slices.IndexFunc(conds, func(c Condition) bool { return c.Type == typ })
	if i < 0 {
		return conds
	}
	return slices.Delete(conds, i, i+1)
}

// zeroMessage explains a decision at zero replicas with scaling disabled, by the rule that
// disabled it.
func zeroMessage(rules Rules) string {
	switch rules.Zero {
	case ZeroByMinReplicas:
		return "no change at 0: scaling is disabled because the target has zero replicas and minReplicas is not 0 (Kubernetes " + rules.Version + ")"
	case ZeroDisabled:
		return "no change at 0: scaling is disabled because the target has zero replicas and the HPAScaleToZero feature gate is off (Kubernetes " + rules.Version + ")"
	}
	return "no change at 0: scaling is disabled because the target has zero replicas and this autoscaler did not scale it to zero"
}

// storeScaleEvent is R-HIST's event storage with outdated-slot reuse.
func storeScaleEvent(now time.Time, b *Behavior, h *History, prev, next int32) {
	rules, events, change := b.ScaleDown, &h.ScaleDownEvents, prev-next
	if next > prev {
		rules, events, change = b.ScaleUp, &h.ScaleUpEvents, next-prev
	}
	var longest int32
	if rules != nil {
		for _, p := range rules.Policies {
			longest = max(longest, p.PeriodSeconds)
		}
	}
	cutoff := now.Add(-windowSeconds(longest))
	idx := -1
	for i, e := range *events {
		if e.Time.Before(cutoff) {
			idx = i
		}
	}
	ev := ScaleEvent{Time: now, Change: change}
	if idx >= 0 {
		(*events)[idx] = ev
		return
	}
	*events = append(*events, ev)
}

// Longest windows and periods any valid spec can use (HPA-ALGORITHM §10).
const (
	MaxStabilizationWindow = 3600 * time.Second
	MaxPolicyPeriod        = 1800 * time.Second
)

// Prune drops history no valid spec can still read: recommendations older than the longest
// stabilization window (or opts' downscale window, when longer), recommendations that can
// never decide a stabilization (see dropDominated), and events older than the longest policy
// period. Decisions for an unchanged spec are the same with or without it.
func Prune(h History, now time.Time, opts Options) History {
	recCutoff := now.Add(-max(MaxStabilizationWindow, opts.DownscaleStabilizationWindow))
	var out History
	for _, r := range h.Recommendations {
		if !r.Time.Before(recCutoff) {
			out.Recommendations = append(out.Recommendations, r)
		}
	}
	out.Recommendations = dropDominated(out.Recommendations)
	evCutoff := now.Add(-MaxPolicyPeriod)
	keep := func(events []ScaleEvent) []ScaleEvent {
		var kept []ScaleEvent
		for _, e := range events {
			if !e.Time.Before(evCutoff) {
				kept = append(kept, e)
			}
		}
		return kept
	}
	out.ScaleUpEvents = keep(h.ScaleUpEvents)
	out.ScaleDownEvents = keep(h.ScaleDownEvents)
	return out
}

// dropDominated removes, in place, every recommendation that is neither above nor below all
// later ones, keeping the order of the rest.
//
// Stabilization only ever reads the maximum or the minimum of the recommendations newer than
// a cutoff (R-LEG-1, R-BEH-1), and every such window that holds a recommendation also holds
// all later ones. So a recommendation matters only while it is strictly above every later one
// (it can be a window's maximum) or strictly below every later one (a minimum); one that a
// later recommendation equals or brackets changes no window's answer, whatever the window
// lengths and whatever "now" is. Without this, a target called more often than upstream's
// 15 s resync keeps one entry per call for an hour. What remains is at most two entries per
// distinct replica count, and usually a handful.
func dropDominated(recs []Recommendation) []Recommendation {
	if len(recs) < 2 {
		return recs
	}
	// Newest first; among equal times, later in the list first (ties are interchangeable:
	// every window holds both or neither). The index breaks every tie, so the order is total.
	order := make([]int, len(recs))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		if c := recs[b].Time.Compare(recs[a].Time); c != 0 {
			return c
		}
		return cmp.Compare(b, a)
	})
	keep := make([]bool, len(recs))
	hi, lo := recs[order[0]].Replicas, recs[order[0]].Replicas
	keep[order[0]] = true
	for _, i := range order[1:] {
		if r := recs[i].Replicas; r > hi || r < lo {
			keep[i] = true
			hi, lo = max(hi, r), min(lo, r)
		}
	}
	out := recs[:0]
	for i, r := range recs {
		if keep[i] {
			out = append(out, r)
		}
	}
	return out
}
