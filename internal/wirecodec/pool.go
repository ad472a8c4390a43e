package wirecodec

import (
	"sync"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

// slabs are the messages of one decoded request, each kind in one slice (see decoder), and
// the lists of pointers its repeated fields are cut from. Each slice has exactly the length
// counts asked for; its capacity may be larger when it is recycled.
//
// A Codec with Pooled set decodes into recycled slabs: a Recommend's messages were a fifth of
// the bytes the server allocated per call. The request keeps them until Release, which the
// server calls when the call is over; they are then cleared and serve a later request.
type slabs struct {
	pods           []pb.PodState
	containers     []pb.ContainerState
	initContainers []pb.InitContainerState
	timestamps     []timestamppb.Timestamp
	durations      []durationpb.Duration
	metrics        []pb.MetricObservation
	podValues      []pb.PodMetricValue
	ready          []bool
	optValues      []string

	podPtrs       []*pb.PodState
	metricPtrs    []*pb.MetricObservation
	containerPtrs []*pb.ContainerState
	initPtrs      []*pb.InitContainerState
	podValuePtrs  []*pb.PodMetricValue
	values        []string
}

// maxPooledMessages bounds the messages of one kind a recycled slab keeps, so that one huge
// request does not pin its memory for good.
const maxPooledMessages = 1024

var slabPool = sync.Pool{New: func() any { return new(slabs) }}

// newSlabs allocates slabs sized by n.
func newSlabs(n counts) *slabs {
	s := new(slabs)
	s.size(n)
	return s
}

// getSlabs returns recycled slabs sized by n.
func getSlabs(n counts) *slabs {
	s := slabPool.Get().(*slabs)
	s.size(n)
	return s
}

func (s *slabs) size(n counts) {
	fit(&s.pods, n.pods)
	fit(&s.containers, n.containers)
	fit(&s.initContainers, n.initContainers)
	fit(&s.timestamps, n.timestamps)
	fit(&s.durations, n.durations)
	fit(&s.metrics, n.metrics)
	fit(&s.podValues, n.podValues)
	fit(&s.ready, n.ready)
	fit(&s.optValues, n.optValues)
	fit(&s.podPtrs, n.pods)
	fit(&s.metricPtrs, n.metrics)
	fit(&s.containerPtrs, n.containers)
	fit(&s.initPtrs, n.initContainers)
	fit(&s.podValuePtrs, n.podValues)
	fit(&s.values, n.values)
}

// fit makes *slab n zero elements long, reusing its array when large enough (a recycled
// array was cleared by put).
func fit[T any](slab *[]T, n int) {
	if cap(*slab) >= n {
		*slab = (*slab)[:n]
		return
	}
	*slab = make([]T, n)
}

// put clears s (so that it holds on to nothing) and recycles it, unless a kind grew past
// maxPooledMessages.
func (s *slabs) put() {
	keep := true
	keep = wipe(&s.pods) && keep
	keep = wipe(&s.containers) && keep
	keep = wipe(&s.initContainers) && keep
	keep = wipe(&s.timestamps) && keep
	keep = wipe(&s.durations) && keep
	keep = wipe(&s.metrics) && keep
	keep = wipe(&s.podValues) && keep
	keep = wipe(&s.ready) && keep
	keep = wipe(&s.optValues) && keep
	keep = wipe(&s.podPtrs) && keep
	keep = wipe(&s.metricPtrs) && keep
	keep = wipe(&s.containerPtrs) && keep
	keep = wipe(&s.initPtrs) && keep
	keep = wipe(&s.podValuePtrs) && keep
	keep = wipe(&s.values) && keep
	if keep {
		slabPool.Put(s)
	}
}

// wipe zeroes the whole array of *slab and reports whether it is small enough to keep.
func wipe[T any](slab *[]T) bool {
	clear((*slab)[:cap(*slab)])
	*slab = (*slab)[:0]
	return cap(*slab) <= maxPooledMessages
}

// lent holds the slabs of each request decoded by a pooled Codec until Release.
var lent sync.Map // *pb.RecommendRequest -> *slabs

func lend(m *pb.RecommendRequest, s *slabs) { lent.Store(m, s) }

// Release ends the life of a request a Codec with Pooled set decoded: its messages are
// cleared and recycled, and the request is left without pods and metrics, so that nothing
// can read another request's data through it. It does nothing for any other value. A server
// using a pooled Codec calls it for every request once the call is over (nothing may read the
// request, nor anything reached through it, afterwards): until then the request's messages
// are held.
func Release(req any) {
	m, ok := req.(*pb.RecommendRequest)
	if !ok {
		return
	}
	v, ok := lent.LoadAndDelete(m)
	if !ok {
		return
	}
	m.Pods, m.Metrics = nil, nil
	v.(*slabs).put()
}
