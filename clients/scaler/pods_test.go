package scaler

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/timestamppb"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

func TestPodState(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	start, ready, del := t0.Add(-time.Hour), t0.Add(-50*time.Minute), t0
	for _, tc := range []struct {
		name string
		pod  corev1.Pod
		want *pb.PodState
	}{
		{
			name: "no Ready condition, no start time",
			pod:  corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Status: corev1.PodStatus{Phase: corev1.PodPending}},
			want: &pb.PodState{Name: "p", Phase: "Pending"},
		},
		{
			name: "everything",
			pod: corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "p", DeletionTimestamp: ptr(metav1.NewTime(del))},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{
						{Name: "app", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("0.5"), corev1.ResourceMemory: q("1Gi")}}},
						{Name: "norequests"},
					},
					InitContainers: []corev1.Container{
						{Name: "proxy", RestartPolicy: &always, Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("100m")}}},
						{Name: "migrate", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("2")}}},
					},
					Resources: &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("1")}},
				},
				Status: corev1.PodStatus{
					Phase:     corev1.PodRunning,
					StartTime: ptr(metav1.NewTime(start)),
					Conditions: []corev1.PodCondition{
						{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
						{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(ready)},
					},
				},
			},
			want: &pb.PodState{
				Name: "p", Phase: "Running", Ready: ptr(false),
				ReadyTransitionTime: timestamppb.New(ready),
				StartTime:           timestamppb.New(start),
				DeletionTimestamp:   timestamppb.New(del),
				Containers: []*pb.ContainerState{
					{Name: "app", Requests: map[string]string{"cpu": "500m", "memory": "1Gi"}},
					{Name: "norequests"},
				},
				InitContainers: []*pb.InitContainerState{
					{Name: "proxy", RestartPolicy: "Always", Requests: map[string]string{"cpu": "100m"}},
					{Name: "migrate", Requests: map[string]string{"cpu": "2"}},
				},
				Requests: map[string]string{"cpu": "1"},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(podState(&tc.pod), tc.want, protocmp.Transform()); diff != "" {
				t.Errorf("podState (-got +want):\n%s", diff)
			}
		})
	}
}

func TestTrimPodKeepsWhatTheDecisionReads(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"big": "x"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}},
		Spec: corev1.PodSpec{
			Containers:     []corev1.Container{{Name: "app", Image: "img", Env: []corev1.EnvVar{{Name: "A"}}, Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("1")}}}},
			InitContainers: []corev1.Container{{Name: "proxy", RestartPolicy: &always}},
			Resources:      &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("2")}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
	before := podState(p.DeepCopy())
	obj, err := trimPod(p)
	if err != nil {
		t.Fatal(err)
	}
	tp := obj.(*corev1.Pod)
	if diff := cmp.Diff(podState(tp), before, protocmp.Transform()); diff != "" {
		t.Errorf("trimmed pod decides differently (-got +want):\n%s", diff)
	}
	if tp.Labels["app"] != "web" || tp.Annotations != nil || tp.ManagedFields != nil || tp.Spec.Containers[0].Image != "" {
		t.Errorf("trim kept or lost the wrong fields: %+v", tp)
	}
}
