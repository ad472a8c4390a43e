package codec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hpa-recommender/hpa-recommender/recommender"
	"github.com/hpa-recommender/hpa-recommender/store"
)

// coveringTarget is the i-th target of a test that runs len(specs)+1 targets and more: a random
// target with each seed spec, then the benchmarks' target, then random targets. Random targets
// leave out what lies deep (label selectors), which the seed specs and the benchmarks' target
// hold.
func coveringTarget(r *rand.Rand, specs []*recommender.Spec, i int) *store.Target {
	in := randomTarget(r)
	switch {
	case i < len(specs):
		in.Spec = *deepCopy(specs[i])
	case i == len(specs):
		in = benchTarget()
	}
	return in
}

// TestBinaryIsTheRoundTrip: for random targets covering every field, a binary record decodes to
// exactly what Normalize gives (what a JSON record decodes to: the formats hold the same
// records), with its revision and lastSeen readable from its header alone, and Revise writes
// the revision Marshal would.
func TestBinaryIsTheRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	specs := seedSpecs(t)
	for i := range 2000 + len(specs) + 1 {
		in := coveringTarget(r, specs, i)
		in.Revision = max(in.Revision, -in.Revision, 1)
		if in.LastDecision != nil && i%3 == 1 {
			in.LastDecision.Decision.Conditions = equalConditions(in.State.Conditions)
		}
		b, err := Binary.Marshal(in, in.Revision)
		if err != nil {
			t.Fatalf("target %d: Marshal: %v", i, err)
		}
		got, rev, err := Unmarshal(b)
		if err != nil {
			t.Fatalf("target %d: Unmarshal: %v", i, err)
		}
		want, err := Normalize(in)
		if err != nil {
			t.Fatalf("target %d: Normalize: %v", i, err)
		}
		if d := cmp.Diff(want, got, exact); d != "" || rev != in.Revision {
			t.Fatalf("target %d: revision %d (want %d), binary round trip differs from Normalize:\n%s", i, rev, in.Revision, d)
		}
		if !reflect.DeepEqual(nilness(want), nilness(got)) {
			t.Fatalf("target %d: nil and empty differ between the binary round trip and Normalize", i)
		}
		if conditionsShared(got) {
			t.Fatalf("target %d: the decision and the state share their conditions", i)
		}
		if r, ok := Revision(b); !ok || r != in.Revision {
			t.Fatalf("target %d: Revision = %d, %v; want %d", i, r, ok, in.Revision)
		}
		if seen, err := LastSeen(b); err != nil || !seen.Equal(want.LastSeen) {
			t.Fatalf("target %d: LastSeen = %v, %v; want %v", i, seen, err, want.LastSeen)
		}
		u, norm, _, err := Binary.MarshalNormalized(in)
		if err != nil {
			t.Fatalf("target %d: MarshalNormalized: %v", i, err)
		}
		if d := cmp.Diff(want, norm, exact); d != "" {
			t.Fatalf("target %d: MarshalNormalized's target differs:\n%s", i, d)
		}
		if revised, err := u.Revise(in.Revision); err != nil || !bytes.Equal(revised, b) {
			t.Fatalf("target %d: Revise gave another record than Marshal (%v)", i, err)
		}
		// Never aliases its input.
		for j := range b {
			b[j] = 0xff
		}
		if d := cmp.Diff(want, got, exact); d != "" {
			t.Fatalf("target %d: the decoded target changed with its input:\n%s", i, d)
		}
	}
}

// TestBinaryIsSmaller: the record the benchmarks write takes well under half its JSON.
func TestBinaryIsSmaller(t *testing.T) {
	in := benchTarget()
	j, err := JSON.Marshal(in, 1)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Binary.Marshal(in, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(b)*2 > len(j) {
		t.Errorf("binary record %d B, JSON %d B: want under half", len(b), len(j))
	}
	t.Logf("binary %d B, JSON %d B", len(b), len(j))
}

// TestBinaryRefusesWhatJSONRefuses: a time RFC 3339 cannot hold fails both formats alike.
func TestBinaryRefusesWhatJSONRefuses(t *testing.T) {
	in := &store.Target{LastSeen: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}
	if _, err := JSON.Marshal(in, 1); err == nil {
		t.Fatal("JSON took the year 10000")
	}
	if _, err := Binary.Marshal(in, 1); err == nil {
		t.Error("Binary took the year 10000")
	}
	in = &store.Target{}
	in.State.History.Recommendations = []recommender.Recommendation{{Time: time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)}}
	if _, err := Binary.Marshal(in, 1); !errors.Is(err, errBinaryTime) {
		t.Errorf("Binary took the year -1: %v", err)
	}
}

// TestBinaryRevision: Revision reads a binary record's header; Revise refuses a record that
// has a revision already, and a revision of 0.
func TestBinaryRevision(t *testing.T) {
	in := benchTarget()
	for _, rev := range []int64{1, 300, math.MaxInt64} {
		b, err := Binary.Marshal(in, rev)
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := Revision(b); !ok || got != rev {
			t.Errorf("Revision = %d, %v; want %d", got, ok, rev)
		}
	}
	none, err := Binary.Marshal(in, 0)
	if err != nil {
		t.Fatal(err)
	}
	huge := bytes.Clone(none)
	binary.LittleEndian.PutUint64(huge[1:], math.MaxUint64)
	for _, b := range [][]byte{none, none[:5], huge} {
		if got, ok := Revision(b); ok {
			t.Errorf("Revision(%.12q) = %d, want not ok", b, got)
		}
	}
	withRev, err := Binary.Marshal(in, 3)
	if err != nil {
		t.Fatal(err)
	}
	withRevU := unrevised(withRev)
	if _, err := withRevU.Revise(4); err == nil {
		t.Error("Revise of a record with a revision succeeded")
	}
	u, err := Binary.MarshalUnrevised(in)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := u.Revise(0); err == nil {
		t.Error("Revise(0) succeeded")
	}
}

// FuzzUnmarshalBinary: any bytes that open as a binary record either fail to decode, with an
// error, or decode to a target whose binary record decodes to the same target again; nothing
// panics.
func FuzzUnmarshalBinary(f *testing.F) {
	for _, in := range []*store.Target{benchTarget(), {}, randomTarget(rand.New(rand.NewPCG(7, 8)))} {
		if b, err := Binary.Marshal(in, 9); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte{binaryMagic})
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 {
			return
		}
		b[0] = binaryMagic
		got, rev, err := Unmarshal(b)
		if err != nil {
			return
		}
		again, err := Binary.Marshal(got, rev)
		if err != nil {
			return // a time the record holds but an encoder refuses: years beyond 9999
		}
		back, rev2, err := Unmarshal(again)
		if err != nil || rev2 != rev {
			t.Fatalf("re-encoded record does not decode: %v (revision %d, want %d)", err, rev2, rev)
		}
		if d := cmp.Diff(got, back, exact); d != "" {
			t.Fatalf("re-encoded record decodes differently:\n%s", d)
		}
	})
}

// TestBinarySpecSection: the spec is read within its section and nowhere else. A section
// declared longer than its spec, shorter (the spec's last bytes then lie outside it), or longer
// than the record is refused, each with its own error.
func TestBinarySpecSection(t *testing.T) {
	rec, err := Binary.Marshal(benchTarget(), 7)
	if err != nil {
		t.Fatal(err)
	}
	// The section's length sits after the header and the key's three strings.
	d := binDecoder{b: rec, text: string(rec), off: binaryHeader}
	d.str()
	d.str()
	d.str()
	at := d.off
	n := binary.LittleEndian.Uint32(rec[at:])
	edit := func(length uint32, insert bool) []byte {
		out := bytes.Clone(rec)
		binary.LittleEndian.PutUint32(out[at:], length)
		if insert { // one byte more at the section's end
			end := at + 4 + int(n)
			out = append(out[:end:end], append([]byte{0}, rec[end:]...)...)
		}
		return out
	}
	for _, c := range []struct {
		name string
		rec  []byte
		want string
	}{
		{"longer than its spec", edit(n+1, true), "spec section longer than its spec"},
		{"shorter than its spec", edit(n-1, false), "malformed binary record"},
		{"longer than the record", edit(uint32(len(rec)), false), "spec section longer than the record"},
	} {
		if _, _, err := Unmarshal(c.rec); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Unmarshal error %v, want one saying %q", c.name, err, c.want)
		}
	}
	if _, _, err := Unmarshal(edit(n, false)); err != nil {
		t.Fatalf("the record unchanged: %v", err)
	}
}
