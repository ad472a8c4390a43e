package codec

import (
	"bytes"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/hpa-recommender/hpa-recommender/recommender"
	"github.com/hpa-recommender/hpa-recommender/store"
)

// filler sets every exported field of a value reachable from a store.Target to a random value,
// by reflection, so a field added to the domain types later is covered without editing the
// test. Empty and nil slices, maps and pointers are drawn too.
type filler struct{ r *rand.Rand }

var (
	timeType     = reflect.TypeFor[time.Time]()
	quantityType = reflect.TypeFor[resource.Quantity]()
	durationType = reflect.TypeFor[time.Duration]()
	quantities   = []string{"0", "1", "500m", "1.5", "0.1", "256Mi", "1Gi", "3k", "1e3", "12345678901234m", "-7", "0.000001"}
	strs         = []string{"", "a", "web", "cpu", "Pods", "héllo", "a/b", "x\ny", `"q"`, "<&>"}
	zones        = []*time.Location{time.UTC, time.FixedZone("east", 5*3600+1800), time.FixedZone("west", -7*3600)}
)

func (f filler) fill(v reflect.Value, depth int) {
	switch v.Type() {
	case timeType:
		var t time.Time
		switch f.r.IntN(4) {
		case 0: // zero
		case 1:
			t = time.Now() // with a monotonic reading
		default:
			t = time.Unix(f.r.Int64N(4e9), f.r.Int64N(1e9)).In(zones[f.r.IntN(len(zones))])
		}
		v.Set(reflect.ValueOf(t))
		return
	case quantityType:
		q := resource.MustParse(quantities[f.r.IntN(len(quantities))])
		if f.r.IntN(2) == 0 {
			q.Add(resource.MustParse("250m")) // arithmetic leaves another internal form
		}
		v.Set(reflect.ValueOf(q))
		return
	case durationType:
		v.SetInt(f.r.Int64N(1e12))
		return
	}
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(f.r.IntN(2) == 0)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(f.r.Int64N(2001) - 1000)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(f.r.Uint64N(2001))
	case reflect.Float64, reflect.Float32:
		switch f.r.IntN(6) {
		case 0:
			v.SetFloat(math.NaN())
		case 1:
			v.SetFloat(math.Inf(1 - 2*f.r.IntN(2)))
		default:
			v.SetFloat(f.r.NormFloat64() * 10)
		}
	case reflect.String:
		v.SetString(strs[f.r.IntN(len(strs))])
	case reflect.Pointer:
		if depth > 8 || f.r.IntN(3) == 0 {
			return
		}
		p := reflect.New(v.Type().Elem())
		f.fill(p.Elem(), depth+1)
		v.Set(p)
	case reflect.Slice:
		n := f.r.IntN(4) - 1 // -1: nil
		if n < 0 || depth > 8 {
			return
		}
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			f.fill(s.Index(i), depth+1)
		}
		v.Set(s)
	case reflect.Map:
		n := f.r.IntN(4) - 1
		if n < 0 || depth > 8 {
			return
		}
		m := reflect.MakeMapWithSize(v.Type(), n)
		for range n {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			f.fill(k, depth+1)
			f.fill(e, depth+1)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				f.fill(v.Field(i), depth+1)
			}
		}
	default:
		panic("filler: unhandled kind " + v.Kind().String() + " of " + v.Type().String())
	}
}

func randomTarget(r *rand.Rand) *store.Target {
	var t store.Target
	filler{r}.fill(reflect.ValueOf(&t).Elem(), 0)
	return &t
}

// exact compares as reflect.DeepEqual would, except that NaNs are equal and quantities are
// compared by their canonical form and value (they hold unexported caches).
var exact = cmp.Options{
	cmpopts.EquateNaNs(),
	cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 && a.String() == b.String() }),
}

// TestRoundTrip: for random targets covering every field, what Unmarshal returns encodes to
// the same bytes again (nothing is lost or changed on the way), carries the revision, keeps no
// empty slice or map that is not nil, gives the decision and the state conditions of their own,
// and shares nothing with the target encoded.
func TestRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		in := randomTarget(r)
		if in.Revision < 0 {
			in.Revision = -in.Revision
		}
		if in.LastDecision != nil {
			// Decisions whose conditions are the state's, which the record writes once.
			switch i % 3 {
			case 1:
				in.LastDecision.Decision.Conditions = in.State.Conditions
			case 2:
				in.LastDecision.Decision.Conditions = equalConditions(in.State.Conditions)
			}
		}
		b, err := Marshal(in, in.Revision)
		if err != nil {
			t.Fatalf("target %d: Marshal: %v", i, err)
		}
		got, rev, err := Unmarshal(b)
		if err != nil {
			t.Fatalf("target %d: Unmarshal: %v", i, err)
		}
		if rev != in.Revision || got.Revision != in.Revision {
			t.Fatalf("target %d: revision %d (target's %d), want %d", i, rev, got.Revision, in.Revision)
		}
		if again, err := Marshal(got, rev); err != nil || !bytes.Equal(again, b) {
			t.Fatalf("target %d: the decoded target encodes differently (%v)", i, err)
		}
		if emptyNotNil(got) {
			t.Fatalf("target %d: an empty slice or map decoded as non-nil", i)
		}
		if conditionsShared(got) {
			t.Fatalf("target %d: the decision and the state share their conditions", i)
		}
		// Shares nothing: scribbling over the input leaves the decoded target as it was.
		want, _, err := Unmarshal(b)
		if err != nil {
			t.Fatal(err)
		}
		filler{r}.fill(reflect.ValueOf(in).Elem(), 0)
		scribble(reflect.ValueOf(in).Elem())
		if d := cmp.Diff(want, got, exact); d != "" {
			t.Fatalf("target %d: the decoded target changed with its input:\n%s", i, d)
		}
	}
}

// equalConditions returns a copy of cs with the same instants in other zones: conditions that
// compare equal as the record sees them.
func equalConditions(cs []recommender.Condition) []recommender.Condition {
	out := slices.Clone(cs)
	for i := range out {
		out[i].LastTransitionTime = out[i].LastTransitionTime.In(zones[(i+1)%len(zones)])
	}
	return out
}

// conditionsShared reports whether changing t's state conditions in place changes its last
// decision's: decoding must give each its own.
func conditionsShared(t *store.Target) bool {
	if t.LastDecision == nil || len(t.State.Conditions) == 0 || len(t.LastDecision.Decision.Conditions) == 0 {
		return false
	}
	s, d := t.State.Conditions, t.LastDecision.Decision.Conditions
	old := s[0].Type
	s[0].Type = "changed " + old
	shared := d[0].Type == s[0].Type
	s[0].Type = old
	return shared
}

// emptyNotNil reports whether a slice or map reachable from v is empty but not nil.
func emptyNotNil(v any) bool {
	found := false
	var walk func(reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer:
			if !v.IsNil() && v.Type() != reflect.PointerTo(quantityType) {
				walk(v.Elem())
			}
		case reflect.Slice, reflect.Map:
			if !v.IsNil() && v.Len() == 0 {
				found = true
			}
			if v.Kind() == reflect.Slice {
				for i := range v.Len() {
					walk(v.Index(i))
				}
			}
		case reflect.Struct:
			if v.Type() == timeType || v.Type() == quantityType {
				return
			}
			for i := range v.NumField() {
				if v.Type().Field(i).IsExported() {
					walk(v.Field(i))
				}
			}
		}
	}
	walk(reflect.ValueOf(v))
	return found
}

// scribble overwrites, in place, every map entry and slice element and pointed-to value
// reachable from v, so that anything a copy still shared with it would change.
func scribble(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() && v.Type() != reflect.PointerTo(quantityType) {
			scribble(v.Elem())
		}
	case reflect.Slice:
		for i := range v.Len() {
			scribble(v.Index(i))
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			if v.Type().Elem().Kind() == reflect.String {
				v.SetMapIndex(k, reflect.ValueOf("scribbled").Convert(v.Type().Elem()))
			}
		}
	case reflect.Struct:
		if v.Type() == timeType || v.Type() == quantityType {
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				scribble(v.Field(i))
			}
		}
	case reflect.String:
		v.SetString("scribbled")
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(v.Int() + 1)
	}
}

// TestRevision: the revision written is the one read, and a negative one is refused.
func TestRevision(t *testing.T) {
	tgt := randomTarget(rand.New(rand.NewPCG(3, 4)))
	for _, rev := range []int64{0, 1, 9, 10, 123456789, math.MaxInt64} {
		b, err := Marshal(tgt, rev)
		if err != nil {
			t.Fatal(err)
		}
		if _, got, err := Unmarshal(b); err != nil || got != rev {
			t.Errorf("Unmarshal(Marshal(t, %d)) gives revision %d, %v", rev, got, err)
		}
	}
	if _, err := Marshal(tgt, -1); err == nil {
		t.Error("Marshal with revision -1 succeeded")
	}
}

// TestDecisionRoundTrip: a retired decision log entry, every field random, decodes to what was
// encoded (times as the same instant in UTC), and its size is what DecisionSize says.
func TestDecisionRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	sameInstant := cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })
	for i := range 500 {
		var in store.DecisionEntry
		filler{r}.fill(reflect.ValueOf(&in).Elem(), 0)
		b, err := MarshalDecision(&in)
		if err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		if int64(len(b)) != DecisionSize(&in) {
			t.Errorf("entry %d: %d bytes, DecisionSize says %d", i, len(b), DecisionSize(&in))
		}
		got, err := UnmarshalDecision(b)
		if err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		if d := cmp.Diff(in, got, exact, sameInstant, cmpopts.EquateEmpty()); d != "" {
			t.Fatalf("entry %d (-in +decoded):\n%s", i, d)
		}
		if got.Time.Location() != time.UTC || emptyNotNil(got) {
			t.Fatalf("entry %d: decoded time not in UTC, or an empty slice not nil", i)
		}
	}
	if _, err := UnmarshalDecision([]byte{9, 1}); err == nil {
		t.Error("UnmarshalDecision of another format succeeded")
	}
}
