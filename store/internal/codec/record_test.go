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

// TestFormat3Upgrades: records of format 3 that release 17d0253 wrote for the first fixture
// targets (testdata/format3/fixture-N.bin, revision 100+N) upgrade to those targets, their
// revision kept.
func TestFormat3Upgrades(t *testing.T) {
	for i, want := range storetest.FixtureTargets()[:6] {
		b, err := os.ReadFile(fmt.Sprintf("testdata/format3/fixture-%d.bin", i))
		if err != nil {
			t.Fatal(err)
		}
		up, upgraded, err := Upgrade(b)
		if err != nil || !upgraded {
			t.Fatalf("fixture %d: Upgrade = %v, %v", i, upgraded, err)
		}
		got, rev, err := Unmarshal(up)
		if err != nil {
			t.Fatalf("fixture %d: %v", i, err)
		}
		norm := roundTrip(t, want, int64(100+i))
		if rev != norm.Revision {
			t.Errorf("fixture %d: revision %d, want %d", i, rev, norm.Revision)
		}
		if d := cmp.Diff(norm, got, exact); d != "" {
			t.Errorf("fixture %d (-want +got):\n%s", i, d)
		}
		if seen, err := LastSeen(up); err != nil || !seen.Equal(want.LastSeen) {
			t.Errorf("fixture %d: LastSeen = %v, %v; want %v", i, seen, err, want.LastSeen)
		}
	}
}

// TestVersion1Upgrades: a JSON record of version 1 that an older binary stored upgrades, its
// revision kept, to a record of format 4 that is less than half its size.
func TestVersion1Upgrades(t *testing.T) {
	v1, err := os.ReadFile("testdata/record-v1.json")
	if err != nil {
		t.Fatal(err)
	}
	v4, upgraded, err := Upgrade(v1)
	if err != nil || !upgraded {
		t.Fatalf("Upgrade = %v, %v", upgraded, err)
	}
	tgt, rev, err := Unmarshal(v4)
	if err != nil {
		t.Fatal(err)
	}
	if rev != 35902 || tgt.Key != (store.Key{Cluster: "bench", Namespace: "bench", Name: "bench-239"}) ||
		len(tgt.State.Conditions) != 4 || tgt.LastDecision == nil || len(tgt.State.History.Recommendations) != 10 {
		t.Fatalf("decoded revision %d, key %v, %d conditions, decision %v", rev, tgt.Key, len(tgt.State.Conditions), tgt.LastDecision != nil)
	}
	if seen, err := LastSeen(v4); err != nil || !seen.Equal(tgt.LastSeen) {
		t.Errorf("LastSeen = %v, %v; want %v", seen, err, tgt.LastSeen)
	}
	t.Logf("version 1 record: %d bytes; the same target in format 4: %d bytes", len(v1), len(v4))
	if len(v4) >= len(v1)/2 {
		t.Errorf("format 4 takes %d bytes, version 1 %d: want less than half", len(v4), len(v1))
	}
}

// roundTrip returns what storing t with revision rev gives back.
func roundTrip(t *testing.T, in *store.Target, rev int64) *store.Target {
	t.Helper()
	b, err := Marshal(in, rev)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := Unmarshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return out
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
	rec.LastDecision.Conditions = toConditions(in.State.Conditions)
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
}

// FuzzUpgradeAndUnmarshal: any bytes, in any format's clothing, either fail to upgrade or decode,
// with an error, or decode to a target whose record decodes to the same target again; nothing
// panics.
func FuzzUpgradeAndUnmarshal(f *testing.F) {
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
	f.Fuzz(func(t *testing.T, raw []byte) {
		b, _, err := Upgrade(raw)
		if err != nil {
			return
		}
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
