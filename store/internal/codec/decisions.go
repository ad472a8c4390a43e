package codec

import (
	"encoding/binary"
	"fmt"

	"github.com/hpa-recommender/hpa-recommender/store"
	pb "github.com/hpa-recommender/hpa-recommender/store/internal/recordpb"
)

// A retired decision log entry is stored as recordpb.DecisionEntry behind one format byte,
// under the key EncodeDecisionKey gives it: its target's encoded key, then its Seq as 8 bytes
// big-endian, so a target's entries are contiguous and in Seq order, and no other target's
// key is a prefix of them (an encoded key ends with its terminator).

// EncodeDecisionKey is the stored key of the entry seq of the target whose encoded key is
// target.
func EncodeDecisionKey(target []byte, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(append(make([]byte, 0, len(target)+8), target...), seq)
}

// DecisionSeq returns the Seq at the end of a stored entry key.
func DecisionSeq(k []byte) (uint64, error) {
	if len(k) < 8 {
		return 0, fmt.Errorf("decision key %q: too short", k)
	}
	return binary.BigEndian.Uint64(k[len(k)-8:]), nil
}

// MarshalDecision encodes a retired entry.
func MarshalDecision(e *store.DecisionEntry) ([]byte, error) {
	m := toDecisionEntry(e)
	buf := make([]byte, 1+m.SizeVT())
	buf[0] = formatProto
	if _, err := m.MarshalToSizedBufferVT(buf[1:]); err != nil {
		return nil, fmt.Errorf("encode decision %d: %w", e.Seq, err)
	}
	return buf, nil
}

// UnmarshalDecision decodes what MarshalDecision wrote; the result never aliases b.
func UnmarshalDecision(b []byte) (store.DecisionEntry, error) {
	if len(b) == 0 || b[0] != formatProto {
		return store.DecisionEntry{}, fmt.Errorf("decode decision entry: not of format %d", formatProto)
	}
	var m pb.DecisionEntry
	if err := m.UnmarshalVT(b[1:]); err != nil {
		return store.DecisionEntry{}, fmt.Errorf("decode decision entry: %w", err)
	}
	return fromDecisionEntry(&m), nil
}

// DecisionSize is the encoded size of e as a retired entry (what DecisionLogLimits.MaxBytes
// counts).
func DecisionSize(e *store.DecisionEntry) int64 { return int64(1 + toDecisionEntry(e).SizeVT()) }

// RecentDecisionsSize is the encoded size of t's recent entries, which DecisionLogLimits.MaxBytes
// counts besides the retired ones.
func RecentDecisionsSize(t *store.Target) int64 {
	n := int64(0)
	for i := range t.RecentDecisions {
		n += DecisionSize(&t.RecentDecisions[i])
	}
	return n
}

func toDecisionEntry(e *store.DecisionEntry) *pb.DecisionEntry {
	m := &pb.DecisionEntry{
		Seq: e.Seq, Time: toTime(e.Time), Until: toTime(e.Until), Count: e.Count,
		RecommendationId: e.RecommendationID, CurrentReplicas: e.CurrentReplicas, DesiredReplicas: e.DesiredReplicas,
		Proposal: e.Proposal, Stabilized: e.Stabilized, Limited: e.Limited, Final: e.Final,
		Message: e.Message, Outcome: e.Outcome, Error: e.Error,
	}
	for _, x := range e.Metrics {
		m.Metrics = append(m.Metrics, &pb.DecisionMetric{Index: x.Index, Name: x.Name, Proposal: x.Proposal,
			UsageRatio: x.UsageRatio, Value: x.Value, ReadyPods: x.ReadyPods, IgnoredPods: x.IgnoredPods,
			MissingPods: x.MissingPods, UnreadyPods: x.UnreadyPods, Error: x.Error})
	}
	for _, c := range e.Conditions {
		m.Conditions = append(m.Conditions, &pb.DecisionCondition{Type: c.Type, Status: c.Status, Reason: c.Reason})
	}
	return m
}

func fromDecisionEntry(m *pb.DecisionEntry) store.DecisionEntry {
	e := store.DecisionEntry{
		Seq: m.Seq, Time: fromTime(m.Time), Until: fromTime(m.Until), Count: m.Count,
		RecommendationID: m.RecommendationId, CurrentReplicas: m.CurrentReplicas, DesiredReplicas: m.DesiredReplicas,
		Proposal: m.Proposal, Stabilized: m.Stabilized, Limited: m.Limited, Final: m.Final,
		Message: m.Message, Outcome: m.Outcome, Error: m.Error,
	}
	for _, x := range m.Metrics {
		e.Metrics = append(e.Metrics, store.DecisionMetric{Index: x.Index, Name: x.Name, Proposal: x.Proposal,
			UsageRatio: x.UsageRatio, Value: x.Value, ReadyPods: x.ReadyPods, IgnoredPods: x.IgnoredPods,
			MissingPods: x.MissingPods, UnreadyPods: x.UnreadyPods, Error: x.Error})
	}
	for _, c := range m.Conditions {
		e.Conditions = append(e.Conditions, store.DecisionCondition{Type: c.Type, Status: c.Status, Reason: c.Reason})
	}
	return e
}

func toDecisionLog(t *store.Target, r *pb.Record) {
	for i := range t.RecentDecisions {
		r.RecentDecisions = append(r.RecentDecisions, toDecisionEntry(&t.RecentDecisions[i]))
	}
	if l := t.DecisionLog; l != (store.DecisionLogState{}) {
		r.DecisionLog = &pb.DecisionLogState{NextSeq: l.NextSeq, Retired: int64(l.Retired), Bytes: l.Bytes}
	}
}

func fromDecisionLog(r *pb.Record, t *store.Target) {
	for _, m := range r.RecentDecisions {
		t.RecentDecisions = append(t.RecentDecisions, fromDecisionEntry(m))
	}
	if l := r.DecisionLog; l != nil {
		t.DecisionLog = store.DecisionLogState{NextSeq: l.NextSeq, Retired: int(l.Retired), Bytes: l.Bytes}
	}
}
