package scaler

import (
	"maps"
	"slices"

	"google.golang.org/protobuf/types/known/timestamppb"
	corev1 "k8s.io/api/core/v1"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

// podState is what the decision needs of one pod: phase, the Ready condition (status and
// lastTransitionTime; absent when the pod has none), startTime, deletionTimestamp, the requests
// of the containers and of the restartable (sidecar) and other init containers, and pod-level
// requests (pod.spec.resources.requests).
func podState(p *corev1.Pod) *pb.PodState {
	out := &pb.PodState{
		Name:  p.Name,
		Phase: string(p.Status.Phase),
	}
	for i := range p.Status.Conditions {
		c := &p.Status.Conditions[i]
		if c.Type != corev1.PodReady {
			continue
		}
		ready := c.Status == corev1.ConditionTrue
		out.Ready = &ready
		if !c.LastTransitionTime.IsZero() {
			out.ReadyTransitionTime = timestamppb.New(c.LastTransitionTime.Time)
		}
		break
	}
	if st := p.Status.StartTime; st != nil && !st.IsZero() {
		out.StartTime = timestamppb.New(st.Time)
	}
	if dt := p.DeletionTimestamp; dt != nil {
		out.DeletionTimestamp = timestamppb.New(dt.Time)
	}
	for i := range p.Spec.Containers {
		c := &p.Spec.Containers[i]
		out.Containers = append(out.Containers, &pb.ContainerState{Name: c.Name, Requests: requests(c.Resources.Requests)})
	}
	for i := range p.Spec.InitContainers {
		c := &p.Spec.InitContainers[i]
		ic := &pb.InitContainerState{Name: c.Name, Requests: requests(c.Resources.Requests)}
		if c.RestartPolicy != nil {
			ic.RestartPolicy = string(*c.RestartPolicy)
		}
		out.InitContainers = append(out.InitContainers, ic)
	}
	if r := p.Spec.Resources; r != nil {
		out.Requests = requests(r.Requests)
	}
	out.Overhead = requests(p.Spec.Overhead)
	return out
}

// requests writes a resource list as resource name -> canonical quantity; nil when empty.
func requests(rl corev1.ResourceList) map[string]string {
	if len(rl) == 0 {
		return nil
	}
	out := make(map[string]string, len(rl))
	for _, name := range slices.Sorted(maps.Keys(rl)) {
		q := rl[name].DeepCopy() // the informer's objects are shared: format a copy
		out[string(name)] = q.String()
	}
	return out
}
