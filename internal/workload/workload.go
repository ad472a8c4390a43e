package workload

import (
	"math"
	"strconv"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
	"github.com/hpa-recommender/hpa-recommender/recommender"
)

// InitialReplicas is every target's replica count until a scale decision is reported applied:
// the count a request of a target whose load stays at its cycle's middle keeps.
const InitialReplicas = 20

// Payload model constants: every target is a Deployment of nominally 20 pods requesting 500m
// CPU, autoscaled on CPU utilization (60%) and an External queue-depth metric (30 per pod),
// between 2 and 40 replicas, with a behavior.
const (
	minReplicas     = 2
	maxReplicas     = 40
	cpuRequestMilli = 500
	cpuTargetPct    = 60
	queuePerPod     = 30
	// loadPeriod is how many calls one target's load cycle lasts: its CPU usage follows a
	// sine of ±DefaultLoadSwing around what its initial 20 replicas serve at the target
	// utilization, so a share of the decisions scale up and, once the scale-down window has
	// passed, down.
	loadPeriod = 24
	// targetPrefix starts the names of the targets and of their pods.
	targetPrefix = "bench-"
)

// DefaultLoadSwing is the default amplitude of each target's CPU demand cycle (±40 %).
const DefaultLoadSwing = 0.4

// Workload makes the requests of N targets and remembers each target's replica count as a
// controller would (a scale decision that was reported applied becomes the current count). It
// is safe for concurrent use; two concurrent calls about one target are allowed (the server
// serializes them), they just see the same replica count.
type Workload struct {
	cluster, namespace string
	targets            []targetState
	spec               *pb.HorizontalPodAutoscalerSpec
	startTime          *timestamppb.Timestamp
	window             *durationpb.Duration
	swing              float64
	// sharedSpec: every target sends spec as it is, scaleTargetRef "web" included, instead of
	// its own (see SetSharedSpec).
	sharedSpec bool
	// distinctSpecs: every target's spec also names its own queue (see SetDistinctSpecs).
	distinctSpecs bool
}

type targetState struct {
	replicas atomic.Int32
	calls    atomic.Int64
	_        [48]byte // keep neighbouring targets off one cache line
}

// NewWorkload returns the model of n targets named bench-<i> in namespace of cluster.
func NewWorkload(cluster, namespace string, n int) *Workload {
	w := &Workload{
		cluster:   cluster,
		namespace: namespace,
		targets:   make([]targetState, n),
		spec:      benchSpec(),
		startTime: timestamppb.New(time.Now().Add(-time.Hour).Truncate(time.Second)),
		window:    durationpb.New(30 * time.Second),
		swing:     DefaultLoadSwing,
	}
	for i := range w.targets {
		w.targets[i].replicas.Store(InitialReplicas)
	}
	return w
}

// SetLoadSwing sets the amplitude of every target's CPU demand cycle (a fraction; default
// DefaultLoadSwing). At 0 the demand stays at what 20 replicas serve at the target
// utilization, so no decision scales: every Recommend is exactly one write, whatever the number
// of targets and however often each is called. Call it before the first Request.
func (w *Workload) SetLoadSwing(swing float64) { w.swing = swing }

// SetSharedSpec makes every target send one and the same spec (its scaleTargetRef names a
// Deployment "web"), as this tool did until 2026-11-25, instead of a spec of its own whose
// scaleTargetRef names the target's own Deployment, bench-<i>, as an HPA's does. The specs are
// otherwise alike; the difference is what the server's caches of specs see: one spec, or as many
// as there are targets. Call it before the first Request.
func (w *Workload) SetSharedSpec(shared bool) { w.sharedSpec = shared }

// SetDistinctSpecs makes every target's spec differ in more than its scaleTargetRef: its
// External metric's selector names the target's own queue (queue: work-<i>), which changes no
// replica count. Specs made from one template, as this tool's otherwise are, differ only in
// scaleTargetRef, and the server decodes and converts what they share once; distinct specs
// are each decoded and converted on their own. It does nothing while SetSharedSpec(true)
// holds. Call it before the first Request.
func (w *Workload) SetDistinctSpecs(distinct bool) { w.distinctSpecs = distinct }

// Targets is the number of targets.
func (w *Workload) Targets() int { return len(w.targets) }

func benchSpec() *pb.HorizontalPodAutoscalerSpec {
	p := proto.Int32
	return &pb.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: &pb.CrossVersionObjectReference{ApiVersion: "apps/v1", Kind: "Deployment", Name: "web"},
		MinReplicas:    p(minReplicas),
		MaxReplicas:    maxReplicas,
		Metrics: []*pb.MetricSpec{
			{Type: recommender.MetricResource, Resource: &pb.ResourceMetricSource{
				Name: "cpu", Target: &pb.MetricTarget{Type: recommender.TargetUtilization, AverageUtilization: p(cpuTargetPct)},
			}},
			{Type: recommender.MetricExternal, External: &pb.ExternalMetricSource{
				Metric: &pb.MetricIdentifier{Name: "queue_messages_ready", Selector: &pb.LabelSelector{MatchLabels: map[string]string{"queue": "work"}}},
				Target: &pb.MetricTarget{Type: recommender.TargetAverageValue, AverageValue: proto.String(strconv.Itoa(queuePerPod))},
			}},
		},
		Behavior: &pb.HorizontalPodAutoscalerBehavior{
			ScaleUp: &pb.HPAScalingRules{
				StabilizationWindowSeconds: p(0),
				SelectPolicy:               proto.String(recommender.SelectMax),
				Policies: []*pb.HPAScalingPolicy{
					{Type: recommender.PolicyPercent, Value: 100, PeriodSeconds: 15},
					{Type: recommender.PolicyPods, Value: 4, PeriodSeconds: 15},
				},
			},
			ScaleDown: &pb.HPAScalingRules{
				StabilizationWindowSeconds: p(30),
				Policies:                   []*pb.HPAScalingPolicy{{Type: recommender.PolicyPercent, Value: 20, PeriodSeconds: 15}},
			},
		},
	}
}

// specOf is target i's spec: the shared one, or a copy naming its own Deployment.
func (w *Workload) specOf(i int) *pb.HorizontalPodAutoscalerSpec {
	if w.sharedSpec {
		return w.spec
	}
	s := proto.CloneOf(w.spec)
	s.ScaleTargetRef.Name = targetPrefix + strconv.Itoa(i)
	if w.distinctSpecs {
		s.Metrics[1].External.Metric.Selector.MatchLabels["queue"] = "work-" + strconv.Itoa(i)
	}
	return s
}

// Ref returns target i's reference.
func (w *Workload) Ref(i int) *pb.TargetRef {
	return &pb.TargetRef{Cluster: w.cluster, Namespace: w.namespace, Name: targetPrefix + strconv.Itoa(i)}
}

// Request builds the next Recommend request of target i at now: as many running, ready pods as
// the target's current replica count, their CPU samples and the queue depth.
func (w *Workload) Request(i int, now time.Time) *pb.RecommendRequest {
	t := &w.targets[i]
	return w.RequestWithPods(i, t.replicas.Load(), now)
}

// RequestWithPods is Request with a given replica (and pod) count.
func (w *Workload) RequestWithPods(i int, replicas int32, now time.Time) *pb.RecommendRequest {
	req := w.Unobserved(i, replicas)
	req.Metrics = w.Observations(i, replicas, now)
	return req
}

// Unobserved is what target i's requests with replicas pods share from one call to the next:
// RequestWithPods's request without its Metrics. It does not count a call.
func (w *Workload) Unobserved(i int, replicas int32) *pb.RecommendRequest {
	pods := make([]*pb.PodState, replicas)
	prefix := podPrefix(i)
	ready := true
	for j := range pods {
		pods[j] = w.pod(prefix+strconv.Itoa(j), &ready)
	}
	return &pb.RecommendRequest{Target: w.Ref(i), Spec: w.specOf(i), CurrentReplicas: replicas, Pods: pods}
}

// Observations counts a call of target i with replicas pods at now and returns its Metrics:
// one CPU sample per pod and the queue depth. Unobserved(i, replicas) with these Metrics is the
// call's request; their encodings concatenated are its encoding (fields 1-5, then 6).
func (w *Workload) Observations(i int, replicas int32, now time.Time) []*pb.MetricObservation {
	c := w.nextCall(i, replicas, now)
	sampleTime := timestamppb.New(c.sampleTime)
	samples := make([]*pb.PodMetricValue, replicas)
	prefix := podPrefix(i)
	for j := range samples {
		samples[j] = &pb.PodMetricValue{Pod: prefix + strconv.Itoa(j), Value: strconv.FormatInt(c.sample(j), 10) + "m", Timestamp: sampleTime, Window: w.window}
	}
	return []*pb.MetricObservation{
		{PodValues: samples},
		{Values: []string{strconv.FormatInt(c.queue, 10)}},
	}
}

// call is what differs from one request of a target to the next.
type call struct {
	// perPod is the average CPU usage of a pod, in millicores.
	perPod int64
	// queue is the queue depth.
	queue int64
	// sampleTime is the time of every CPU sample.
	sampleTime time.Time
}

// nextCall counts a call of target i with replicas pods at now and returns its values.
func (w *Workload) nextCall(i int, replicas int32, now time.Time) call {
	k := w.targets[i].calls.Add(1)
	// Total CPU demand in millicores: the initial replicas at the target utilization, ±swing
	// along the target's own phase of the cycle.
	phase := 2 * math.Pi * (float64(k)/loadPeriod + float64(i%97)/97)
	demand := float64(InitialReplicas*cpuRequestMilli*cpuTargetPct/100) * (1 + w.swing*math.Sin(phase))
	return call{
		perPod:     int64(demand / float64(replicas)),
		queue:      int64(demand / float64(cpuRequestMilli*cpuTargetPct/100) * queuePerPod * 0.7),
		sampleTime: now.Add(-10 * time.Second).Truncate(time.Second),
	}
}

// sample is pod j's CPU usage in millicores: ±5% spread between pods.
func (c call) sample(j int) int64 {
	return c.perPod + c.perPod*int64(j%11-5)/100
}

// podPrefix is what the names of target i's pods start with.
func podPrefix(i int) string { return targetPrefix + strconv.Itoa(i) + "-" }

// pod is a running pod of a target, ready as *ready says (true; a request's pods share it):
// all its pods are alike but for their names.
func (w *Workload) pod(name string, ready *bool) *pb.PodState {
	return &pb.PodState{
		Name: name, Phase: "Running", Ready: ready,
		ReadyTransitionTime: w.startTime, StartTime: w.startTime,
		Containers: []*pb.ContainerState{{Name: "app", Requests: map[string]string{"cpu": "500m", "memory": "256Mi"}}},
	}
}

// Rewind uncounts target i's last call, so that its next Request is that call's again: a test
// compares what one call sent with what it should have been.
func (w *Workload) Rewind(i int) { w.targets[i].calls.Add(-1) }

// Replicas is target i's replica count: what its next Request sends.
func (w *Workload) Replicas(i int) int32 { return w.targets[i].replicas.Load() }

// Applied records that target i now runs replicas (its scale write succeeded).
func (w *Workload) Applied(i int, replicas int32) {
	w.targets[i].replicas.Store(max(replicas, 1))
}
