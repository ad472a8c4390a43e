package recommender

import (
	"fmt"
	"testing"
)

// benchInput is a three-metric reconcile (cpu utilization, a Pods metric, an External Value
// metric) over n ready pods, with a behavior and a few minutes of history.
func benchInput(n int) (Input, State) {
	spec := withBehavior(testSpec(1, int32(n)*4, cpuUtil(60), podsAvg("requests_per_second", "100"), externalValue("queue_depth", "50")),
		rules(60, SelectMax, podsPolicy(10, 60), percentPolicy(50, 60)),
		rules(300, SelectMin, percentPolicy(10, 60)))
	ps := uniformPods(n, 500)
	cpu := Observation{PodSamples: make([]PodSample, n)}
	rps := Observation{PodSamples: make([]PodSample, n)}
	for i := range n {
		cpu.PodSamples[i] = PodSample{Pod: ps[i].Name, Milli: int64(300 + i%400), Timestamp: tNow}
		rps.PodSamples[i] = PodSample{Pod: ps[i].Name, Milli: int64(80_000 + 100*(i%300)), Timestamp: tNow}
	}
	st := State{Seeded: true}
	for i := range 20 {
		st.History.Recommendations = append(st.History.Recommendations, rec(int32(n+i%5), ago(sec(15*i))))
	}
	st.History.ScaleUpEvents = []ScaleEvent{ev(2, ago(sec(30))), ev(1, ago(sec(200)))}
	st.History.ScaleDownEvents = []ScaleEvent{ev(1, ago(sec(90)))}
	return Input{
		Spec:            spec,
		CurrentReplicas: int32(n),
		StatusReplicas:  int32(n),
		Pods:            ps,
		Metrics:         []Observation{cpu, rps, series(int64(n) * 40_000)},
	}, st
}

func BenchmarkDecide(b *testing.B) {
	for _, n := range []int{10, 100, 5000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			in, st := benchInput(n)
			opts := DefaultOptions()
			b.ReportAllocs()
			for b.Loop() {
				Decide(tNow, opts, in, st)
			}
		})
	}
}
