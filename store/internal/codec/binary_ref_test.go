package codec

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/hpa-recommender/hpa-recommender/recommender"
	"github.com/hpa-recommender/hpa-recommender/store"
)

// refEncoder is the binary encoder as format 3 was first written: from the record structs
// (recordV1), as the JSON encoder writes. The encoder now writes a target directly;
// TestBinaryEncodesAsRecord holds it to this one's bytes, so that records already written and
// records written now are the same format.
type refEncoder struct{ binEncoder } // its primitives (str, time, ...) are the encoder's

func refList[T any](e *refEncoder, s []T, elem func(*refEncoder, *T)) {
	e.uvarint(uint64(len(s)))
	for i := range s {
		elem(e, &s[i])
	}
}

func (e *refEncoder) record(r *recordV1) {
	e.b = append(e.b, binaryMagic)
	e.b = binary.LittleEndian.AppendUint64(e.b, uint64(max(r.Revision, 0)))
	e.checkTime(r.LastSeen)
	e.b = binary.LittleEndian.AppendUint64(e.b, uint64(r.LastSeen.Unix()))
	e.b = binary.LittleEndian.AppendUint32(e.b, uint32(r.LastSeen.Nanosecond()))
	e.str(r.Key.Cluster)
	e.str(r.Key.Namespace)
	e.str(r.Key.Name)
	lenAt := len(e.b)
	e.b = append(e.b, 0, 0, 0, 0) // the spec section's length, set below
	e.specAt = len(e.b)
	if e.specBin != nil {
		e.b = append(e.b, e.specBin...)
	} else {
		e.spec(&r.Spec)
	}
	e.specEnd = len(e.b)
	if n := e.specEnd - e.specAt; n > math.MaxUint32 {
		if e.err == nil {
			e.err = fmt.Errorf("spec of %d bytes: too large", n)
		}
	} else {
		binary.LittleEndian.PutUint32(e.b[lenAt:], uint32(n))
	}
	e.state(&r.State)
	refList(e, r.Pending, func(e *refEncoder, p *pendingV1) {
		e.str(p.RecommendationID)
		e.time(p.Time)
		e.varint(int64(p.CurrentReplicas))
		e.varint(int64(p.DesiredReplicas))
	})
	e.strs(r.Reported)
	e.flag(r.LastDecision != nil)
	if d := r.LastDecision; d != nil {
		e.lastDecision(d)
	}
}

func (e *refEncoder) spec(s *specV1) {
	e.objRef(&s.ScaleTargetRef)
	e.int32Ptr(s.MinReplicas)
	e.varint(int64(s.MaxReplicas))
	refList(e, s.Metrics, (*refEncoder).metric)
	e.flag(s.Behavior != nil)
	if b := s.Behavior; b != nil {
		e.rules(b.ScaleUp)
		e.rules(b.ScaleDown)
	}
}

func (e *refEncoder) objRef(r *objRefV1) {
	e.str(r.APIVersion)
	e.str(r.Kind)
	e.str(r.Name)
}

func (e *refEncoder) metric(m *metricV1) {
	e.str(m.Type)
	e.flag(m.Resource != nil)
	if s := m.Resource; s != nil {
		e.str(s.Name)
		e.target(&s.Target)
	}
	e.flag(m.ContainerResource != nil)
	if s := m.ContainerResource; s != nil {
		e.str(s.Name)
		e.str(s.Container)
		e.target(&s.Target)
	}
	e.flag(m.Pods != nil)
	if s := m.Pods; s != nil {
		e.metricID(&s.Metric)
		e.target(&s.Target)
	}
	e.flag(m.Object != nil)
	if s := m.Object; s != nil {
		e.objRef(&s.DescribedObject)
		e.metricID(&s.Metric)
		e.target(&s.Target)
	}
	e.flag(m.External != nil)
	if s := m.External; s != nil {
		e.metricID(&s.Metric)
		e.target(&s.Target)
	}
}

func (e *refEncoder) metricID(m *metricIDV1) {
	e.str(m.Name)
	e.flag(m.Selector != nil)
	if s := m.Selector; s != nil {
		keys := make([]string, 0, len(s.MatchLabels))
		for k := range s.MatchLabels {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		e.uvarint(uint64(len(keys)))
		for _, k := range keys {
			e.str(k)
			e.str(s.MatchLabels[k])
		}
		refList(e, s.MatchExpressions, func(e *refEncoder, r *selectorReqV1) {
			e.str(r.Key)
			e.str(r.Operator)
			e.strs(r.Values)
		})
	}
}

func (e *refEncoder) target(t *metricTargetV1) {
	e.str(t.Type)
	e.strPtr(t.Value)
	e.strPtr(t.AverageValue)
	e.int32Ptr(t.AverageUtilization)
}

func (e *refEncoder) rules(r *rulesV1) {
	e.flag(r != nil)
	if r == nil {
		return
	}
	e.int32Ptr(r.StabilizationWindowSeconds)
	e.strPtr(r.SelectPolicy)
	refList(e, r.Policies, func(e *refEncoder, p *policyV1) {
		e.str(p.Type)
		e.varint(int64(p.Value))
		e.varint(int64(p.PeriodSeconds))
	})
	e.strPtr(r.Tolerance)
}

func (e *refEncoder) state(s *stateV1) {
	e.flag(s.Seeded)
	refList(e, s.History.Recommendations, func(e *refEncoder, r *recommendationV1) {
		e.time(r.Time)
		e.varint(int64(r.Replicas))
	})
	events := func(e *refEncoder, s *scaleEventV1) {
		e.time(s.Time)
		e.varint(int64(s.Change))
	}
	refList(e, s.History.ScaleUpEvents, events)
	refList(e, s.History.ScaleDownEvents, events)
	refList(e, s.Conditions, (*refEncoder).condition)
}

func (e *refEncoder) condition(c *conditionV1) {
	e.str(c.Type)
	e.str(c.Status)
	e.str(c.Reason)
	e.str(c.Message)
	e.time(c.LastTransitionTime)
}

func (e *refEncoder) lastDecision(d *lastDecV1) {
	e.str(d.RecommendationID)
	e.time(d.Time)
	e.varint(int64(d.CurrentReplicas))
	e.varint(int64(d.DesiredReplicas))
	refList(e, d.CurrentMetrics, (*refEncoder).metricStatus)
	e.flag(d.ConditionsAsState)
	refList(e, d.Conditions, (*refEncoder).condition)
	x := &d.Explanation
	e.str(x.Message)
	refList(e, x.Metrics, func(e *refEncoder, m *metricExplV1) {
		e.varint(int64(m.Index))
		e.str(m.Name)
		e.varint(int64(m.Proposal))
		r := float64(m.UsageRatio)
		if math.IsNaN(r) {
			r = math.NaN() // one NaN, as JSON's "NaN" reads back
		}
		e.b = binary.LittleEndian.AppendUint64(e.b, math.Float64bits(r))
		e.varint(int64(m.ReadyPods))
		e.varint(int64(m.IgnoredPods))
		e.varint(int64(m.MissingPods))
		e.varint(int64(m.UnreadyPods))
		e.str(m.Error)
	})
	e.varint(int64(x.WinningMetric))
	e.varint(int64(x.Proposal))
	e.varint(int64(x.Stabilized))
	e.varint(int64(x.StabilizationWindow))
	e.varint(int64(x.Limited))
	e.str(x.LimitingPolicy)
	e.varint(int64(x.Final))
	e.str(x.LimitReason)
}

func (e *refEncoder) metricStatus(m *metricStV1) {
	e.str(m.Type)
	e.flag(m.Resource != nil)
	if s := m.Resource; s != nil {
		e.str(s.Name)
		e.value(&s.Current)
	}
	e.flag(m.ContainerResource != nil)
	if s := m.ContainerResource; s != nil {
		e.str(s.Name)
		e.str(s.Container)
		e.value(&s.Current)
	}
	e.flag(m.Pods != nil)
	if s := m.Pods; s != nil {
		e.metricID(&s.Metric)
		e.value(&s.Current)
	}
	e.flag(m.Object != nil)
	if s := m.Object; s != nil {
		e.metricID(&s.Metric)
		e.value(&s.Current)
		e.objRef(&s.DescribedObject)
	}
	e.flag(m.External != nil)
	if s := m.External; s != nil {
		e.metricID(&s.Metric)
		e.value(&s.Current)
	}
}

func (e *refEncoder) value(v *valueStV1) {
	e.strPtr(v.Value)
	e.strPtr(v.AverageValue)
	e.int32Ptr(v.AverageUtilization)
}

// refBinary is the binary record of t with revision rev as refEncoder writes it: from the record
// structs, with spec (when not nil) as the spec section.
func refBinary(t *store.Target, rev int64, spec []byte) ([]byte, error) {
	r := encRecord(t, rev)
	e := refEncoder{binEncoder{specBin: spec}}
	e.record(&r)
	return e.b, e.err
}

// TestBinaryEncodesAsRecord: the encoder, which writes a target directly, writes the bytes the
// record structs give (refEncoder), and fails where they fail, for random targets, the seed specs
// and the benchmarks' target; with decisions whose conditions are the state's (in other zones,
// with monotonic readings, or one field apart), times around the edges of the years a record
// holds in zones that put them in another year, and a reused spec section.
func TestBinaryEncodesAsRecord(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	specs := seedSpecs(t)
	now := time.Now() // with a monotonic reading
	edges := []time.Time{
		time.Date(9999, 12, 31, 23, 30, 0, 0, time.UTC).In(time.FixedZone("east", 3600)),
		time.Date(10000, 1, 1, 0, 30, 0, 0, time.UTC).In(time.FixedZone("west", -3600)),
		time.Date(0, 1, 1, 0, 30, 0, 0, time.UTC).In(time.FixedZone("west", -3600)),
		time.Date(-1, 12, 31, 23, 30, 0, 0, time.UTC).In(time.FixedZone("east", 3600)),
	}
	refused := 0
	for i := range 3000 + len(specs) + 1 {
		in := coveringTarget(r, specs, i)
		if d := in.LastDecision; d != nil && len(in.State.Conditions) > 0 {
			switch i % 5 {
			case 1:
				d.Decision.Conditions = equalConditions(in.State.Conditions)
			case 2:
				in.State.Conditions[0].LastTransitionTime = now
				d.Decision.Conditions = equalConditions(in.State.Conditions)
				d.Decision.Conditions[0].LastTransitionTime = now.Round(0).In(zones[1])
			case 3:
				d.Decision.Conditions = equalConditions(in.State.Conditions)
				d.Decision.Conditions[len(d.Decision.Conditions)-1].Message += "."
			}
		}
		if i%97 == 0 {
			edge := edges[(i/97)%len(edges)]
			switch (i / 97) % 3 {
			case 0:
				in.LastSeen = edge
			case 1:
				in.Pending = append(in.Pending, store.PendingDecision{RecommendationID: "edge", Time: edge})
			case 2:
				in.State.History.ScaleUpEvents = append(in.State.History.ScaleUpEvents, recommender.ScaleEvent{Time: edge})
			}
		}
		rev := int64(i % 3) // 0: none; 1, 2: in the header
		want, wantErr := refBinary(in, rev, nil)
		got, err := Binary.Marshal(in, rev)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("target %d: Marshal's error %v, the record structs' %v", i, err, wantErr)
		}
		if err != nil {
			refused++
			continue
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("target %d: the encoder's bytes differ from the record structs':\n got %x\nwant %x", i, got, want)
		}
		u, err := Binary.MarshalUnrevised(in)
		if want0, _ := refBinary(in, 0, nil); err != nil || !bytes.Equal(u.Bytes(), want0) {
			t.Fatalf("target %d: MarshalUnrevised's bytes differ from the record structs' (%v)", i, err)
		}
		// A reused spec section is written verbatim, whatever the target's spec.
		spec := []byte{1, 2, 3, byte(i)}
		var reused []byte
		err = Binary.encode(in, 0, nil, spec, func(b, s []byte) {
			if !bytes.Equal(s, spec) {
				t.Errorf("target %d: spec section %x, want %x", i, s, spec)
			}
			reused = bytes.Clone(b)
		})
		if wantReused, _ := refBinary(in, 0, spec); err != nil || !bytes.Equal(reused, wantReused) {
			t.Fatalf("target %d: with a reused spec section, the bytes differ from the record structs' (%v)", i, err)
		}
	}
	if refused == 0 {
		t.Fatal("no target was refused: the edges of the years were not reached")
	}
}
