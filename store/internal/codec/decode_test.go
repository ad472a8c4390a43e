package codec

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/hpa-recommender/hpa-recommender/recommender"
	"github.com/hpa-recommender/hpa-recommender/store"
)

// The fast decoder is checked against unmarshalSlow, the json-iterator decoding it shortcuts,
// which is the oracle: for any input, Unmarshal must give what unmarshalSlow gives.
//
// Results are compared with reflect.DeepEqual, the strictest comparison there is: it sees a
// time's location (UTC is a nil pointer, time.Local and a FixedZone are not), a quantity's
// internal form and cached string, and nil versus empty slices and maps. Its one departure
// from what is wanted is NaN, never equal to itself, and usage ratios may be NaN: sameTarget
// zeroes the ratios that are NaN in both targets before comparing.

// sameTarget reports whether a and b are deeply equal, NaN ratios included. It may zero NaN
// ratios of a and b.
func sameTarget(a, b *store.Target) bool {
	if a != nil && b != nil && a.LastDecision != nil && b.LastDecision != nil {
		am, bm := a.LastDecision.Decision.Explanation.Metrics, b.LastDecision.Decision.Explanation.Metrics
		for i := range min(len(am), len(bm)) {
			if math.IsNaN(am[i].UsageRatio) && math.IsNaN(bm[i].UsageRatio) {
				am[i].UsageRatio, bm[i].UsageRatio = 0, 0
			}
		}
	}
	return reflect.DeepEqual(a, b)
}

// deepEqual makes cmp.Diff, which tells where targets differ, compare as sameTarget does:
// times and quantities by reflect.DeepEqual rather than by their Equal methods.
var deepEqual = cmp.Options{
	cmpopts.EquateNaNs(),
	cmp.Comparer(func(a, b time.Time) bool { return reflect.DeepEqual(a, b) }),
	cmp.Comparer(func(a, b resource.Quantity) bool { return reflect.DeepEqual(a, b) }),
}

// checkAgainstSlow decodes b with Unmarshal and with the oracle and fails t unless both give
// the same target, revision and error (or none), and unless the result Unmarshal gave stays
// the same when b is overwritten afterwards: it must not alias its input. It reports whether
// the fast path decoded b.
func checkAgainstSlow(t *testing.T, what string, b []byte) (fast bool) {
	t.Helper()
	want, wantRev, wantErr := unmarshalSlow(bytes.Clone(b))

	in := bytes.Clone(b)
	_, fast = decodeFast(bytes.Clone(b))
	got, rev, err := Unmarshal(in)
	switch {
	case (err == nil) != (wantErr == nil):
		t.Fatalf("%s: Unmarshal error %v, the slow path's %v (fast path: %v)\n%q", what, err, wantErr, fast, b)
	case err != nil && err.Error() != wantErr.Error():
		t.Fatalf("%s: Unmarshal error %q, the slow path's %q\n%q", what, err, wantErr, b)
	case err != nil && fast:
		t.Fatalf("%s: the fast path decoded a record the slow path refuses (%v)\n%q", what, wantErr, b)
	case rev != wantRev:
		t.Fatalf("%s: revision %d, the slow path's %d\n%q", what, rev, wantRev, b)
	}
	if err != nil {
		return false
	}
	diff := func() string { return cmp.Diff(want, got, deepEqual) }
	if !sameTarget(got, want) {
		t.Fatalf("%s: Unmarshal and the slow path differ (fast path: %v; -slow +Unmarshal):\n%s\n%q", what, fast, diff(), b)
	}
	// Overwrite the input, and the pooled scratch of the fast path with other records.
	for i := range in {
		in[i] = '#'
	}
	for range 2 {
		if _, ok := decodeFast(otherRecord); !ok {
			t.Fatal("the fast path gave up on the benchmark's record")
		}
	}
	if !sameTarget(got, want) {
		t.Fatalf("%s: Unmarshal's result changed with its input or a later decoding (-slow +Unmarshal):\n%s", what, diff())
	}
	return fast
}

// otherRecord is decoded after each comparison, to overwrite what a pooled decoder holds.
var otherRecord = func() []byte {
	t := benchTarget()
	hashes := strings.Repeat("#", 4096)
	t.Key = store.Key{Cluster: hashes, Namespace: hashes, Name: hashes}
	b, err := Marshal(t, 7)
	if err != nil {
		panic(err)
	}
	return b
}()

// canonicalRecords are records as Marshal writes them, or as an older binary wrote them in
// version 1, each decodable: the benchmark's target, a stored version 1 record, random targets
// covering every field (half of them with a decision whose conditions are the state's), and
// random records (see recordFiller) full of what targets rarely hold (every escape, invalid
// UTF-8, extreme numbers, every kind of ratio, labels that decode alike) made decodable:
// version 2 or 1, conditionsAsState only as Marshal writes it, times in UTC as Marshal writes
// them, valid quantities.
func canonicalRecords(t testing.TB, n int) [][]byte {
	var out [][]byte
	add := func(b []byte, err error) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	add(Marshal(benchTarget(), 42))
	add(Marshal(&store.Target{}, 0))
	add(os.ReadFile(recordV1File))
	add(marshalV1(benchTarget(), 42))
	rnd := rand.New(rand.NewPCG(7, 8))
	for i := range n {
		tgt := randomTarget(rnd)
		if i%2 == 0 && tgt.LastDecision != nil {
			tgt.LastDecision.Decision.Conditions = equalConditions(tgt.State.Conditions)
		}
		add(Marshal(tgt, []int64{0, tgt.Revision, 1, math.MaxInt64}[rnd.IntN(4)]))
	}
	records := edgeRecords()
	for range n {
		var r recordV1
		recordFiller{rnd}.fill(reflect.ValueOf(&r).Elem())
		records = append(records, r)
	}
	for i, r := range records {
		decodable(rnd, reflect.ValueOf(&r).Elem())
		r.V = []int{RecordVersion, 1}[i%2]
		if ld := r.LastDecision; ld != nil && ld.ConditionsAsState {
			if r.V < 2 {
				ld.ConditionsAsState = false
			} else {
				ld.Conditions = nil
			}
		}
		if b, err := encodeRecord(&r); err == nil { // skip times RFC 3339 cannot represent
			out = append(out, b)
		}
	}
	return out
}

// decodable sets the times reachable from v in UTC without a monotonic reading, as Marshal
// writes them (other zones take the slow path), and its quantity strings to valid quantities.
func decodable(rnd *rand.Rand, v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			decodable(rnd, v.Elem())
		}
	case reflect.Slice:
		for i := range v.Len() {
			decodable(rnd, v.Index(i))
		}
	case reflect.Struct:
		if v.Type() == timeType {
			v.Set(reflect.ValueOf(utc(v.Interface().(time.Time))))
			return
		}
		for i := range v.NumField() {
			f := v.Field(i)
			switch v.Type().Field(i).Name {
			case "Value", "AverageValue", "Tolerance":
				if f.Kind() == reflect.Pointer && !f.IsNil() {
					q := quantities[rnd.IntN(len(quantities))]
					f.Set(reflect.ValueOf(&q))
					continue
				}
			}
			decodable(rnd, f)
		}
	}
}

// TestDecodeFastTakesCanonicalRecords: every record Marshal writes takes the fast path, so
// that the fallback cannot hide a fast path that gave up, and decodes as the slow path does.
func TestDecodeFastTakesCanonicalRecords(t *testing.T) {
	recs := canonicalRecords(t, 1000)
	for i, b := range recs {
		if !checkAgainstSlow(t, fmt.Sprintf("record %d", i), b) {
			t.Fatalf("record %d: the fast path gave up on a record Marshal wrote:\n%q", i, b)
		}
	}
	if len(recs) < 1400 {
		t.Fatalf("only %d records; tune recordFiller", len(recs))
	}
}

// nonCanonical are records in forms Marshal does not write, or that the slow path refuses:
// each must decode (or fail) exactly as the slow path does, and the ones marked slow must
// not take the fast path.
var nonCanonical = []struct {
	b    string
	slow bool // the fast path must give up
}{
	{`{"v":1,"key":{"cluster":"c","namespace":"n","name":"x"},"spec":{"scaleTargetRef":{},"maxReplicas":1},"state":{"history":{}},"lastSeen":"2026-01-01T00:00:00Z"}`, false},
	{`{"v":1,"key":{"cluster":"c","namespace":"n","name":"x"},"spec":{"scaleTargetRef":{},"maxReplicas":1},"state":{"history":{}},"lastSeen":"2026-01-01T00:00:00Z"} `, true},
	{` {"v":1,"key":{"cluster":"c","namespace":"n","name":"x"},"spec":{"scaleTargetRef":{},"maxReplicas":1},"state":{"history":{}},"lastSeen":"2026-01-01T00:00:00Z"}`, true},
	{`{"v":1,"key":{"cluster":"c","namespace":"n","name":"x"},"spec":{"scaleTargetRef":{},"maxReplicas":1},"state":{"history":{}},"lastSeen":"2026-01-01T00:00:00Z"}x`, true},
	{`{"v": 1,"key":{"cluster":"c","namespace":"n","name":"x"},"spec":{"scaleTargetRef":{},"maxReplicas":1},"state":{"history":{}},"lastSeen":"2026-01-01T00:00:00Z"}`, true},
	// Other order, other case (json-iterator matches names without case), unknown and repeated members.
	{`{"v":1,"spec":{"scaleTargetRef":{},"maxReplicas":1},"key":{"cluster":"c","namespace":"n","name":"x"},"state":{"history":{}},"lastSeen":"2026-01-01T00:00:00Z"}`, true},
	{`{"v":1,"KEY":{"cluster":"c","namespace":"n","name":"x"},"spec":{"scaleTargetRef":{},"maxReplicas":1},"state":{"history":{}},"lastSeen":"2026-01-01T00:00:00Z"}`, true},
	{`{"v":1,"key":{"cluster":"c","namespace":"n","name":"x","zone":"z"},"spec":{"scaleTargetRef":{},"maxReplicas":1},"state":{"history":{}},"lastSeen":"2026-01-01T00:00:00Z"}`, true},
	{`{"v":1,"key":{"cluster":"c","cluster":"d","namespace":"n","name":"x"},"spec":{"scaleTargetRef":{},"maxReplicas":1},"state":{"history":{}},"lastSeen":"2026-01-01T00:00:00Z"}`, true},
	// Missing members, null, empty arrays and objects the encoder omits.
	{`{"v":1,"key":{"cluster":"c","namespace":"n","name":"x"},"spec":{"scaleTargetRef":{},"maxReplicas":1},"state":{"history":{}}}`, true},
	{`{"v":1,"key":{"cluster":"c","namespace":"n","name":null},"spec":{"scaleTargetRef":{},"maxReplicas":1},"state":{"history":{}},"lastSeen":"2026-01-01T00:00:00Z"}`, true},
	{`{"v":1,"key":{"cluster":"c","namespace":"n","name":"x"},"spec":{"scaleTargetRef":{},"maxReplicas":1},"state":{"history":{}},"reported":[],"lastSeen":"2026-01-01T00:00:00Z"}`, true},
	{`{"v":1,"key":{"cluster":"c","namespace":"n","name":"x"},"spec":{"scaleTargetRef":{},"maxReplicas":1},"state":{"history":{}},"pending":[],"lastSeen":"2026-01-01T00:00:00Z"}`, true},
	{`{"v":1,"key":{"cluster":"c","namespace":"n","name":"x"},"spec":{"scaleTargetRef":{},"maxReplicas":1,"metrics":[{"type":"Pods","pods":{"metric":{"name":"m","selector":{"matchLabels":{}}},"target":{"type":"Value"}}}]},"state":{"history":{}},"lastSeen":"2026-01-01T00:00:00Z"}`, true},
	{`{"v":1,"key":{"cluster":"c","namespace":"n","name":"x"},"spec":{"scaleTargetRef":{},"maxReplicas":1,"metrics":[{"type":"Pods","pods":{"metric":{"name":"m","selector":{"matchLabels":{"a":"1","a":"2"}}},"target":{"type":"Value"}}}]},"state":{"history":{}},"lastSeen":"2026-01-01T00:00:00Z"}`, false},
	// Versions.
	{`{"v":2,"key":{"cluster":"c","namespace":"n","name":"x"},"spec":{"scaleTargetRef":{},"maxReplicas":1},"state":{"history":{}},"lastSeen":"2026-01-01T00:00:00Z"}`, false},
	{`{"v":3,"key":{"cluster":"c","namespace":"n","name":"x"},"spec":{"scaleTargetRef":{},"maxReplicas":1},"state":{"history":{}},"lastSeen":"2026-01-01T00:00:00Z"}`, true},
	{`{"v":0,"key":{"cluster":"c","namespace":"n","name":"x"},"spec":{"scaleTargetRef":{},"maxReplicas":1},"state":{"history":{}},"lastSeen":"2026-01-01T00:00:00Z"}`, true},
	{`{"v":20,"key":{"cluster":"c","namespace":"n","name":"x"},"spec":{"scaleTargetRef":{},"maxReplicas":1},"state":{"history":{}},"lastSeen":"2026-01-01T00:00:00Z"}`, true},
	{`{"v":10,"key":{"cluster":"c","namespace":"n","name":"x"},"spec":{"scaleTargetRef":{},"maxReplicas":1},"state":{"history":{}},"lastSeen":"2026-01-01T00:00:00Z"}`, true},
	{`{"v":1.0,"key":{"cluster":"c","namespace":"n","name":"x"},"spec":{"scaleTargetRef":{},"maxReplicas":1},"state":{"history":{}},"lastSeen":"2026-01-01T00:00:00Z"}`, true},
	{`{}`, true},
	{``, true},
	{`{`, true},
	// Numbers: forms AppendInt does not write, and overflow (json-iterator wraps some).
	{`{"v":1,"rev":-9223372036854775808,"key":{"cluster":"c","namespace":"n","name":"x"},"spec":{"scaleTargetRef":{},"maxReplicas":-2147483648},"state":{"history":{}},"lastSeen":"2026-01-01T00:00:00Z"}`, false},
	{`{"v":1,"rev":9223372036854775808,"key":{"cluster":"c","namespace":"n","name":"x"},"spec":{"scaleTargetRef":{},"maxReplicas":1},"state":{"history":{}},"lastSeen":"2026-01-01T00:00:00Z"}`, true},
	{`{"v":1,"key":{"cluster":"c","namespace":"n","name":"x"},"spec":{"scaleTargetRef":{},"maxReplicas":2147483648},"state":{"history":{}},"lastSeen":"2026-01-01T00:00:00Z"}`, true},
	{`{"v":1,"key":{"cluster":"c","namespace":"n","name":"x"},"spec":{"scaleTargetRef":{},"maxReplicas":9999999999},"state":{"history":{}},"lastSeen":"2026-01-01T00:00:00Z"}`, true},
	{`{"v":1,"key":{"cluster":"c","namespace":"n","name":"x"},"spec":{"scaleTargetRef":{},"maxReplicas":-0},"state":{"history":{}},"lastSeen":"2026-01-01T00:00:00Z"}`, true},
	{`{"v":1,"key":{"cluster":"c","namespace":"n","name":"x"},"spec":{"scaleTargetRef":{},"maxReplicas":01},"state":{"history":{}},"lastSeen":"2026-01-01T00:00:00Z"}`, true},
	{`{"v":1,"key":{"cluster":"c","namespace":"n","name":"x"},"spec":{"scaleTargetRef":{},"maxReplicas":1e2},"state":{"history":{}},"lastSeen":"2026-01-01T00:00:00Z"}`, true},
	// Ratios.
	{`{"v":1,"key":{"cluster":"c","namespace":"n","name":"x"},"spec":{"scaleTargetRef":{},"maxReplicas":1},"state":{"history":{}},"lastDecision":{"time":"2026-01-01T00:00:00Z","currentReplicas":1,"desiredReplicas":1,"explanation":{"metrics":[{"index":0,"proposal":1,"usageRatio":"NaN","readyPods":0,"ignoredPods":0,"missingPods":0,"unreadyPods":0},{"index":0,"proposal":1,"usageRatio":-0,"readyPods":0,"ignoredPods":0,"missingPods":0,"unreadyPods":0},{"index":0,"proposal":1,"usageRatio":1E+400,"readyPods":0,"ignoredPods":0,"missingPods":0,"unreadyPods":0}],"winningMetric":0,"proposal":1,"stabilized":1,"limited":1,"final":1}},"lastSeen":"2026-01-01T00:00:00Z"}`, true},
	{`{"v":1,"key":{"cluster":"c","namespace":"n","name":"x"},"spec":{"scaleTargetRef":{},"maxReplicas":1},"state":{"history":{}},"lastDecision":{"time":"2026-01-01T00:00:00Z","currentReplicas":1,"desiredReplicas":1,"explanation":{"metrics":[{"index":0,"proposal":1,"usageRatio":"inf","readyPods":0,"ignoredPods":0,"missingPods":0,"unreadyPods":0}],"winningMetric":0,"proposal":1,"stabilized":1,"limited":1,"final":1}},"lastSeen":"2026-01-01T00:00:00Z"}`, true},
	{`{"v":1,"key":{"cluster":"c","namespace":"n","name":"x"},"spec":{"scaleTargetRef":{},"maxReplicas":1},"state":{"history":{}},"lastDecision":{"time":"2026-01-01T00:00:00Z","currentReplicas":1,"desiredReplicas":1,"explanation":{"metrics":[{"index":0,"proposal":1,"usageRatio":-0.5e-3,"readyPods":0,"ignoredPods":0,"missingPods":0,"unreadyPods":0},{"index":0,"proposal":1,"usageRatio":1.00000000000000011102230246251565404236316680908203125,"readyPods":0,"ignoredPods":0,"missingPods":0,"unreadyPods":0}],"winningMetric":0,"proposal":1,"stabilized":1,"limited":1,"final":1}},"lastSeen":"2026-01-01T00:00:00Z"}`, false},
	// Times: other zones (Local or a FixedZone), too many digits, out of range, escaped.
	{`{"v":1,"key":{"cluster":"c","namespace":"n","name":"x"},"spec":{"scaleTargetRef":{},"maxReplicas":1},"state":{"history":{}},"lastSeen":"2026-01-01T00:00:00+00:00"}`, true},
	{`{"v":1,"key":{"cluster":"c","namespace":"n","name":"x"},"spec":{"scaleTargetRef":{},"maxReplicas":1},"state":{"history":{}},"lastSeen":"2026-01-01T00:00:00.5+05:30"}`, true},
	{`{"v":1,"key":{"cluster":"c","namespace":"n","name":"x"},"spec":{"scaleTargetRef":{},"maxReplicas":1},"state":{"history":{}},"lastSeen":"2026-01-01T00:00:00.1234567891Z"}`, true},
	{`{"v":1,"key":{"cluster":"c","namespace":"n","name":"x"},"spec":{"scaleTargetRef":{},"maxReplicas":1},"state":{"history":{}},"lastSeen":"2026-01-01T00:00:00.120Z"}`, false},
	{`{"v":1,"key":{"cluster":"c","namespace":"n","name":"x"},"spec":{"scaleTargetRef":{},"maxReplicas":1},"state":{"history":{}},"lastSeen":"2024-02-29T23:59:59.999999999Z"}`, false},
	{`{"v":1,"key":{"cluster":"c","namespace":"n","name":"x"},"spec":{"scaleTargetRef":{},"maxReplicas":1},"state":{"history":{}},"lastSeen":"2025-02-29T00:00:00Z"}`, true},
	{`{"v":1,"key":{"cluster":"c","namespace":"n","name":"x"},"spec":{"scaleTargetRef":{},"maxReplicas":1},"state":{"history":{}},"lastSeen":"2026-01-01T24:00:00Z"}`, true},
	{`{"v":1,"key":{"cluster":"c","namespace":"n","name":"x"},"spec":{"scaleTargetRef":{},"maxReplicas":1},"state":{"history":{}},"lastSeen":"2026-01-01T00:00:00.Z"}`, true},
	{`{"v":1,"key":{"cluster":"c","namespace":"n","name":"x"},"spec":{"scaleTargetRef":{},"maxReplicas":1},"state":{"history":{}},"lastSeen":"\u0032026-01-01T00:00:00Z"}`, true},
	{`{"v":1,"key":{"cluster":"c","namespace":"n","name":"x"},"spec":{"scaleTargetRef":{},"maxReplicas":1},"state":{"history":{}},"lastSeen":null}`, true},
	// Strings: escapes the encoder does not write, surrogates, raw control characters and
	// invalid UTF-8.
	{`{"v":1,"key":{"cluster":"\/\b\f\u00E9\u2028","namespace":"\ud83d\ude42","name":"\ud800x"},"spec":{"scaleTargetRef":{},"maxReplicas":1},"state":{"history":{}},"lastSeen":"2026-01-01T00:00:00Z"}`, true},
	{`{"v":1,"key":{"cluster":"\/\b\f\u00E9\u2028","namespace":"n","name":"x"},"spec":{"scaleTargetRef":{},"maxReplicas":1},"state":{"history":{}},"lastSeen":"2026-01-01T00:00:00Z"}`, false},
	{"{\"v\":1,\"key\":{\"cluster\":\"a\x01\",\"namespace\":\"n\",\"name\":\"x\"},\"spec\":{\"scaleTargetRef\":{},\"maxReplicas\":1},\"state\":{\"history\":{}},\"lastSeen\":\"2026-01-01T00:00:00Z\"}", true},
	{"{\"v\":1,\"key\":{\"cluster\":\"\\n\x01\",\"namespace\":\"n\",\"name\":\"x\"},\"spec\":{\"scaleTargetRef\":{},\"maxReplicas\":1},\"state\":{\"history\":{}},\"lastSeen\":\"2026-01-01T00:00:00Z\"}", true},
	{"{\"v\":1,\"key\":{\"cluster\":\"\xff\xed\xa0\x80\x7f\",\"namespace\":\"n\",\"name\":\"x\"},\"spec\":{\"scaleTargetRef\":{},\"maxReplicas\":1},\"state\":{\"history\":{}},\"lastSeen\":\"2026-01-01T00:00:00Z\"}", false},
	{`{"v":1,"key":{"cluster":"\x","namespace":"n","name":"x"},"spec":{"scaleTargetRef":{},"maxReplicas":1},"state":{"history":{}},"lastSeen":"2026-01-01T00:00:00Z"}`, true},
	// Quantities the slow path refuses.
	{`{"v":1,"key":{"cluster":"c","namespace":"n","name":"x"},"spec":{"scaleTargetRef":{},"maxReplicas":1,"metrics":[{"type":"Resource","resource":{"name":"cpu","target":{"type":"AverageValue","averageValue":"lots"}}}]},"state":{"history":{}},"lastSeen":"2026-01-01T00:00:00Z"}`, true},
	{`{"v":1,"key":{"cluster":"c","namespace":"n","name":"x"},"spec":{"scaleTargetRef":{},"maxReplicas":1,"metrics":[{"type":"Resource","resource":{"name":"cpu","target":{"type":"AverageValue","averageValue":""}}}]},"state":{"history":{}},"lastSeen":"2026-01-01T00:00:00Z"}`, true},
}

func TestUnmarshalNonCanonical(t *testing.T) {
	cases := nonCanonical
	for _, c := range markerCases {
		cases = append(cases, struct {
			b    string
			slow bool
		}{c.b, c.slow})
	}
	for i, c := range cases {
		fast := checkAgainstSlow(t, fmt.Sprintf("case %d", i), []byte(c.b))
		if c.slow && fast {
			t.Errorf("case %d: the fast path decoded a record it should leave to the slow path:\n%s", i, c.b)
		}
		if !c.slow && !fast {
			t.Errorf("case %d: the fast path gave up:\n%s", i, c.b)
		}
	}
}

// FuzzUnmarshalFast: for any input, Unmarshal (the fast path, or the slow path where it gives
// up) gives exactly what the slow path gives, and a result that does not alias its input.
// Seeds: canonical records, hand-made departures from the canonical form, and truncations and
// byte edits of a canonical record.
func FuzzUnmarshalFast(f *testing.F) {
	recs := canonicalRecords(f, 30)
	for _, b := range recs {
		f.Add(b)
	}
	for _, c := range nonCanonical {
		f.Add([]byte(c.b))
	}
	for _, c := range markerCases {
		f.Add([]byte(c.b))
	}
	bench := recs[0]
	for _, edit := range []func([]byte) []byte{
		func(b []byte) []byte { return b[:len(b)/2] },
		func(b []byte) []byte { return bytes.Replace(b, []byte(`,"`), []byte(`, "`), 1) },
		func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"recommendations"`), []byte(`"Recommendations"`), 1)
		},
		func(b []byte) []byte { return bytes.Replace(b, []byte(`"replicas":5`), []byte(`"replicas":5.0`), 1) },
		func(b []byte) []byte { return bytes.Replace(b, []byte(`Z"`), []byte(`+01:00"`), 1) },
		func(b []byte) []byte { return bytes.Replace(b, []byte(`"250m"`), []byte(`"0.25"`), -1) },
		func(b []byte) []byte { return bytes.Replace(b, []byte(`"app"`), []byte(`"tier"`), 1) },
		func(b []byte) []byte { return bytes.Replace(b, []byte(`"Max"`), []byte(`"M\u0061x"`), 1) },
		func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"conditionsAsState":true`), []byte(`"conditionsAsState":false`), 1)
		},
		func(b []byte) []byte { return bytes.Replace(b, []byte(`,"conditionsAsState":true`), nil, 1) },
		func(b []byte) []byte { return bytes.Replace(b, []byte(`{"v":2,`), []byte(`{"v":1,`), 1) },
	} {
		f.Add(edit(bytes.Clone(bench)))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if isBinary(b) {
			return // a binary record (format 3), which FuzzUnmarshalBinary covers
		}
		checkAgainstSlow(t, "input", b)
	})
}

// TestSameTargetSeesDifferences: the comparison the tests above rely on tells apart what
// Unmarshal must keep apart (a fast path that got one of these wrong would otherwise pass).
// Each case sets a field of both targets, with changed false in one and true in the other.
func TestSameTargetSeesDifferences(t *testing.T) {
	b, err := Marshal(benchTarget(), 1)
	if err != nil {
		t.Fatal(err)
	}
	for name, set := range map[string]func(t *store.Target, changed bool){
		"fixed zone": func(t *store.Target, changed bool) {
			if changed {
				t.LastSeen = t.LastSeen.In(time.FixedZone("", 0))
			}
		},
		"Local": func(t *store.Target, changed bool) {
			if changed {
				t.LastSeen = t.LastSeen.In(time.Local)
			}
		},
		"empty slice": func(t *store.Target, changed bool) {
			if changed {
				t.State.History.ScaleDownEvents = []recommender.ScaleEvent{}
			}
		},
		"empty map": func(t *store.Target, changed bool) {
			sel := &recommender.LabelSelector{}
			if changed {
				sel.MatchLabels = map[string]string{}
			}
			t.LastDecision.Decision.CurrentMetrics[1].Pods.Metric.Selector = sel
		},
		"quantity form": func(t *store.Target, changed bool) { // the same value and String(): 25e-2, not 250e-3
			if changed {
				q := resource.MustParse("0.25")
				t.Spec.Metrics[1].Pods.Target.AverageValue = &q
			}
		},
		"NaN ratio": func(t *store.Target, changed bool) {
			if changed {
				t.LastDecision.Decision.Explanation.Metrics[0].UsageRatio = math.NaN()
			}
		},
		"string": func(t *store.Target, changed bool) {
			if changed {
				t.State.Conditions[0].Message = strings.ToUpper(t.State.Conditions[0].Message)
			}
		},
	} {
		want, _, err := unmarshalSlow(b)
		if err != nil {
			t.Fatal(err)
		}
		got, _, err := unmarshalSlow(b)
		if err != nil {
			t.Fatal(err)
		}
		set(want, false)
		set(got, false)
		if !sameTarget(got, want) {
			t.Fatalf("%s: two decodings of one record differ", name)
		}
		set(got, true)
		if sameTarget(got, want) {
			t.Errorf("%s: sameTarget misses the change", name)
		}
	}
}
