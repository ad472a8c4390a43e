package controlplane

import (
	"context"
	"fmt"
	"net/netip"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// PodState is the status SetPodStatus writes, as a kubelet would report it.
type PodState struct {
	// Ready sets the Ready and ContainersReady conditions (and the containers' ready flags).
	Ready bool
	// StartTime is status.startTime and the containers' start time. Zero: now.
	StartTime time.Time
	// ReadySince is the Ready condition's lastTransitionTime (the HPA's CPU
	// initialization logic reads it). Zero: StartTime.
	ReadySince time.Time
	// IP is status.podIP. Empty: a fresh address from 10.244.0.0/16.
	IP string
}

var podIPs atomic.Uint32

// SetPodStatus writes pod's status through the status subresource: phase Running,
// PodScheduled/Initialized/ContainersReady/Ready conditions, startTime, podIP(s) and a
// running status per container. No kubelet or node is needed: an unbound pod takes the
// status too (the package's smoke test checks this).
func SetPodStatus(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod, s PodState) (*corev1.Pod, error) {
	now := time.Now()
	if s.StartTime.IsZero() {
		s.StartTime = now
	}
	if s.ReadySince.IsZero() {
		s.ReadySince = s.StartTime
	}
	if s.IP == "" {
		n := podIPs.Add(1)
		s.IP = netip.AddrFrom4([4]byte{10, 244, byte(n >> 8), byte(n)}).String()
	}
	start := metav1.NewTime(s.StartTime)
	since := metav1.NewTime(s.ReadySince)
	ready := corev1.ConditionFalse
	if s.Ready {
		ready = corev1.ConditionTrue
	}
	p := pod.DeepCopy()
	p.Status.Phase = corev1.PodRunning
	p.Status.StartTime = &start
	p.Status.PodIP = s.IP
	p.Status.PodIPs = []corev1.PodIP{{IP: s.IP}}
	p.Status.HostIP = "127.0.0.1"
	p.Status.HostIPs = []corev1.HostIP{{IP: "127.0.0.1"}}
	p.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: start},
		{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: start},
		{Type: corev1.ContainersReady, Status: ready, LastTransitionTime: since},
		{Type: corev1.PodReady, Status: ready, LastTransitionTime: since},
	}
	p.Status.ContainerStatuses = nil
	for _, c := range p.Spec.Containers {
		started := true
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
			Name:    c.Name,
			Image:   c.Image,
			ImageID: "kubetest://" + c.Image,
			Ready:   s.Ready,
			Started: &started,
			State:   corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: start}},
		})
	}
	return cs.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
}

// DeploymentPods lists the live (not terminating) pods matching the deployment's selector.
func DeploymentPods(ctx context.Context, cs kubernetes.Interface, namespace, name string) ([]corev1.Pod, error) {
	d, err := cs.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return nil, err
	}
	list, err := cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return nil, err
	}
	var pods []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			pods = append(pods, p)
		}
	}
	return pods, nil
}

// MakeDeploymentReady waits (polling until ctx ends) for the deployment to have
// spec.replicas live pods, then marks every pod that is not yet Running and Ready as
// Running and Ready now (see SetPodStatus). It returns the pods as updated.
func MakeDeploymentReady(ctx context.Context, cs kubernetes.Interface, namespace, name string) ([]corev1.Pod, error) {
	for {
		d, err := cs.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		pods, err := DeploymentPods(ctx, cs, namespace, name)
		if err != nil {
			return nil, err
		}
		if want := replicas(d); len(pods) == int(want) {
			for i := range pods {
				if isRunningReady(&pods[i]) {
					continue
				}
				p, err := SetPodStatus(ctx, cs, &pods[i], PodState{Ready: true})
				if err != nil {
					return nil, fmt.Errorf("pod %s: %w", pods[i].Name, err)
				}
				pods[i] = *p
			}
			return pods, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("deployment %s/%s: %d pods, want %d: %w", namespace, name, len(pods), replicas(d), ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func replicas(d *appsv1.Deployment) int32 {
	if d.Spec.Replicas == nil {
		return 1
	}
	return *d.Spec.Replicas
}

func isRunningReady(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// EnsureNode creates (or refreshes) a fake Ready node named name with a node lease, for
// tests that bind pods (BindPod). Without a kubelet nothing renews the node's heartbeat:
// kube-controller-manager's node lifecycle controller marks it NotReady after its grace
// period (40 s) and then the pods on it unready, and pod GC deletes pods bound to nodes
// that do not exist. Call EnsureNode again to renew, or prefer unbound pods (SetPodStatus
// works without binding).
func EnsureNode(ctx context.Context, cs kubernetes.Interface, name string) (*corev1.Node, error) {
	now := metav1.Now()
	var node *corev1.Node
	// The node lifecycle controller updates a new node too (taints): retry on conflict.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var err error
		node, err = cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			node, err = cs.CoreV1().Nodes().Create(ctx, &corev1.Node{
				ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name, "type": "kubetest"}},
			}, metav1.CreateOptions{})
		}
		if err != nil {
			return err
		}
		node.Status.Capacity = corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("256Gi"), corev1.ResourcePods: resource.MustParse("1000"),
		}
		node.Status.Allocatable = node.Status.Capacity
		node.Status.Phase = corev1.NodeRunning
		node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}}
		node.Status.Conditions = []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			LastHeartbeatTime: now, LastTransitionTime: now,
		}}
		node, err = cs.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return nil, err
	}
	renew := metav1.NewMicroTime(now.Time)
	holder, dur := name, int32(40)
	lease, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: corev1.NamespaceNodeLease},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &dur, RenewTime: &renew},
		}, metav1.CreateOptions{})
	case err == nil:
		lease.Spec.RenewTime = &renew
		_, err = cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Update(ctx, lease, metav1.UpdateOptions{})
	}
	return node, err
}

// BindPod binds an unscheduled pod to node (the pods/binding subresource, as the scheduler
// does). See EnsureNode for what happens to bound pods without a kubelet.
func BindPod(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod, node string) error {
	return cs.CoreV1().Pods(pod.Namespace).Bind(ctx, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}, metav1.CreateOptions{})
}
