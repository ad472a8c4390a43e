package wirecodec

import (
	"math/rand/v2"
	"sync"
	"testing"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

// TestPooledRequestIsLentUntilRelease: a pooled decode of a typical request lends it recycled
// messages, which Release takes back, leaving the request without pods and metrics; a second
// Release, and Release of anything else, does nothing.
func TestPooledRequestIsLentUntilRelease(t *testing.T) {
	b := mustMarshal(t, proto.MarshalOptions{}, realisticRequest(t0))
	m := new(pb.RecommendRequest)
	if err := (Codec{Pooled: true}).Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, m); err != nil {
		t.Fatal(err)
	}
	if _, ok := lent.Load(m); !ok || len(m.Pods) != 20 {
		t.Fatalf("lent %v, %d pods: want the request lent, with its 20 pods", ok, len(m.Pods))
	}
	Release(m)
	Release(m)
	Release(&pb.GetTargetRequest{})
	if _, ok := lent.Load(m); ok || m.Pods != nil || m.Metrics != nil {
		t.Fatalf("after Release: lent %v, pods %v, metrics %v; want nothing", ok, m.Pods, m.Metrics)
	}
	// An unpooled Codec lends nothing: its requests are the caller's for good.
	u := new(pb.RecommendRequest)
	if err := (Codec{}).Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, u); err != nil {
		t.Fatal(err)
	}
	if _, ok := lent.Load(u); ok {
		t.Fatal("an unpooled codec lent its request")
	}
}

// TestRecycledSlabsAreCleared: put zeroes every message a slab held, up to its capacity, so
// that a recycled slab keeps nothing alive and hands nothing of an old request to a new one;
// a slab grown past maxPooledMessages is dropped, not kept.
func TestRecycledSlabsAreCleared(t *testing.T) {
	s := newSlabs(counts{pods: 3, timestamps: 2, values: 2, metrics: 1})
	for i := range s.pods {
		s.pods[i].Name = "p"
	}
	s.timestamps[1].Seconds = 9
	s.values = append(s.values, "x", "y")
	s.metrics[0].Error = "e"
	s.podPtrs[2] = &s.pods[2]
	s.put()
	for i := range s.pods[:cap(s.pods)] {
		if name := s.pods[:cap(s.pods)][i].Name; name != "" {
			t.Errorf("pod %d still named %q", i, name)
		}
	}
	if s.timestamps[:2][1].Seconds != 0 || s.values[:2][0] != "" || s.metrics[:1][0].Error != "" || s.podPtrs[:3][2] != nil {
		t.Error("a recycled slab still holds an old request's values")
	}
}

// TestPooledDecodingConcurrently: goroutines decoding and releasing random requests at once,
// each checked against proto.Unmarshal while it holds its messages (the race detector watches
// the recycling).
func TestPooledDecodingConcurrently(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 7))
			for range 150 {
				b, err := proto.Marshal(randRequest(r))
				if err != nil {
					t.Error(err)
					return
				}
				want := new(pb.RecommendRequest)
				if err := proto.Unmarshal(b, want); err != nil {
					t.Error(err)
					return
				}
				got := new(pb.RecommendRequest)
				if err := (Codec{Pooled: true}).Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, got); err != nil {
					t.Error(err)
					return
				}
				if !proto.Equal(want, got) {
					t.Errorf("pooled decode differs from proto.Unmarshal for %x", b)
				}
				Release(got)
			}
		})
	}
	wg.Wait()
	if n := Lent(); n != 0 {
		t.Errorf("%d requests still lent after every Release", n)
	}
}
