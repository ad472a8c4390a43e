package apiconv

import (
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"k8s.io/apimachinery/pkg/api/resource"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
	"github.com/hpa-recommender/hpa-recommender/recommender"
)

// The inverse conversions, engine types to the API and back where production converts one way
// only: the tests use them for round trips (a request converted, written back and compared).

// SimulationToProto is the inverse of SimulationFromProto; options are always written in full.
func SimulationToProto(sim *Simulation) *pb.SimulateRequest {
	if sim == nil {
		return nil
	}
	req := &pb.SimulateRequest{
		Spec:            SpecToProto(sim.Spec),
		Options:         OptionsToProto(sim.Options),
		InitialReplicas: sim.InitialReplicas,
	}
	if sim.State != nil {
		req.History = HistoryToProto(sim.State)
	}
	if len(sim.Steps) > 0 {
		req.Steps = make([]*pb.SimulateStep, len(sim.Steps))
		for i := range sim.Steps {
			s := &sim.Steps[i]
			req.Steps[i] = &pb.SimulateStep{
				Time:            timeToProto(s.Time),
				CurrentReplicas: copyPtr(s.CurrentReplicas),
				StatusReplicas:  copyPtr(s.StatusReplicas),
				Pods:            PodsToProto(s.Pods),
				Metrics:         ObservationsToProto(s.Metrics),
			}
		}
	}
	return req
}

// PodsFromProto converts pods; field is the list's path ("pods", "steps[2].pods").
func PodsFromProto(field string, pods []*pb.PodState) ([]recommender.Pod, []FieldViolation) {
	c := newConverter("")
	out := c.pods(field, pods)
	return out, c.violations
}

// ObservationsFromProto converts metric observations; field is the list's path ("metrics",
// "steps[2].metrics"). Quantities become milli-units; an absent window is
// recommender.DefaultMetricWindow.
func ObservationsFromProto(field string, obs []*pb.MetricObservation) ([]recommender.Observation, []FieldViolation) {
	c := newConverter("")
	out := c.observations(field, obs)
	return out, c.violations
}

// OptionsFromProto converts options; every absent field takes its value from defaults, and an
// explicit zero is kept. field is the message's path ("options").
func OptionsFromProto(field string, o *pb.Options, defaults recommender.Options) (recommender.Options, []FieldViolation) {
	c := newConverter(field)
	out := c.options(o, defaults)
	return out, c.violations
}

// OptionsToProto writes every option explicitly.
func OptionsToProto(o recommender.Options) *pb.Options {
	t := o.Tolerance
	out := &pb.Options{
		Tolerance:                    &t,
		CpuInitializationPeriod:      durationpb.New(o.CPUInitializationPeriod),
		InitialReadinessDelay:        durationpb.New(o.InitialReadinessDelay),
		DownscaleStabilizationWindow: durationpb.New(o.DownscaleStabilizationWindow),
	}
	if o.KubernetesVersion != "" {
		v := o.KubernetesVersion
		out.KubernetesVersion = &v
	}
	if g := o.HPAConfigurableTolerance; g != nil {
		v := *g
		out.HpaConfigurableTolerance = &v
	}
	if g := o.HPAScaleToZero; g != nil {
		v := *g
		out.HpaScaleToZero = &v
	}
	return out
}

// ConditionsFromProto converts conditions (a stored decision's, or a client's copy of one);
// field is the list's path ("conditions").
func ConditionsFromProto(field string, cs []*pb.Condition) ([]recommender.Condition, []FieldViolation) {
	if len(cs) == 0 {
		return nil, nil
	}
	c := newConverter("")
	out := make([]recommender.Condition, len(cs))
	for i, pc := range cs {
		c.pushIndex(field, i)
		out[i] = recommender.Condition{
			Type:               pc.GetType(),
			Status:             pc.GetStatus(),
			Reason:             pc.GetReason(),
			Message:            pc.GetMessage(),
			LastTransitionTime: c.time("lastTransitionTime", pc.GetLastTransitionTime()),
		}
		c.pop()
	}
	return out, c.violations
}

// PodsToProto writes pods; absent times and empty requests are absent, and a deleting pod has
// its deletionTimestamp even when that is the zero time.
func PodsToProto(pods []recommender.Pod) []*pb.PodState {
	if len(pods) == 0 {
		return nil
	}
	out := make([]*pb.PodState, len(pods))
	for i := range pods {
		p := &pods[i]
		ps := &pb.PodState{
			Name:                p.Name,
			Phase:               p.Phase,
			ReadyTransitionTime: timeToProto(p.ReadyTransitionTime),
			StartTime:           timeToProto(p.StartTime),
			Requests:            requestsToProto(p.Requests),
			Overhead:            requestsToProto(p.Overhead),
		}
		if p.HasReady {
			ready := p.Ready
			ps.Ready = &ready
		}
		if p.Deleting {
			ps.DeletionTimestamp = timestamppb.New(p.DeletionTime)
		}
		if len(p.Containers) > 0 {
			ps.Containers = make([]*pb.ContainerState, len(p.Containers))
			for j, c := range p.Containers {
				ps.Containers[j] = &pb.ContainerState{Name: c.Name, Requests: requestsToProto(c.Requests)}
			}
		}
		if len(p.InitContainers) > 0 {
			ps.InitContainers = make([]*pb.InitContainerState, len(p.InitContainers))
			for j, c := range p.InitContainers {
				ps.InitContainers[j] = &pb.InitContainerState{
					Name:          c.Name,
					RestartPolicy: c.RestartPolicy,
					Requests:      requestsToProto(c.Requests),
				}
			}
		}
		out[i] = ps
	}
	return out
}

func requestsToProto(m map[string]resource.Quantity) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, q := range m {
		out[k] = canonical(q)
	}
	return out
}

// ObservationsToProto writes observations; milli-units become canonical quantities.
func ObservationsToProto(obs []recommender.Observation) []*pb.MetricObservation {
	if len(obs) == 0 {
		return nil
	}
	out := make([]*pb.MetricObservation, len(obs))
	for i := range obs {
		o := &obs[i]
		po := &pb.MetricObservation{Error: o.Error}
		if len(o.PodSamples) > 0 {
			po.PodValues = make([]*pb.PodMetricValue, len(o.PodSamples))
			for j, s := range o.PodSamples {
				po.PodValues[j] = &pb.PodMetricValue{
					Pod:       s.Pod,
					Value:     milliToProto(s.Milli),
					Timestamp: timeToProto(s.Timestamp),
					Window:    durationpb.New(s.Window),
				}
			}
		}
		if o.Value != nil {
			v := milliToProto(*o.Value)
			po.Value = &v
		}
		if len(o.Values) > 0 {
			po.Values = make([]string, len(o.Values))
			for j, v := range o.Values {
				po.Values[j] = milliToProto(v)
			}
		}
		out[i] = po
	}
	return out
}

func milliToProto(m int64) string {
	return resource.NewMilliQuantity(m, resource.DecimalSI).String()
}
