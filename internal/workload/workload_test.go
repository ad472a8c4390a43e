package workload_test

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/hpa-recommender/hpa-recommender/internal/workload"
	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

// TestRequestShape: a request carries as many pods and CPU samples as the target's replica
// count, names the target in its reference, its spec's scaleTargetRef (unless SetSharedSpec) and
// its pods, and survives proto.Marshal and back unchanged.
func TestRequestShape(t *testing.T) {
	wl := workload.NewWorkload("c", "ns", 3)
	wl.Applied(2, 7)
	now := time.Now()
	for _, shared := range []bool{false, true} {
		wl.SetSharedSpec(shared)
		req := wl.Request(2, now)
		if req.GetCurrentReplicas() != 7 || wl.Replicas(2) != 7 || len(req.GetPods()) != 7 || len(req.GetMetrics()[0].GetPodValues()) != 7 {
			t.Fatalf("shared %t: %d replicas, %d pods, %d samples; want 7 each", shared, req.GetCurrentReplicas(), len(req.GetPods()), len(req.GetMetrics()[0].GetPodValues()))
		}
		if got := req.GetTarget(); got.GetCluster() != "c" || got.GetNamespace() != "ns" || got.GetName() != "bench-2" {
			t.Errorf("target %v, want c/ns/bench-2", got)
		}
		wantRef := "bench-2"
		if shared {
			wantRef = "web"
		}
		if got := req.GetSpec().GetScaleTargetRef().GetName(); got != wantRef {
			t.Errorf("shared %t: scaleTargetRef %q, want %q", shared, got, wantRef)
		}
		if got := req.GetPods()[6].GetName(); got != "bench-2-6" {
			t.Errorf("pod %q, want bench-2-6", got)
		}
		b, err := proto.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		back := new(pb.RecommendRequest)
		if err := proto.Unmarshal(b, back); err != nil || !proto.Equal(back, req) {
			t.Errorf("shared %t: the request does not survive proto.Marshal (%v)", shared, err)
		}
	}
}

// TestDistinctSpecs: with SetDistinctSpecs every target's queue selector is its own.
func TestDistinctSpecs(t *testing.T) {
	wl := workload.NewWorkload("c", "ns", 2)
	now := time.Now()
	sel := func(i int) string {
		return wl.Request(i, now).GetSpec().GetMetrics()[1].GetExternal().GetMetric().GetSelector().GetMatchLabels()["queue"]
	}
	if a, b := sel(0), sel(1); a != "work" || b != "work" {
		t.Errorf("template specs: queues %q, %q, want work for both", a, b)
	}
	wl.SetDistinctSpecs(true)
	if a, b := sel(0), sel(1); a != "work-0" || b != "work-1" {
		t.Errorf("distinct specs: queues %q, %q, want work-0, work-1", a, b)
	}
}

// TestCallsFollowTheCycle: successive requests of a target differ (its demand moves along the
// cycle), Rewind makes the next request the last one again, and at a load swing of 0 every
// call of a target sends the same samples.
func TestCallsFollowTheCycle(t *testing.T) {
	now := time.Now()
	wl := workload.NewWorkload("c", "ns", 1)
	first := wl.Request(0, now)
	second := wl.Request(0, now)
	if proto.Equal(first, second) {
		t.Error("two successive calls sent the same request; want the demand to move")
	}
	wl.Rewind(0)
	if again := wl.Request(0, now); !proto.Equal(again, second) {
		t.Error("after Rewind the request differs from the rewound call's")
	}
	flat := workload.NewWorkload("c", "ns", 1)
	flat.SetLoadSwing(0)
	if a, b := flat.Request(0, now), flat.Request(0, now); !proto.Equal(a, b) {
		t.Error("load swing 0: two calls sent different requests")
	}
}

// TestObservationsCompleteTheRequest: a call's request is Unobserved with the call's
// Observations, and the two encodings concatenated decode to it: what the load tool sends.
func TestObservationsCompleteTheRequest(t *testing.T) {
	now := time.Now()
	wl := workload.NewWorkload("c", "ns", 4)
	wl.Applied(3, 9)
	want := wl.Request(3, now)
	wl.Rewind(3)
	shared, err := proto.Marshal(wl.Unobserved(3, wl.Replicas(3)))
	if err != nil {
		t.Fatal(err)
	}
	obs, err := proto.Marshal(&pb.RecommendRequest{Metrics: wl.Observations(3, 9, now)})
	if err != nil {
		t.Fatal(err)
	}
	got := new(pb.RecommendRequest)
	if err := proto.Unmarshal(append(shared, obs...), got); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(got, want) {
		t.Error("the concatenated encodings decode to another request than Request's")
	}
	if wl.Request(3, now); proto.Equal(wl.Request(3, now), want) {
		t.Error("Observations did not count the call: the requests after it repeat it")
	}
}
