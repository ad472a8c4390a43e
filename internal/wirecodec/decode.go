package wirecodec

import (
	"hash/maphash"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/hpa-recommender/hpa-recommender/proto/gen/recommender/v1"
)

// unmarshalRequest is proto.Unmarshal(b, m), faster for what clients normally send. With
// pooled, m's messages come from recycled slabs that Release returns (pool.go).
func unmarshalRequest(b []byte, m *pb.RecommendRequest, pooled bool) error {
	var n counts
	n.request(b)
	// The slow path's error is not wrapped: the status a client sees stays the default codec's.
	if !pooled {
		if decodeInto(b, m, newSlabs(n)) {
			return nil
		}
		return proto.Unmarshal(b, m)
	}
	s := getSlabs(n)
	if decodeInto(b, m, s) {
		lend(m, s)
		return nil
	}
	s.put() // proto.Unmarshal resets m: nothing refers to s any more
	return proto.Unmarshal(b, m)
}

// decodeInto resets m and decodes b into it, in the messages of s, sized for b by counts. It
// reports false, leaving m partly decoded, for anything it does not handle (unknown field
// numbers, unexpected wire types, fixed-width and group fields) and for anything
// proto.Unmarshal would reject: the caller then starts over with proto.Unmarshal, which
// decides. Errors take that slow path too, so the fast path never has to match protobuf-go's
// error cases, only its results.
func decodeInto(b []byte, m *pb.RecommendRequest, s *slabs) bool {
	proto.Reset(m)
	d := decoder{slabs: *s}
	d.containerPtrs, d.initPtrs, d.podValuePtrs, d.values = s.containerPtrs[:0], s.initPtrs[:0], s.podValuePtrs[:0], s.values[:0]
	// Absent repeated fields stay nil, as proto.Unmarshal leaves them.
	if len(s.podPtrs) > 0 {
		m.Pods = s.podPtrs[:0:len(s.podPtrs)]
	}
	if len(s.metricPtrs) > 0 {
		m.Metrics = s.metricPtrs[:0:len(s.metricPtrs)]
	}
	return d.request(b, m)
}

// Wire types as they appear in a tag (field number<<3 | wire type).
const (
	varintType = uint64(protowire.VarintType)
	bytesType  = uint64(protowire.BytesType)
)

// next consumes one field from b, which is not empty: its tag and value, the varint x of a
// varint field or the bytes v of a length-delimited one. It reports false on malformed input
// and on fixed-width and group wire types, which no field the fast path decodes has.
func next(b []byte) (tag, x uint64, v, rest []byte, ok bool) {
	// Almost every field of a request has a one-byte tag and a one-byte value or length.
	if len(b) >= 2 && b[0] < 0x80 && b[1] < 0x80 {
		tag, x = uint64(b[0]), uint64(b[1])
		switch tag & 7 {
		case varintType:
			return tag, x, nil, b[2:], true
		case bytesType:
			if end := 2 + int(x); end <= len(b) {
				return tag, 0, b[2:end], b[end:], true
			}
			return 0, 0, nil, nil, false
		}
	}
	tag, n := protowire.ConsumeVarint(b)
	if n < 0 {
		return 0, 0, nil, nil, false
	}
	b = b[n:]
	switch protowire.Type(tag & 7) {
	case protowire.VarintType:
		x, n = protowire.ConsumeVarint(b)
	case protowire.BytesType:
		v, n = protowire.ConsumeBytes(b)
	default:
		return 0, 0, nil, nil, false
	}
	if n < 0 {
		return 0, 0, nil, nil, false
	}
	return tag, x, v, b[n:], true
}

// count is how many fields of b have tag, up to the first malformed one.
func count(b []byte, tag uint64) int {
	n := 0
	for len(b) > 0 {
		t, _, _, rest, ok := next(b)
		if !ok {
			break
		}
		if t == tag {
			n++
		}
		b = rest
	}
	return n
}

// counts are how many messages (and optional scalars) of each kind a request holds, so that
// each kind is allocated in one slice. They are exact for input the fast path decodes; on
// other input they are only sizes (counting stops at the first malformed field, a singular
// field seen twice counts twice).
type counts struct {
	pods, containers, initContainers, ready, timestamps int
	metrics, podValues, durations, values, optValues    int
	// lastContainer is the last container counted: a container repeating the one before
	// takes no new message (decoder.container); lastTimestamp and lastDuration likewise.
	lastContainer, lastTimestamp, lastDuration []byte
}

func (c *counts) request(b []byte) {
	for len(b) > 0 {
		tag, _, v, rest, ok := next(b)
		if !ok {
			return
		}
		switch tag {
		case 5<<3 | bytesType:
			c.pods++
			c.pod(v)
		case 6<<3 | bytesType:
			c.metrics++
			c.metric(v)
		}
		b = rest
	}
}

func (c *counts) pod(b []byte) {
	for len(b) > 0 {
		tag, _, v, rest, ok := next(b)
		if !ok {
			return
		}
		switch tag {
		case 3<<3 | varintType:
			c.ready++
		case 4<<3 | bytesType, 5<<3 | bytesType, 6<<3 | bytesType:
			countNew(&c.timestamps, &c.lastTimestamp, v)
		case 7<<3 | bytesType:
			countNew(&c.containers, &c.lastContainer, v)
		case 8<<3 | bytesType:
			c.initContainers++
		}
		b = rest
	}
}

func (c *counts) metric(b []byte) {
	for len(b) > 0 {
		tag, _, v, rest, ok := next(b)
		if !ok {
			return
		}
		switch tag {
		case 1<<3 | bytesType:
			c.podValues++
			c.podValue(v)
		case 2<<3 | bytesType:
			c.optValues++
		case 3<<3 | bytesType:
			c.values++
		}
		b = rest
	}
}

func (c *counts) podValue(b []byte) {
	for len(b) > 0 {
		tag, _, v, rest, ok := next(b)
		if !ok {
			return
		}
		switch tag {
		case 3<<3 | bytesType:
			countNew(&c.timestamps, &c.lastTimestamp, v)
		case 4<<3 | bytesType:
			countNew(&c.durations, &c.lastDuration, v)
		}
		b = rest
	}
}

// countNew counts the message v unless its bytes repeat last, the one counted before it of
// its kind, which the decoder hands out again (decoder.container, decodeTime).
func countNew(n *int, last *[]byte, v []byte) {
	if *last == nil || string(v) != string(*last) {
		*n++
		*last = v
	}
}

// internBuckets is the size of the table of recent strings, in buckets of two: a request's
// distinct short strings (pod names, which its samples repeat; phases, container and resource
// names, quantities) mostly fit. Two strings that alternate, such as a resource name and its
// quantity in every pod, both stay even when they fall in one bucket; a miss only costs an
// allocation.
const internBuckets = 64

// maxInterned bounds the strings looked up in the table: longer ones rarely repeat.
const maxInterned = 64

var internSeed = maphash.MakeSeed()

// decoder decodes one request into messages allocated together, its own copy of the
// request's slabs: there the slabs of messages (pods to optValues) hold the messages of each
// kind not used yet, the first taken first, and the pointer lists (containerPtrs to values)
// start empty and collect the elements of one repeated field of all parents: parents are
// decoded one after the other, so each parent's elements are one run of the list and the
// parent takes that run. (podPtrs and metricPtrs are the request's own lists.)
type decoder struct {
	slabs

	// interned holds strings decoded before, by hash of their bytes, the latest first.
	interned [internBuckets][2]string

	// lastContainer is the container decoded last, from lastContainerBytes (part of the input);
	// lastTimestamp and lastDuration likewise.
	lastContainer      *pb.ContainerState
	lastContainerBytes []byte
	lastTimestamp      *timestamppb.Timestamp
	lastTimestampBytes []byte
	lastDuration       *durationpb.Duration
	lastDurationBytes  []byte
}

// take returns the next unused element of slab. counts sized the slabs so that they do not
// run out; should one, a new element keeps the result right.
func take[T any](slab *[]T) *T {
	s := *slab
	if len(s) == 0 {
		return new(T)
	}
	*slab = s[1:]
	return &s[0]
}

// run returns the run of list from index from, capped at its end so that appending to one
// parent's field never writes into the next parent's, or nil when the run is empty (as
// proto.Unmarshal leaves an absent repeated field).
func run[T any](list []T, from int) []T {
	if len(list) == from {
		return nil
	}
	return list[from:len(list):len(list)]
}

// str returns b as a string and whether it is valid UTF-8 (protobuf-go rejects anything else
// in a proto3 string). A short string equal to one in the table is that string.
func (d *decoder) str(b []byte) (string, bool) {
	if len(b) == 0 {
		return "", true
	}
	if len(b) > maxInterned {
		if !utf8.Valid(b) {
			return "", false
		}
		return string(b), true
	}
	bucket := &d.interned[maphash.Bytes(internSeed, b)%internBuckets]
	for _, s := range bucket {
		if s == string(b) {
			return s, true // validated when it was stored
		}
	}
	if !utf8.Valid(b) {
		return "", false
	}
	s := string(b)
	bucket[0], bucket[1] = s, bucket[0]
	return s, true
}

// merge decodes the small singular message fields (target, spec, options) with protobuf-go
// (the spec only when it is not in the table of shared specs, spec.go):
// a field that occurs again merges into what came before, as in proto.Unmarshal.
var merge = proto.UnmarshalOptions{Merge: true}

func (d *decoder) request(b []byte, m *pb.RecommendRequest) bool {
	for len(b) > 0 {
		tag, x, v, rest, ok := next(b)
		if !ok {
			return false
		}
		switch tag {
		case 1<<3 | bytesType: // target
			if m.Target == nil {
				m.Target = new(pb.TargetRef)
			}
			ok = merge.Unmarshal(v, m.Target) == nil
		case 2<<3 | bytesType: // spec
			m.Spec, ok = d.spec(v, m.Spec)
		case 3<<3 | varintType: // current_replicas
			m.CurrentReplicas = int32(x)
		case 4<<3 | varintType: // status_replicas
			if m.StatusReplicas == nil {
				m.StatusReplicas = new(int32)
			}
			*m.StatusReplicas = int32(x)
		case 5<<3 | bytesType: // pods
			p := take(&d.pods)
			m.Pods = append(m.Pods, p)
			ok = d.pod(v, p)
		case 6<<3 | bytesType: // metrics
			o := take(&d.metrics)
			m.Metrics = append(m.Metrics, o)
			ok = d.metric(v, o)
		case 7<<3 | bytesType: // options
			if m.Options == nil {
				m.Options = new(pb.Options)
			}
			ok = merge.Unmarshal(v, m.Options) == nil
		case 8<<3 | varintType: // dry_run
			m.DryRun = x != 0
		default:
			return false
		}
		if !ok {
			return false
		}
		b = rest
	}
	return true
}

func (d *decoder) pod(b []byte, p *pb.PodState) bool {
	containers, inits := len(d.containerPtrs), len(d.initPtrs)
	for len(b) > 0 {
		tag, x, v, rest, ok := next(b)
		if !ok {
			return false
		}
		switch tag {
		case 1<<3 | bytesType: // name
			p.Name, ok = d.str(v)
		case 2<<3 | bytesType: // phase
			p.Phase, ok = d.str(v)
		case 3<<3 | varintType: // ready
			if p.Ready == nil {
				p.Ready = take(&d.ready)
			}
			*p.Ready = x != 0
		case 4<<3 | bytesType: // ready_transition_time
			p.ReadyTransitionTime, ok = d.timestamp(v, p.ReadyTransitionTime)
		case 5<<3 | bytesType: // start_time
			p.StartTime, ok = d.timestamp(v, p.StartTime)
		case 6<<3 | bytesType: // deletion_timestamp
			p.DeletionTimestamp, ok = d.timestamp(v, p.DeletionTimestamp)
		case 7<<3 | bytesType: // containers
			var c *pb.ContainerState
			c, ok = d.container(v)
			d.containerPtrs = append(d.containerPtrs, c)
		case 8<<3 | bytesType: // init_containers
			c := take(&d.initContainers)
			d.initPtrs = append(d.initPtrs, c)
			ok = d.initContainer(v, c)
		case 9<<3 | bytesType: // requests
			p.Requests, ok = d.entry(v, p.Requests, rest, tag)
		default:
			return false
		}
		if !ok {
			return false
		}
		b = rest
	}
	p.Containers = run(d.containerPtrs, containers)
	p.InitContainers = run(d.initPtrs, inits)
	return true
}

// container decodes the container b, or returns the one decoded last when b is the same bytes:
// the pods of a workload mostly repeat one container, name and requests alike, and one
// message (never modified, like every decoded message) serves them all.
func (d *decoder) container(b []byte) (*pb.ContainerState, bool) {
	if d.lastContainer != nil && string(b) == string(d.lastContainerBytes) {
		return d.lastContainer, true
	}
	c := take(&d.containers)
	if !d.containerFields(b, c) {
		return c, false
	}
	d.lastContainer, d.lastContainerBytes = c, b
	return c, true
}

func (d *decoder) containerFields(b []byte, c *pb.ContainerState) bool {
	for len(b) > 0 {
		tag, _, v, rest, ok := next(b)
		if !ok {
			return false
		}
		switch tag {
		case 1<<3 | bytesType: // name
			c.Name, ok = d.str(v)
		case 2<<3 | bytesType: // requests
			c.Requests, ok = d.entry(v, c.Requests, rest, tag)
		default:
			return false
		}
		if !ok {
			return false
		}
		b = rest
	}
	return true
}

func (d *decoder) initContainer(b []byte, c *pb.InitContainerState) bool {
	for len(b) > 0 {
		tag, _, v, rest, ok := next(b)
		if !ok {
			return false
		}
		switch tag {
		case 1<<3 | bytesType: // name
			c.Name, ok = d.str(v)
		case 2<<3 | bytesType: // restart_policy
			c.RestartPolicy, ok = d.str(v)
		case 3<<3 | bytesType: // requests
			c.Requests, ok = d.entry(v, c.Requests, rest, tag)
		default:
			return false
		}
		if !ok {
			return false
		}
		b = rest
	}
	return true
}

// entry adds the map<string, string> entry b to m, made first when nil with room for this
// entry and the ones under the same tag in the rest of the parent. A missing key or value is
// empty; a repeated key overwrites.
func (d *decoder) entry(b []byte, m map[string]string, rest []byte, tag uint64) (map[string]string, bool) {
	if m == nil {
		m = make(map[string]string, 1+count(rest, tag))
	}
	var k, v string
	for len(b) > 0 {
		t, _, s, after, ok := next(b)
		if !ok {
			return m, false
		}
		switch t {
		case 1<<3 | bytesType:
			k, ok = d.str(s)
		case 2<<3 | bytesType:
			v, ok = d.str(s)
		default:
			return m, false
		}
		if !ok {
			return m, false
		}
		b = after
	}
	m[k] = v
	return m, true
}

func (d *decoder) metric(b []byte, o *pb.MetricObservation) bool {
	podValues, values := len(d.podValuePtrs), len(d.values)
	for len(b) > 0 {
		tag, _, v, rest, ok := next(b)
		if !ok {
			return false
		}
		switch tag {
		case 1<<3 | bytesType: // pod_values
			pv := take(&d.podValues)
			d.podValuePtrs = append(d.podValuePtrs, pv)
			ok = d.podValue(v, pv)
		case 2<<3 | bytesType: // value
			if o.Value == nil {
				o.Value = take(&d.optValues)
			}
			*o.Value, ok = d.str(v)
		case 3<<3 | bytesType: // values
			var s string
			s, ok = d.str(v)
			d.values = append(d.values, s)
		case 4<<3 | bytesType: // error
			o.Error, ok = d.str(v)
		default:
			return false
		}
		if !ok {
			return false
		}
		b = rest
	}
	o.PodValues = run(d.podValuePtrs, podValues)
	o.Values = run(d.values, values)
	return true
}

func (d *decoder) podValue(b []byte, pv *pb.PodMetricValue) bool {
	for len(b) > 0 {
		tag, _, v, rest, ok := next(b)
		if !ok {
			return false
		}
		switch tag {
		case 1<<3 | bytesType: // pod
			pv.Pod, ok = d.str(v)
		case 2<<3 | bytesType: // value
			pv.Value, ok = d.str(v)
		case 3<<3 | bytesType: // timestamp
			pv.Timestamp, ok = d.timestamp(v, pv.Timestamp)
		case 4<<3 | bytesType: // window
			pv.Window, ok = d.duration(v, pv.Window)
		default:
			return false
		}
		if !ok {
			return false
		}
		b = rest
	}
	return true
}

// timestamp decodes the Timestamp field b of a message whose field so far is t (nil: first
// occurrence). A first occurrence with the same bytes as the timestamp decoded before it (the
// samples of one scrape) is that message again; a later occurrence merges, as proto.Unmarshal
// does, into a copy of t, which may be shared.
func (d *decoder) timestamp(b []byte, t *timestamppb.Timestamp) (*timestamppb.Timestamp, bool) {
	return decodeTime(b, t, &d.timestamps, &d.lastTimestamp, &d.lastTimestampBytes,
		func(t *timestamppb.Timestamp) (*int64, *int32) { return &t.Seconds, &t.Nanos })
}

// duration is timestamp for a Duration (the samples' windows, mostly all one).
func (d *decoder) duration(b []byte, t *durationpb.Duration) (*durationpb.Duration, bool) {
	return decodeTime(b, t, &d.durations, &d.lastDuration, &d.lastDurationBytes,
		func(t *durationpb.Duration) (*int64, *int32) { return &t.Seconds, &t.Nanos })
}

// decodeTime is timestamp and duration: T is a Timestamp or a Duration, whose fields fields
// returns, taken from slab; last is the one decoded last (first occurrences only), from
// lastBytes.
func decodeTime[T any](b []byte, t *T, slab *[]T, last **T, lastBytes *[]byte, fields func(*T) (*int64, *int32)) (*T, bool) {
	if t == nil && *last != nil && string(b) == string(*lastBytes) {
		return *last, true
	}
	n := take(slab)
	seconds, nanos := fields(n)
	if t != nil {
		s, ns := fields(t)
		*seconds, *nanos = *s, *ns
	}
	if !secondsNanos(b, seconds, nanos) {
		return n, false
	}
	if t == nil {
		*last, *lastBytes = n, b
	}
	return n, true
}

// secondsNanos decodes the fields of a Timestamp or a Duration, which are the same: int64
// seconds = 1 and int32 nanos = 2.
func secondsNanos(b []byte, seconds *int64, nanos *int32) bool {
	for len(b) > 0 {
		tag, x, _, rest, ok := next(b)
		if !ok {
			return false
		}
		switch tag {
		case 1<<3 | varintType:
			*seconds = int64(x)
		case 2<<3 | varintType:
			*nanos = int32(x)
		default:
			return false
		}
		b = rest
	}
	return true
}
