package codec

import (
	"bytes"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/hpa-recommender/hpa-recommender/recommender"
	"github.com/hpa-recommender/hpa-recommender/store"
)

// recordV1File is a record of version 1 as the server stored it before version 2 (a benchmark
// target's, revision 35902): records stay stored in it until they are rewritten.
const recordV1File = "testdata/record-v1.json"

// marshalV1 encodes t as Marshal did before version 2: version 1, the decision's conditions
// always written out.
func marshalV1(t *store.Target, rev int64) ([]byte, error) {
	r := encRecord(t, rev)
	r.V = 1
	if ld := r.LastDecision; ld != nil && ld.ConditionsAsState {
		ld.Conditions, ld.ConditionsAsState = r.State.Conditions, false
	}
	return encodeRecord(&r)
}

// TestConditionsAsState: Marshal writes a decision's conditions as conditionsAsState exactly
// when they are not empty and encode as the state's, the record is then shorter by them, and
// either way it decodes to what the version 1 record of the same target decodes to, with the
// decision's conditions apart from the state's.
func TestConditionsAsState(t *testing.T) {
	type test struct {
		name   string
		set    func(*store.Target) // from benchTarget, whose decision holds the state's conditions
		marker bool
	}
	tests := []test{
		{name: "the same slice", set: func(*store.Target) {}, marker: true},
		{name: "equal copies, the same instants in other zones", set: func(t *store.Target) {
			t.LastDecision.Decision.Conditions = equalConditions(t.State.Conditions)
		}, marker: true},
		{name: "equal with monotonic readings", set: func(t *store.Target) {
			now := time.Now()
			for _, cs := range [][]recommender.Condition{t.State.Conditions, t.LastDecision.Decision.Conditions} {
				for i := range cs {
					cs[i].LastTransitionTime = now.Add(time.Duration(i))
				}
			}
		}, marker: true},
		{name: "fewer", set: func(t *store.Target) {
			t.LastDecision.Decision.Conditions = t.State.Conditions[:3]
		}},
		{name: "another order", set: func(t *store.Target) {
			cs := equalConditions(t.State.Conditions)
			cs[0], cs[1] = cs[1], cs[0]
			t.LastDecision.Decision.Conditions = cs
		}},
		{name: "decision without conditions", set: func(t *store.Target) { t.LastDecision.Decision.Conditions = nil }},
		{name: "state without conditions", set: func(t *store.Target) {
			t.LastDecision.Decision.Conditions = equalConditions(t.State.Conditions)
			t.State.Conditions = nil
		}},
		{name: "neither with conditions", set: func(t *store.Target) {
			t.State.Conditions, t.LastDecision.Decision.Conditions = nil, []recommender.Condition{}
		}},
	}
	// One field of one condition differs, for every field, found by reflection so that a field
	// added to Condition is covered.
	ct := reflect.TypeFor[recommender.Condition]()
	for f := range ct.NumField() {
		tests = append(tests, test{name: "differs in " + ct.Field(f).Name, set: func(t *store.Target) {
			cs := equalConditions(t.State.Conditions)
			v := reflect.ValueOf(&cs[2]).Elem().Field(f)
			switch x := v.Interface().(type) {
			case string:
				v.SetString(x + "!")
			case time.Time:
				v.Set(reflect.ValueOf(x.Add(time.Nanosecond)))
			default:
				panic(fmt.Sprintf("no change for a %T", x))
			}
			t.LastDecision.Decision.Conditions = cs
		}})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := benchTarget()
			tt.set(in)
			b, err := Marshal(in, 42)
			if err != nil {
				t.Fatal(err)
			}
			v1, err := marshalV1(in, 42)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(b, []byte(`{"v":2,"rev":42,`)) {
				t.Fatalf("Marshal wrote %.30q..., want version 2", b)
			}
			if got := bytes.Contains(b, []byte(`"conditionsAsState":true`)); got != tt.marker {
				t.Fatalf("conditionsAsState written: %v, want %v\n%s", got, tt.marker, b)
			}
			r := encRecord(in, 42)
			stateConds, err := json.Marshal(r.State.Conditions)
			if err != nil {
				t.Fatal(err)
			}
			if tt.marker {
				if len(b) >= len(v1) {
					t.Errorf("version 2 record is %d bytes, the version 1 one %d", len(b), len(v1))
				}
				if n, n1 := bytes.Count(b, stateConds), bytes.Count(v1, stateConds); n != 1 || n1 != 2 {
					t.Errorf("the conditions are written %d times in version 2, %d in version 1; want 1 and 2", n, n1)
				}
			} else if !bytes.Equal(b[len(`{"v":2`):], v1[len(`{"v":1`):]) {
				t.Errorf("version 2 record differs from the version 1 one in more than the version:\n%s\n%s", b, v1)
			}

			if !checkAgainstSlow(t, "version 2", b) || !checkAgainstSlow(t, "version 1", v1) {
				t.Fatal("the fast path gave up on a record Marshal wrote")
			}
			got, rev, err := Unmarshal(b)
			if err != nil || rev != 42 {
				t.Fatalf("Unmarshal: revision %d, %v", rev, err)
			}
			want, _, err := Unmarshal(v1)
			if err != nil {
				t.Fatal(err)
			}
			if !sameTarget(got, want) {
				t.Fatalf("versions 2 and 1 decode differently (-v1 +v2):\n%s", cmp.Diff(want, got, deepEqual))
			}
			// The input's conditions come back (times as the same instants, empty as nil).
			if d := cmp.Diff(in.LastDecision.Decision.Conditions, got.LastDecision.Decision.Conditions, cmpopts.EquateEmpty()); d != "" {
				t.Errorf("decision's conditions (-in +decoded):\n%s", d)
			}
			if d := cmp.Diff(in.State.Conditions, got.State.Conditions, cmpopts.EquateEmpty()); d != "" {
				t.Errorf("state's conditions (-in +decoded):\n%s", d)
			}

			u, norm, _, err := MarshalNormalized(in)
			if err != nil {
				t.Fatal(err)
			}
			if plain, _ := Marshal(in, 0); !bytes.Equal(u.Bytes(), plain) {
				t.Errorf("MarshalNormalized wrote\n%s\nMarshal(t, 0)\n%s", u.Bytes(), plain)
			}
			n, err := Normalize(in)
			if err != nil {
				t.Fatal(err)
			}
			slow, _, err := unmarshalSlow(b)
			if err != nil {
				t.Fatal(err)
			}
			norm.Revision, n.Revision = 42, 42
			for what, x := range map[string]*store.Target{"Unmarshal": got, "unmarshalSlow": slow, "Normalize": n, "MarshalNormalized": norm} {
				if d := cmp.Diff(want, x, exact); d != "" {
					t.Errorf("%s differs from the version 1 round trip:\n%s", what, d)
				}
				if conditionsShared(x) {
					t.Errorf("%s: the decision's conditions share the state's", what)
				}
			}
		})
	}
}

// TestConditionsApart: the conditions decoded for conditionsAsState are the decision's own:
// changing, appending to or truncating the state's leaves them as they were.
func TestConditionsApart(t *testing.T) {
	b, err := Marshal(benchTarget(), 1)
	if err != nil {
		t.Fatal(err)
	}
	decoders := map[string]func() *store.Target{
		"Unmarshal": func() *store.Target {
			if _, ok := decodeFast(b); !ok {
				t.Fatal("the fast path gave up")
			}
			tgt, _, err := Unmarshal(b)
			if err != nil {
				t.Fatal(err)
			}
			return tgt
		},
		"unmarshalSlow": func() *store.Target {
			tgt, _, err := unmarshalSlow(b)
			if err != nil {
				t.Fatal(err)
			}
			return tgt
		},
		"Normalize": func() *store.Target {
			tgt, err := Normalize(benchTarget())
			if err != nil {
				t.Fatal(err)
			}
			return tgt
		},
		"MarshalNormalized": func() *store.Target {
			_, tgt, _, err := MarshalNormalized(benchTarget())
			if err != nil {
				t.Fatal(err)
			}
			return tgt
		},
	}
	for name, decode := range decoders {
		tgt := decode()
		want := slices.Clone(tgt.LastDecision.Decision.Conditions)
		s := &tgt.State.Conditions
		for i := range *s {
			(*s)[i].Message += " (changed)"
			(*s)[i].LastTransitionTime = (*s)[i].LastTransitionTime.Add(time.Hour)
		}
		*s = append((*s)[:2], recommender.Condition{Type: "Appended"}, recommender.Condition{Type: "Appended too"})
		if d := cmp.Diff(want, tgt.LastDecision.Decision.Conditions); d != "" {
			t.Errorf("%s: the decision's conditions changed with the state's:\n%s", name, d)
		}
	}
}

// markerCases are records with conditionsAsState in forms Marshal does not write, and the
// rule each is decoded by: refused (err), or decoded with the decision's conditions wantConds.
// slow: the fast path must leave it to the slow path, which decides.
var markerCases = func() []struct {
	name      string
	b         string
	slow      bool
	err       string
	wantConds []recommender.Condition
} {
	const state = `"state":{"history":{},"conditions":[{"type":"A","status":"True","lastTransitionTime":"2026-01-01T00:00:00Z"}]}`
	rec := func(v int, state, decision string) string {
		return fmt.Sprintf(`{"v":%d,"key":{"cluster":"c","namespace":"n","name":"x"},"spec":{"scaleTargetRef":{},"maxReplicas":1},%s,"lastDecision":{"time":"2026-01-01T00:00:00Z","currentReplicas":1,"desiredReplicas":1,%s"explanation":{"winningMetric":0,"proposal":1,"stabilized":1,"limited":1,"final":1}},"lastSeen":"2026-01-01T00:00:00Z"}`,
			v, state, decision)
	}
	a := []recommender.Condition{{Type: "A", Status: "True", LastTransitionTime: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}}
	b := []recommender.Condition{{Type: "B", Status: "False", LastTransitionTime: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}}
	const condsB = `"conditions":[{"type":"B","status":"False","lastTransitionTime":"2026-01-01T00:00:00Z"}],`
	type c = struct {
		name      string
		b         string
		slow      bool
		err       string
		wantConds []recommender.Condition
	}
	return []c{
		{name: "as Marshal writes it", b: rec(2, state, `"conditionsAsState":true,`), wantConds: a},
		{name: "the state without conditions", b: rec(2, `"state":{"history":{}}`, `"conditionsAsState":true,`)},
		{name: "version 1 as Marshal wrote it", b: rec(1, state, condsB), wantConds: b},
		{name: "both", b: rec(2, state, condsB+`"conditionsAsState":true,`), slow: true, err: "both conditions and conditionsAsState"},
		{name: "both, marker first", b: rec(2, state, `"conditionsAsState":true,`+condsB), slow: true, err: "both conditions and conditionsAsState"},
		{name: "false", b: rec(2, state, `"conditionsAsState":false,`), slow: true},
		{name: "false with conditions", b: rec(2, state, condsB+`"conditionsAsState":false,`), slow: true, wantConds: b},
		{name: "empty conditions", b: rec(2, state, `"conditions":[],"conditionsAsState":true,`), slow: true, wantConds: a},
		{name: "in version 1", b: rec(1, state, `"conditionsAsState":true,`), slow: true, err: "conditionsAsState in a record of version 1"},
		{name: "false in version 1", b: rec(1, state, condsB+`"conditionsAsState":false,`), slow: true, wantConds: b},
		{name: "after the explanation", b: strings.Replace(rec(2, state, ""), `"final":1}`, `"final":1},"conditionsAsState":true`, 1), slow: true, wantConds: a},
		{name: "another case", b: rec(2, state, `"ConditionsAsState":true,`), slow: true, wantConds: a},
		{name: "twice", b: rec(2, state, `"conditionsAsState":true,"conditionsAsState":true,`), slow: true, wantConds: a},
		{name: "a number", b: rec(2, state, `"conditionsAsState":1,`), slow: true, err: "decode target record"},
		{name: "a string", b: rec(2, state, `"conditionsAsState":"true",`), slow: true, err: "decode target record"},
		{name: "null", b: rec(2, state, `"conditionsAsState":null,`), slow: true},
	}
}()

// TestConditionsAsStateOddCases pins the rule for conditionsAsState in forms Marshal does not
// write: with conditions too, or in a version 1 record, the record is refused; false is the
// same as its absence; anywhere and in any case (json-iterator matches names so) true stands
// for the state's conditions. Fast and slow paths agree (TestUnmarshalNonCanonical).
func TestConditionsAsStateOddCases(t *testing.T) {
	for _, tc := range markerCases {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := Unmarshal([]byte(tc.b))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Unmarshal: %v, want an error mentioning %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Unmarshal: %v", err)
			}
			if d := cmp.Diff(tc.wantConds, got.LastDecision.Decision.Conditions); d != "" {
				t.Errorf("decision's conditions (-want +got):\n%s", d)
			}
			if conditionsShared(got) {
				t.Error("the decision's conditions share the state's")
			}
		})
	}
}

// TestRecordVersion1StillReads: a record an older binary stored decodes, on the fast path,
// to the target it was written from (written again as version 1 it is the same bytes), and
// Revision, Revise and LastSeen read it; written again now it is version 2, shorter.
func TestRecordVersion1StillReads(t *testing.T) {
	v1, err := os.ReadFile(recordV1File)
	if err != nil {
		t.Fatal(err)
	}
	if !checkAgainstSlow(t, recordV1File, v1) {
		t.Fatal("the fast path gave up on a version 1 record")
	}
	tgt, rev, err := Unmarshal(v1)
	if err != nil {
		t.Fatal(err)
	}
	if rev != 35902 || tgt.Key != (store.Key{Cluster: "bench", Namespace: "bench", Name: "bench-239"}) ||
		len(tgt.State.Conditions) != 4 || tgt.LastDecision == nil || len(tgt.State.History.Recommendations) != 10 {
		t.Fatalf("decoded revision %d, key %v, %d conditions, decision %v", rev, tgt.Key, len(tgt.State.Conditions), tgt.LastDecision != nil)
	}
	if d := cmp.Diff(tgt.State.Conditions, tgt.LastDecision.Decision.Conditions); d != "" {
		t.Errorf("the stored decision's conditions are not the state's:\n%s", d)
	}
	again, err := marshalV1(tgt, rev)
	if err != nil || !bytes.Equal(again, v1) {
		t.Fatalf("written again as version 1 (%v):\n%s\nstored:\n%s", err, again, v1)
	}

	if got, ok := Revision(v1); !ok || got != 35902 {
		t.Errorf("Revision = %d, %v; want 35902", got, ok)
	}
	if seen, err := LastSeen(v1); err != nil || !seen.Equal(tgt.LastSeen) {
		t.Errorf("LastSeen = %v, %v; want %v", seen, err, tgt.LastSeen)
	}
	u := unrevised(bytes.Replace(v1, []byte(`"rev":35902,`), nil, 1))
	revised, err := u.Revise(35903)
	if want := bytes.Replace(v1, []byte(`"rev":35902,`), []byte(`"rev":35903,`), 1); err != nil || !bytes.Equal(revised, want) {
		t.Errorf("Revise(35903) of the record without its revision (%v):\n%s\nwant\n%s", err, revised, want)
	}

	v2, err := Marshal(tgt, rev)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(v2, []byte(`{"v":2,"rev":35902,`)) || !bytes.Contains(v2, []byte(`"conditionsAsState":true`)) || len(v2) >= len(v1) {
		t.Fatalf("written again: %d bytes (version 1: %d), want a shorter version 2 record with conditionsAsState:\n%s", len(v2), len(v1), v2)
	}
	t.Logf("version 1 record: %d bytes; the same target in version 2: %d bytes", len(v1), len(v2))
	back, _, err := Unmarshal(v2)
	if err != nil {
		t.Fatal(err)
	}
	if !sameTarget(back, tgt) {
		t.Errorf("versions 2 and 1 decode differently (-v1 +v2):\n%s", cmp.Diff(tgt, back, deepEqual))
	}
}
