package codec

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/hpa-recommender/hpa-recommender/recommender"
	"github.com/hpa-recommender/hpa-recommender/store"
)

// TestAppendRecordMatchesJSON: appendRecord writes exactly what json.Marshal, the encoder it
// replaces, writes, and fails exactly where it fails: for hand-picked edge cases, for records
// of random targets, and for random records filled with what targets rarely hold (escapes,
// invalid UTF-8, extreme numbers, times RFC 3339 cannot represent).
func TestAppendRecordMatchesJSON(t *testing.T) {
	for i, r := range edgeRecords() {
		checkAppendRecord(t, fmt.Sprintf("edge record %d", i), &r)
	}

	if _, err := Marshal(&store.Target{LastSeen: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}, 0); err == nil {
		t.Error("Marshal of a target last seen in the year 10000 succeeded")
	}

	rnd := rand.New(rand.NewPCG(5, 6))
	var prev, prevCopy []byte
	for i := range 3000 {
		tgt := randomTarget(rnd)
		rev := []int64{0, tgt.Revision, math.MaxInt64, math.MinInt64}[rnd.IntN(4)]
		r := encRecord(tgt, rev)
		checkAppendRecord(t, fmt.Sprintf("target %d", i), &r)
		want, err := json.Marshal(&r)
		if err != nil {
			t.Fatalf("target %d: json.Marshal: %v", i, err)
		}
		got, err := Marshal(tgt, rev)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("target %d: Marshal =\n%s, %v\nwant\n%s", i, got, err, want)
		}
		// Marshal encodes in a recycled buffer: what it returned before must not change.
		if !bytes.Equal(prev, prevCopy) {
			t.Fatalf("target %d: Marshal changed the record it returned for target %d", i, i-1)
		}
		prev, prevCopy = got, bytes.Clone(got)
	}

	var failed int
	const records = 4000
	for i := range records {
		var r recordV1
		recordFiller{rnd}.fill(reflect.ValueOf(&r).Elem())
		if !checkAppendRecord(t, fmt.Sprintf("random record %d", i), &r) {
			failed++
		}
	}
	// Both outcomes must be exercised for the comparison to mean anything.
	if failed < records/10 || failed > records*9/10 {
		t.Errorf("%d of %d random records failed to encode; tune recordFiller.timestamp", failed, records)
	}
}

// checkAppendRecord compares appendRecord, appending to a non-empty slice, with json.Marshal,
// and reports whether r encoded.
func checkAppendRecord(t *testing.T, what string, r *recordV1) bool {
	t.Helper()
	want, wantErr := json.Marshal(r)
	got, err := appendRecord([]byte("prefix"), r)
	switch {
	case wantErr != nil && err == nil:
		t.Fatalf("%s: appendRecord succeeded where json.Marshal failed (%v):\n%s", what, wantErr, got)
	case wantErr == nil && err != nil:
		t.Fatalf("%s: appendRecord: %v, json.Marshal succeeded:\n%s", what, err, want)
	case err != nil:
		if !strings.Contains(err.Error(), "outside of range") {
			t.Fatalf("%s: appendRecord failed with %q, want the time's error", what, err)
		}
		return false
	case !bytes.HasPrefix(got, []byte("prefix")) || !bytes.Equal(got[len("prefix"):], want):
		t.Fatalf("%s: appendRecord wrote\n%q\njson.Marshal wrote\n%q", what, got, want)
	}
	return true
}

// edgeRecords are the cases where json-iterator departs from encoding/json or where a
// hand-written encoder is most likely to slip, so that they do not depend on the random ones.
func edgeRecords() []recordV1 {
	var all strings.Builder
	for c := range 256 {
		all.WriteByte(byte(c))
	}
	all.WriteString("\u2028\u2029\u202a\ufffd\u00e9\U0001F642\xed\xa0\x80\xe2\x80")
	s := all.String()
	var ratios []metricExplV1
	for _, f := range []float64{0, math.Copysign(0, -1), 1e-6, math.Nextafter(1e-6, 0), 1e-7, 1.5e-300, 5e-324,
		1e20, 1e21, math.Nextafter(1e21, 0), -1e21, math.MaxFloat64, 0.1, 1.0 / 3, 123456789, math.NaN(),
		math.Inf(1), math.Inf(-1)} {
		ratios = append(ratios, metricExplV1{UsageRatio: float(f)})
	}
	empty, zero := "", int32(0)
	return []recordV1{
		{},
		{V: 1, Revision: -1, Key: keyV1{Cluster: s, Namespace: "<script>&amp;</script>", Name: "\b\f\n\r\t\x00\x1f\x7f"},
			Reported: []string{s, "", "\\"}},
		{Spec: specV1{MinReplicas: &zero, Metrics: []metricV1{}, Behavior: &behaviorV1{ScaleUp: &rulesV1{SelectPolicy: &empty,
			Policies: []policyV1{}}}}, State: stateV1{History: historyV1{Recommendations: []recommendationV1{}}, Conditions: []conditionV1{}},
			Pending: []pendingV1{}, Reported: []string{}, LastDecision: &lastDecV1{CurrentMetrics: []metricStV1{{}}}},
		{Spec: specV1{Metrics: []metricV1{{External: &externalSrcV1{Metric: metricIDV1{Selector: &selectorV1{
			MatchLabels:      map[string]string{"\xff": "1", "\uFFFE": "2", "<": "3", "=": "4", "\u2028": "5", "a\x00": "6", "a": s, "": ""},
			MatchExpressions: []selectorReqV1{{Values: []string{}}},
		}}}}}}},
		{LastDecision: &lastDecV1{Explanation: explanationV1{Metrics: ratios, StabilizationWindow: -1}}},
		{LastSeen: time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.FixedZone("", 23*3600+59*60+59))},
		{LastSeen: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		{LastDecision: &lastDecV1{Time: time.Date(2020, 1, 1, 0, 0, 0, 0, time.FixedZone("", -24*3600))}},
	}
}

// recordFiller sets every exported field of a record to a random value by reflection, as
// filler does for targets, but draws what the conversion from a target rarely produces:
// strings with anything JSON escapes, extreme integers and floats, empty non-nil slices and
// maps, and times in odd zones or out of RFC 3339's range.
type recordFiller struct{ r *rand.Rand }

var (
	fragments = []string{"a", "web", "cpu", " ", "'", "/", `"`, `\`, "<", ">", "&", "\u2028", "\u2029", "\u2027", "\u202a",
		"é", "日本", "\U0001F642", "\ufffd", "\x7f", "\xff", "\xc3", "\xe2\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80"}
	floats = []float64{0, math.Copysign(0, -1), 1e-6, math.Nextafter(1e-6, 0), 1e21, math.Nextafter(1e21, 0), 5e-324,
		math.MaxFloat64, -math.MaxFloat64, math.NaN(), math.Inf(1), math.Inf(-1)}
	oddZones = []*time.Location{time.FixedZone("", 23*3600+59*60+59), time.FixedZone("", -(23*3600 + 59*60)),
		time.FixedZone("", 5*3600+30*60+15), time.FixedZone("", 24*3600), time.FixedZone("", -24*3600),
		time.FixedZone("", 100*3600)} // the last three out of RFC 3339's range
)

func (f recordFiller) fill(v reflect.Value) {
	if v.Type() == timeType {
		v.Set(reflect.ValueOf(f.timestamp()))
		return
	}
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(f.r.IntN(2) == 0)
	case reflect.Int, reflect.Int32, reflect.Int64:
		bits := v.Type().Bits()
		switch f.r.IntN(4) {
		case 0:
			v.SetInt(0)
		case 1:
			v.SetInt(f.r.Int64N(2001) - 1000)
		case 2:
			v.SetInt([]int64{-1 << (bits - 1), 1<<(bits-1) - 1, -1}[f.r.IntN(3)])
		default:
			v.SetInt(int64(f.r.Uint64()) >> (64 - bits))
		}
	case reflect.Float64:
		switch f.r.IntN(4) {
		case 0:
			v.SetFloat(floats[f.r.IntN(len(floats))])
		case 1:
			v.SetFloat(math.Float64frombits(f.r.Uint64()))
		default:
			v.SetFloat(f.r.NormFloat64() * math.Pow(10, float64(f.r.IntN(61)-30)))
		}
	case reflect.String:
		v.SetString(f.str())
	case reflect.Pointer:
		if f.r.IntN(3) == 0 {
			return
		}
		p := reflect.New(v.Type().Elem())
		f.fill(p.Elem())
		v.Set(p)
	case reflect.Slice:
		n := f.r.IntN(5) - 1 // -1: nil
		if n < 0 {
			return
		}
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			f.fill(s.Index(i))
		}
		v.Set(s)
	case reflect.Map:
		n := f.r.IntN(7) - 1
		if n < 0 {
			return
		}
		// Keys that decode alike (invalid UTF-8 read as U+FFFD) json.Marshal writes in map
		// order, which no encoder can match: one of them only.
		m, decoded := reflect.MakeMap(v.Type()), map[string]bool{}
		for range n {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			f.fill(k)
			f.fill(e)
			var d string
			kb, err := json.Marshal(k.String())
			if err == nil {
				err = json.Unmarshal(kb, &d)
			}
			if err != nil {
				panic(err)
			}
			if !decoded[d] {
				decoded[d] = true
				m.SetMapIndex(k, e)
			}
		}
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				f.fill(v.Field(i))
			}
		}
	default:
		panic("recordFiller: unhandled kind " + v.Kind().String() + " of " + v.Type().String())
	}
}

// str concatenates random fragments, control characters and bytes.
func (f recordFiller) str() string {
	var b strings.Builder
	for range f.r.IntN(8) {
		switch f.r.IntN(4) {
		case 0:
			b.WriteByte(byte(f.r.IntN(0x20)))
		case 1:
			b.WriteByte(byte(f.r.IntN(256)))
		default:
			b.WriteString(fragments[f.r.IntN(len(fragments))])
		}
	}
	return b.String()
}

// timestamp is one time in 12 a time RFC 3339 cannot represent, so that about half of the
// records, which hold eight times on average, encode.
func (f recordFiller) timestamp() time.Time {
	switch n := f.r.IntN(12); n {
	case 0: // out of range: a 5-digit or negative year, or a zone offset of 24 hours or more
		if f.r.IntN(2) == 0 {
			return time.Date([]int{-1, 10000, -10000, 1 << 20}[f.r.IntN(4)], 1, 1, 0, 0, 0, 0, time.UTC)
		}
		return time.Unix(f.r.Int64N(4e9), 0).In(oddZones[3+f.r.IntN(3)])
	case 1:
		return time.Time{}
	case 2:
		return time.Now() // with a monotonic reading
	case 3:
		return time.Date([]int{0, 9999}[f.r.IntN(2)], time.Month(1+f.r.IntN(12)), 1+f.r.IntN(28), f.r.IntN(24), 0, 0,
			f.r.IntN(1e9), oddZones[f.r.IntN(3)])
	default:
		return time.Unix(f.r.Int64N(4e9), f.r.Int64N(1e9)).In([]*time.Location{zones[f.r.IntN(len(zones))],
			oddZones[f.r.IntN(3)], time.Local}[n%3])
	}
}

// benchTarget is a target as a busy server stores it: a full history, conditions with long
// messages, and a last decision.
func benchTarget() *store.Target {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)
	q := resource.MustParse("250m")
	util, window := int32(70), int32(300)
	policy := "Max"
	t := &store.Target{
		Key: store.Key{Cluster: "prod-eu-west-1", Namespace: "checkout", Name: "checkout-api"},
		Spec: recommender.Spec{
			ScaleTargetRef: recommender.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "checkout-api"},
			MinReplicas:    &util, MaxReplicas: 50,
			Metrics: []recommender.MetricSpec{
				{Type: "Resource", Resource: &recommender.ResourceMetricSource{Name: "cpu",
					Target: recommender.MetricTarget{Type: "Utilization", AverageUtilization: &util}}},
				{Type: "Pods", Pods: &recommender.PodsMetricSource{
					Metric: recommender.MetricIdentifier{Name: "http_requests_per_second", Selector: &recommender.LabelSelector{
						MatchLabels: map[string]string{"app": "checkout", "tier": "api"}}},
					Target: recommender.MetricTarget{Type: "AverageValue", AverageValue: &q}}},
			},
			Behavior: &recommender.Behavior{ScaleDown: &recommender.ScalingRules{StabilizationWindowSeconds: &window,
				SelectPolicy: &policy, Policies: []recommender.ScalingPolicy{{Type: "Percent", Value: 10, PeriodSeconds: 60}}}},
		},
		Pending:  []store.PendingDecision{{RecommendationID: "0193a4c2-7f7e-7d3c-9a1b-3c4d5e6f7a8b", Time: t0, CurrentReplicas: 4, DesiredReplicas: 6}},
		Reported: []string{"0193a4c2-7f7e-7d3c-9a1b-3c4d5e6f7a8a", "0193a4c2-7f7e-7d3c-9a1b-3c4d5e6f7a89"},
		LastSeen: t0,
	}
	for i := range 30 {
		t.State.History.Recommendations = append(t.State.History.Recommendations,
			recommender.Recommendation{Time: t0.Add(time.Duration(i) * 15 * time.Second), Replicas: int32(4 + i%3)})
	}
	t.State.History.ScaleUpEvents = []recommender.ScaleEvent{{Time: t0, Change: 2}}
	t.State.Seeded = true
	for _, typ := range []string{"AbleToScale", "ScalingActive", "ScalingLimited", "ScaledToZero"} {
		t.State.Conditions = append(t.State.Conditions, recommender.Condition{Type: typ, Status: "True", Reason: "ValidMetricFound",
			Message:            "the HPA was able to successfully calculate a replica count from cpu resource utilization (percentage of request)",
			LastTransitionTime: t0})
	}
	t.LastDecision = &store.LastDecision{RecommendationID: "0193a4c2-7f7e-7d3c-9a1b-3c4d5e6f7a8b", Decision: recommender.Decision{
		Time: t0, CurrentReplicas: 4, DesiredReplicas: 6, Conditions: t.State.Conditions,
		CurrentMetrics: []recommender.MetricStatus{
			{Type: "Resource", Resource: &recommender.ResourceMetricStatus{Name: "cpu",
				Current: recommender.MetricValueStatus{AverageValue: &q, AverageUtilization: &util}}},
			{Type: "Pods", Pods: &recommender.PodsMetricStatus{Metric: recommender.MetricIdentifier{Name: "http_requests_per_second"},
				Current: recommender.MetricValueStatus{AverageValue: &q}}},
		},
		Explanation: recommender.Explanation{
			Message: "scaling up from 4 to 6 replicas: cpu utilization 104% of the 70% target",
			Metrics: []recommender.MetricExplanation{
				{Index: 0, Name: "cpu", Proposal: 6, UsageRatio: 1.4857142857142858, ReadyPods: 4},
				{Index: 1, Name: "http_requests_per_second", Proposal: 5, UsageRatio: 1.1, ReadyPods: 4, MissingPods: 1},
			},
			WinningMetric: 0, Proposal: 6, Stabilized: 6, StabilizationWindow: 5 * time.Minute, Limited: 6, Final: 6,
		},
	}}
	return t
}

// BenchmarkMarshal compares Marshal with the json-iterator encoding it replaced; encRecord, the
// conversion both start with, is the floor.
func BenchmarkMarshal(b *testing.B) {
	tgt := benchTarget()
	b.Run("encRecord", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = encRecord(tgt, 42)
		}
	})
	b.Run("json-iterator", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r := encRecord(tgt, 42)
			if _, err := json.Marshal(&r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("appendRecord", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Marshal(tgt, 42); err != nil {
				b.Fatal(err)
			}
		}
	})
	// What a store that keeps records decoded pays for a write: the encoding and the decoded copy.
	b.Run("MarshalNormalized", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, _, _, err := MarshalNormalized(tgt); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The same after a record with the same spec, as most of a target's writes are.
	for _, f := range []Format{JSON, Binary} {
		b.Run("MarshalNormalizedAfter/"+f.String(), func(b *testing.B) {
			_, prev, spec, err := f.MarshalNormalized(tgt)
			if err != nil || spec == nil {
				b.Fatalf("no spec to reuse: %v", err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, _, _, err := f.MarshalNormalizedAfter(tgt, prev, spec); err != nil {
					b.Fatal(err)
				}
			}
		})
		// What the bbolt store pays for a write after a cache miss: the encoding alone.
		b.Run("MarshalUnrevised/"+f.String(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := f.MarshalUnrevised(tgt); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkUnmarshal decodes benchTarget's record: what a store pays to read a record it has
// not cached (boltstore at a cache miss, etcdstore on every update, Get and List always).
func BenchmarkUnmarshal(b *testing.B) { benchDecode(b, JSON, Unmarshal) }

// BenchmarkUnmarshalBinary is BenchmarkUnmarshal of the same target's binary record (format 3).
func BenchmarkUnmarshalBinary(b *testing.B) { benchDecode(b, Binary, Unmarshal) }

// BenchmarkUnmarshalSlow is BenchmarkUnmarshal on the json-iterator path that Unmarshal takes
// for records not in Marshal's exact form, and took for every record before decodeFast.
func BenchmarkUnmarshalSlow(b *testing.B) { benchDecode(b, JSON, unmarshalSlow) }

func benchDecode(b *testing.B, f Format, decode func([]byte) (*store.Target, int64, error)) {
	enc, err := f.Marshal(benchTarget(), 42)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(enc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := decode(enc); err != nil {
			b.Fatal(err)
		}
	}
}
