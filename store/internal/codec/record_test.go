package codec

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hpa-recommender/hpa-recommender/store"
	"github.com/hpa-recommender/hpa-recommender/store/storetest"
)

// TestFormat3StillReads: records of format 3 that release 17d0253 wrote for the first fixture
// targets (testdata/format3/fixture-N.bin, revision 100+N) decode to those targets, and
// Revision and LastSeen read them.
func TestFormat3StillReads(t *testing.T) {
	for i, want := range storetest.FixtureTargets()[:6] {
		b, err := os.ReadFile(fmt.Sprintf("testdata/format3/fixture-%d.bin", i))
		if err != nil {
			t.Fatal(err)
		}
		got, rev, err := Unmarshal(b)
		if err != nil {
			t.Fatalf("fixture %d: %v", i, err)
		}
		norm, err := Normalize(want)
		if err != nil {
			t.Fatal(err)
		}
		norm.Revision = int64(100 + i)
		if rev != norm.Revision {
			t.Errorf("fixture %d: revision %d, want %d", i, rev, norm.Revision)
		}
		if d := cmp.Diff(norm, got, exact); d != "" {
			t.Errorf("fixture %d (-want +got):\n%s", i, d)
		}
		if r, ok := Revision(b); !ok || r != norm.Revision {
			t.Errorf("fixture %d: Revision = %d, %v", i, r, ok)
		}
		if seen, err := LastSeen(b); err != nil || !seen.Equal(want.LastSeen) {
			t.Errorf("fixture %d: LastSeen = %v, %v; want %v", i, seen, err, want.LastSeen)
		}
	}
}

// TestVersion1StillReads: a JSON record of version 1 that an older binary stored decodes, its
// revision and LastSeen read, and written again in format 4 it is smaller and decodes the same.
func TestVersion1StillReads(t *testing.T) {
	v1, err := os.ReadFile("testdata/record-v1.json")
	if err != nil {
		t.Fatal(err)
	}
	tgt, rev, err := Unmarshal(v1)
	if err != nil {
		t.Fatal(err)
	}
	if rev != 35902 || tgt.Key != (store.Key{Cluster: "bench", Namespace: "bench", Name: "bench-239"}) ||
		len(tgt.State.Conditions) != 4 || tgt.LastDecision == nil || len(tgt.State.History.Recommendations) != 10 {
		t.Fatalf("decoded revision %d, key %v, %d conditions, decision %v", rev, tgt.Key, len(tgt.State.Conditions), tgt.LastDecision != nil)
	}
	if got, ok := Revision(v1); !ok || got != 35902 {
		t.Errorf("Revision = %d, %v; want 35902", got, ok)
	}
	if seen, err := LastSeen(v1); err != nil || !seen.Equal(tgt.LastSeen) {
		t.Errorf("LastSeen = %v, %v; want %v", seen, err, tgt.LastSeen)
	}
	v4, err := Marshal(tgt, rev)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("version 1 record: %d bytes; the same target in format 4: %d bytes", len(v1), len(v4))
	if len(v4) >= len(v1)/2 {
		t.Errorf("format 4 takes %d bytes, version 1 %d: want less than half", len(v4), len(v1))
	}
	back, rev4, err := Unmarshal(v4)
	if err != nil || rev4 != rev {
		t.Fatalf("Unmarshal(format 4) = rev %d, %v", rev4, err)
	}
	if d := cmp.Diff(tgt, back, exact); d != "" {
		t.Errorf("formats 1 and 4 decode differently (-v1 +v4):\n%s", d)
	}
}

// TestConditionsAsState: a decision stored with the state's conditions (equal instants in any
// zone) writes them once; other conditions are written out; either way they decode as given,
// into slices of their own.
func TestConditionsAsState(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 200; i++ {
		in := randomTarget(r)
		if in.LastDecision == nil || len(in.State.Conditions) == 0 {
			continue
		}
		same := i%2 == 0
		if same {
			in.LastDecision.Decision.Conditions = equalConditions(in.State.Conditions)
		}
		rec := toRecord(in)
		if got := rec.LastDecision.ConditionsAsState; got != (same || sameConditions(in)) {
			t.Fatalf("target %d: conditions_as_state = %v with conditions the same: %v", i, got, same)
		}
		if rec.LastDecision.ConditionsAsState && len(rec.LastDecision.Conditions) > 0 {
			t.Fatalf("target %d: conditions written twice", i)
		}
	}
	// Both at once is refused.
	in := storetest.FixtureTargets()[0]
	rec := toRecord(in)
	rec.LastDecision.ConditionsAsState = true
	rec.LastDecision.Conditions = new(msgs).conditions(in.State.Conditions)
	b, err := rec.MarshalVT()
	if err != nil {
		t.Fatal(err)
	}
	whole := append([]byte{formatProto, 0, 0, 0, 0, 0, 0, 0, 0}, b...)
	if _, _, err := Unmarshal(whole); err == nil || !strings.Contains(err.Error(), "both conditions and conditionsAsState") {
		t.Errorf("Unmarshal of a decision with both: %v", err)
	}
}

func sameConditions(t *store.Target) bool {
	a, b := t.LastDecision.Decision.Conditions, t.State.Conditions
	if len(a) == 0 || len(a) != len(b) {
		return false
	}
	for i := range a {
		if !sameCondition(a[i], b[i]) {
			return false
		}
	}
	return true
}

// TestDeterministic: a target's record is a function of the target, whatever the order Go
// gives its maps (label selectors of several labels).
func TestDeterministic(t *testing.T) {
	in := storetest.FixtureTargets()[0] // selectors with two labels
	first, err := Marshal(in, 7)
	if err != nil {
		t.Fatal(err)
	}
	for range 50 {
		b, err := Marshal(in, 7)
		if err != nil || !bytes.Equal(b, first) {
			t.Fatalf("a second Marshal of the same target gives other bytes (%v)", err)
		}
	}
}

// TestLastSeenOfFormat4: LastSeen reads what Unmarshal reads, zero time included.
func TestLastSeenOfFormat4(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for i := range 300 {
		in := randomTarget(r)
		b, err := Marshal(in, 0)
		if err != nil {
			t.Fatal(err)
		}
		seen, err := LastSeen(b)
		if err != nil || !seen.Equal(in.LastSeen) {
			t.Fatalf("target %d: LastSeen = %v, %v; want %v", i, seen, err, in.LastSeen)
		}
	}
}

// TestRefusesMalformedFormat4: a truncated or damaged record is an error, never a panic or a
// silently different target.
func TestRefusesMalformedFormat4(t *testing.T) {
	b, err := Marshal(storetest.FixtureTargets()[0], 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]byte{{formatProto}, b[:header-1], b[:len(b)-1], append(bytes.Clone(b[:header]), 0xff, 0xff)} {
		if _, _, err := Unmarshal(bad); err == nil {
			t.Errorf("Unmarshal(%.24q) succeeded", bad)
		}
	}
	over := bytes.Clone(b)
	over[8] = 0x80 // a revision above MaxInt64
	if _, _, err := Unmarshal(over); err == nil {
		t.Error("Unmarshal of a revision above MaxInt64 succeeded")
	}
	if _, ok := Revision(over); ok {
		t.Error("Revision of a revision above MaxInt64 is ok")
	}
}

// FuzzUnmarshal: any bytes, in any format's clothing, either fail to decode, with an error, or
// decode to a target whose record (format 4) decodes to the same target again; nothing panics.
func FuzzUnmarshal(f *testing.F) {
	for _, in := range []*store.Target{storetest.FixtureTargets()[0], {}, randomTarget(rand.New(rand.NewPCG(7, 8)))} {
		if b, err := Marshal(in, 9); err == nil {
			f.Add(b)
		}
	}
	for _, p := range []string{"testdata/record-v1.json", "testdata/format3/fixture-0.bin", "testdata/format3/fixture-3.bin"} {
		b, err := os.ReadFile(filepath.FromSlash(p))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, rev, err := Unmarshal(b)
		if err != nil {
			return
		}
		again, err := Marshal(got, rev)
		if err != nil {
			t.Fatalf("a decoded record does not encode: %v", err)
		}
		back, rev2, err := Unmarshal(again)
		if err != nil || rev2 != rev {
			t.Fatalf("re-encoded record does not decode: %v (revision %d, want %d)", err, rev2, rev)
		}
		if d := cmp.Diff(got, back, exact); d != "" {
			t.Fatalf("re-encoded record decodes differently:\n%s", d)
		}
		if seen, err := LastSeen(b); err != nil || !seen.Equal(got.LastSeen) {
			t.Fatalf("LastSeen = %v, %v; Unmarshal's %v", seen, err, got.LastSeen)
		}
	})
}

// TestMarshalNormalizedAfter: with or without a base whose spec encodes the same, the record and
// the normalized target are MarshalNormalized's; the spec is base's own exactly when the
// encodings are equal, and the returned spec encoding is the record's.
func TestMarshalNormalizedAfter(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for i := range 500 {
		in := randomTarget(r)
		_, base, err := MarshalNormalized(in)
		if err != nil {
			t.Fatal(err)
		}
		baseSpec, err := toRecord(in).Spec.MarshalVT()
		if err != nil {
			t.Fatal(err)
		}
		next := randomTarget(r)
		same := i%2 == 0
		if same {
			next.Spec = in.Spec // as a request carries it: the same spec again
		}
		wantU, want, err := MarshalNormalized(next)
		if err != nil {
			t.Fatal(err)
		}
		gotU, got, spec, err := MarshalNormalizedAfter(next, base, baseSpec)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(gotU.Bytes(), wantU.Bytes()) {
			t.Fatalf("target %d: the record differs from MarshalNormalized's", i)
		}
		if d := cmp.Diff(want, got, exact); d != "" {
			t.Fatalf("target %d: normalized target differs (-MarshalNormalized +After):\n%s", i, d)
		}
		if wantSpec, _ := toRecord(next).Spec.MarshalVT(); !bytes.Equal(spec, wantSpec) {
			t.Fatalf("target %d: returned spec encoding is not the record's", i)
		}
		shared := len(got.Spec.Metrics) > 0 && len(base.Spec.Metrics) > 0 && &got.Spec.Metrics[0] == &base.Spec.Metrics[0]
		if shared != (same && len(base.Spec.Metrics) > 0) {
			t.Fatalf("target %d: spec shared with base: %v, same spec: %v", i, shared, same)
		}
	}
}
