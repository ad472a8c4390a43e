package scaler

import (
	"fmt"
	"strconv"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	"github.com/hpa-recommender/hpa-recommender/store/memstore"
)

// fleet is a scaler keeping n HorizontalPodAutoscaler objects of the hpa source, 10 per
// namespace as hpa-bench fleet lays them out, each on a Deployment of 2 pods at 100% of their
// CPU request, loaded through the hpa source's informer handlers (objectSet) and the in-tree
// check's index, every selector known as after a first sync of each.
type fleet struct {
	*world
	cs   *fake.Clientset
	set  *objectSet
	hpas []*autoscalingv2.HorizontalPodAutoscaler
}

func newFleet(b *testing.B, n int) *fleet {
	b.Helper()
	w := &world{clk: newClock(), c: newCluster()}
	w.c.kube.Events = &record.FakeRecorder{} // no channel: events are dropped
	w.svc = startService(b, memstore.New(), w.clk, "127.0.0.1:0")
	w.s = newScaler(b, w.c.kube, w.svc.client, w.clk, func(c *Config) { c.Source = SourceHPA })
	f := &fleet{world: w}
	objs := make([]runtime.Object, n)
	for i := range n {
		ns, name := fmt.Sprintf("fleet-%d", i/10), fmt.Sprintf("w%d", i)
		w.c.addDeployment(ns, name, 2, "app="+name)
		w.c.addPods(ns, name, 2, "500m")
		h := &autoscalingv2.HorizontalPodAutoscaler{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-hpa-" + name), Generation: 1, ResourceVersion: "1"},
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
				ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name},
				MinReplicas:    ptr(int32(1)),
				MaxReplicas:    10,
				Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
					Name: "cpu", Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr(int32(50))},
				}}},
			},
		}
		f.hpas = append(f.hpas, h)
		objs[i] = h
	}
	f.cs = fake.NewClientset(objs...)
	w.c.kube.Client = f.cs

	f.set = newObjectSet(w.s, SourceHPA)
	x := newHPAIndex()
	for _, h := range f.hpas {
		f.set.upsert(h)
		x.upsert(h)
	}
	f.set.publishAll()
	x.synced.Store(true)
	w.s.mu.Lock()
	w.s.hpas = x
	w.s.mu.Unlock()
	for _, h := range f.hpas {
		w.s.recordSelector(w.s.mustAutoscaler(b, h.Namespace+"/"+h.Name), mustSelector("app="+h.Name))
	}
	return f
}

// syncAndEvent syncs the i-th autoscaler, then hands the objectSet the object as the API
// server now holds it, as the informer does after the sync's status write.
func (f *fleet) syncAndEvent(b *testing.B, i int) {
	h := f.hpas[i]
	if err := f.s.syncOne(b.Context(), f.s.mustAutoscaler(b, h.Namespace+"/"+h.Name)); err != nil {
		b.Fatal(err)
	}
	got, err := f.cs.AutoscalingV2().HorizontalPodAutoscalers(h.Namespace).Get(b.Context(), h.Name, metav1.GetOptions{})
	if err != nil {
		b.Fatal(err)
	}
	f.set.upsert(got)
}

// BenchmarkFleet is the scaler's cost, per informer event and per sync, with n autoscalers
// loaded: both should not grow with n (hpa-bench fleet measures the same at scale, in
// docs/PERFORMANCE.md). event: one HPA object updated (its status written by a sync). sync:
// one steady sync (the scale, the pods, the metrics, the safety checks, the real service over
// loopback, the status compared) and the update event of the object read back, round robin
// over 100 autoscalers in 10 namespaces.
func BenchmarkFleet(b *testing.B) {
	for _, n := range []int{1000, 5000} {
		b.Run(fmt.Sprintf("event/n=%d", n), func(b *testing.B) {
			f := newFleet(b, n)
			h := f.hpas[n/2].DeepCopy()
			for i := 0; b.Loop(); i++ {
				h.ResourceVersion = strconv.Itoa(i + 2)
				f.set.upsert(h)
			}
		})
		b.Run(fmt.Sprintf("sync/n=%d", n), func(b *testing.B) {
			const m = 100
			f := newFleet(b, n)
			// The first sync of each scales to 4 and the second sees it done: both write a
			// status. From then on a sync finds the status unchanged (the fake API server's
			// status write costs ~2 ms, n or not).
			for i := range 2 * m {
				f.syncAndEvent(b, i%m)
			}
			for i := 0; b.Loop(); i++ {
				f.syncAndEvent(b, i%m)
			}
		})
	}
}
