package recommender

import "time"

// Step is one observation of a replayed timeline.
type Step struct {
	Time time.Time
	// CurrentReplicas defaults to the previous step's desired count (step 0: the initial count).
	CurrentReplicas *int32
	// StatusReplicas defaults to this step's current count.
	StatusReplicas *int32
	Pods           []Pod
	Metrics        []Observation
}

// Simulate replays steps against spec: a decision at every step, each change treated as a
// successful scale write. A nil initial state means first sight (seeded with step 0's count at
// its time, as upstream does); a non-nil one is used as given. It returns the decisions (whose
// conditions are those after the write) and the final state.
func Simulate(opts Options, spec *Spec, initialReplicas int32, initial *State, steps []Step) ([]Decision, State) {
	var st State
	if initial != nil {
		st = initial.Clone()
		st.Seeded = true
	}
	out := make([]Decision, 0, len(steps))
	prevDesired := initialReplicas
	for _, s := range steps {
		current := prevDesired
		if s.CurrentReplicas != nil {
			current = *s.CurrentReplicas
		}
		status := current
		if s.StatusReplicas != nil {
			status = *s.StatusReplicas
		}
		d, next := Decide(s.Time, opts, Input{
			Spec:            spec,
			CurrentReplicas: current,
			StatusReplicas:  status,
			Pods:            s.Pods,
			Metrics:         s.Metrics,
		}, st)
		if d.Scale() {
			next = RecordRescaleFor(s.Time, opts, spec, next, &d, true, "")
			d.Conditions = append([]Condition(nil), next.Conditions...)
		}
		st = next
		prevDesired = d.DesiredReplicas
		out = append(out, d)
	}
	return out, st
}
