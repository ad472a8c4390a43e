package wirecodec

import (
	"sync"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/hpa-recommender/hpa-recommender/internal/slab"
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
	slab.Fit(&s.pods, n.pods)
	slab.Fit(&s.containers, n.containers)
	slab.Fit(&s.initContainers, n.initContainers)
	slab.Fit(&s.timestamps, n.timestamps)
	slab.Fit(&s.durations, n.durations)
	slab.Fit(&s.metrics, n.metrics)
	slab.Fit(&s.podValues, n.podValues)
	slab.Fit(&s.ready, n.ready)
	slab.Fit(&s.optValues, n.optValues)
	slab.Fit(&s.podPtrs, n.pods)
	slab.Fit(&s.metricPtrs, n.metrics)
	slab.Fit(&s.containerPtrs, n.containers)
	slab.Fit(&s.initPtrs, n.initContainers)
	slab.Fit(&s.podValuePtrs, n.podValues)
	slab.Fit(&s.values, n.values)
}

// put clears s (so that it holds on to nothing) and recycles it, unless a kind grew past
// maxPooledMessages.
func (s *slabs) put() {
	keep := true
	keep = slab.Reset(&s.pods, maxPooledMessages) && keep
	keep = slab.Reset(&s.containers, maxPooledMessages) && keep
	keep = slab.Reset(&s.initContainers, maxPooledMessages) && keep
	keep = slab.Reset(&s.timestamps, maxPooledMessages) && keep
	keep = slab.Reset(&s.durations, maxPooledMessages) && keep
	keep = slab.Reset(&s.metrics, maxPooledMessages) && keep
	keep = slab.Reset(&s.podValues, maxPooledMessages) && keep
	keep = slab.Reset(&s.ready, maxPooledMessages) && keep
	keep = slab.Reset(&s.optValues, maxPooledMessages) && keep
	keep = slab.Reset(&s.podPtrs, maxPooledMessages) && keep
	keep = slab.Reset(&s.metricPtrs, maxPooledMessages) && keep
	keep = slab.Reset(&s.containerPtrs, maxPooledMessages) && keep
	keep = slab.Reset(&s.initPtrs, maxPooledMessages) && keep
	keep = slab.Reset(&s.podValuePtrs, maxPooledMessages) && keep
	keep = slab.Reset(&s.values, maxPooledMessages) && keep
	if keep {
		slabPool.Put(s)
	}
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
