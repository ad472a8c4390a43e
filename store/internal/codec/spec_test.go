package codec

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/hpa-recommender/hpa-recommender/recommender"
	"github.com/hpa-recommender/hpa-recommender/store"
	"github.com/hpa-recommender/hpa-recommender/store/storetest"
)

// The invariants of SpecEncodesSame and MarshalNormalizedAfter:
//   - SpecEncodesSame(a, b) is symmetric, true for a deep copy, and when true, targets that
//     differ only in holding a or b encode to the same bytes and normalize to deeply equal
//     targets (reflect.DeepEqual: quantities' internal forms and cached texts included);
//   - MarshalNormalizedAfter gives exactly what MarshalNormalized gives, for any previous
//     record, and reuses the previous spec whenever SpecEncodesSame says it may;
//   - MarshalNormalized's spec is the exact bytes the record holds as its spec, or nil exactly
//     when a quantity's text does not read back as itself.
// Specs come from the tests' targets and from reflection (specmut_test.go), so that a field
// added to recommender.Spec later is filled and mutated without editing the tests.

// specTarget is benchTarget holding spec s (shared).
func specTarget(s *recommender.Spec) *store.Target {
	t := benchTarget()
	t.Spec = *s
	return t
}

// checkSpecPair fails t when SpecEncodesSame(a, b) is not symmetric, or is true but targets
// holding a and b encode or normalize differently. It reports SpecEncodesSame(a, b) and
// whether the encodings differ.
func checkSpecPair(t testing.TB, what string, a, b *recommender.Spec) (same, differ bool) {
	t.Helper()
	same = SpecEncodesSame(a, b)
	if same != SpecEncodesSame(b, a) {
		t.Fatalf("%s: SpecEncodesSame(a, b) is %v, SpecEncodesSame(b, a) is not", what, same)
	}
	ta, tb := specTarget(a), specTarget(b)
	ea, errA := Marshal(ta, 7)
	eb, errB := Marshal(tb, 7)
	differ = !bytes.Equal(ea, eb) || (errA == nil) != (errB == nil)
	if !same {
		return same, differ
	}
	if differ {
		t.Fatalf("%s: SpecEncodesSame, but the records differ (%v, %v):\n%s\n%s", what, errA, errB, ea, eb)
	}
	na, errA := Normalize(ta)
	nb, errB := Normalize(tb)
	if (errA == nil) != (errB == nil) || !sameTarget(na, nb) {
		t.Fatalf("%s: SpecEncodesSame, but the targets normalize differently (%v, %v):\n%s", what, errA, errB,
			cmp.Diff(na, nb, deepEqual))
	}
	return same, differ
}

// fullSpec is a spec with every pointer set, every slice and map holding two elements (each
// metric holds every kind of source), from c.
func fullSpec(t testing.TB, c chooser) *recommender.Spec {
	var s recommender.Spec
	specFiller{c: c, full: true}.fill(t, reflect.ValueOf(&s).Elem(), 0)
	return &s
}

// seedSpecs are the specs of the codec tests' target, of a record older binaries stored, of the
// store suite's full target, a full one by reflection, an empty one, and one whose quantity's
// text does not read back as itself.
func seedSpecs(t testing.TB) []*recommender.Spec {
	old, _, err := Unmarshal([]byte(storetest.RecordV1(3)))
	if err != nil {
		t.Fatal(err)
	}
	rewritten := &benchTarget().Spec
	q := resource.MustParse("10k")
	q.Format = resource.BinarySI
	rewritten.Behavior.ScaleDown.Tolerance = &q
	suite := storetest.FullSpec()
	return []*recommender.Spec{&benchTarget().Spec, &old.Spec, &suite, fullSpec(t, rand.New(rand.NewPCG(1, 1))), {}, rewritten}
}

// TestSpecEncodesSameSeesEveryField: each mutation of each field of a full spec, and of the
// fields its mutations set, either makes SpecEncodesSame false or leaves the record as it was;
// and each field has a mutation that changes the record (which SpecEncodesSame then sees). A
// field added to recommender.Spec and forgotten in SpecEncodesSame fails here.
func TestSpecEncodesSameSeesEveryField(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for n := range 3 {
		full := fullSpec(t, r)
		leaves := map[string]bool{} // leaf path: some mutation changed the record
		count := len(sites(reflect.ValueOf(full).Elem(), "spec"))
		for i := range count {
			for k := 0; ; k++ {
				b := deepCopy(full)
				at := sites(reflect.ValueOf(b).Elem(), "spec")[i]
				ms := mutations(t, r, at)
				if k == len(ms) {
					break
				}
				ms[k].apply()
				what := fmt.Sprintf("spec %d, %s: %s", n, at.path, ms[k].name)
				_, differ := checkSpecPair(t, what, full, b)
				if at.leaf() {
					leaves[at.path] = leaves[at.path] || differ
				}
				// One more mutation anywhere in the changed spec reaches the fields a
				// mutation just set (a pointer set, an element added).
				what += "; " + mutateSpec(t, r, b)
				checkSpecPair(t, what, full, b)
			}
		}
		for path, changed := range leaves {
			if !changed {
				t.Errorf("spec %d: no mutation of %s changed the record (does the record hold it?)", n, path)
			}
		}
		if len(leaves) < 100 {
			t.Fatalf("spec %d: only %d fields", n, len(leaves))
		}
	}
}

// TestSpecEncodesSame: for random pairs of specs (the second a copy of the first with up to
// three random mutations, or none), SpecEncodesSame keeps its invariants, and is true for an
// unmutated copy; it is also true, and false, often enough for both to be tested.
func TestSpecEncodesSame(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	specs := seedSpecs(t)
	var same, differ int
	for i := range 5000 {
		var a *recommender.Spec
		if i < len(specs)*200 {
			a = specs[i%len(specs)]
		} else {
			a = &randomTarget(r).Spec
		}
		b := deepCopy(a)
		if s, _ := checkSpecPair(t, fmt.Sprintf("pair %d, a copy", i), a, b); !s {
			t.Fatalf("pair %d: SpecEncodesSame is false for a deep copy", i)
		}
		var what []string
		for range r.IntN(4) {
			what = append(what, mutateSpec(t, r, b))
		}
		s, d := checkSpecPair(t, fmt.Sprintf("pair %d (%s)", i, strings.Join(what, "; ")), a, b)
		if s {
			same++
		}
		if d {
			differ++
		}
	}
	if same < 1000 || differ < 1000 {
		t.Fatalf("SpecEncodesSame true for %d pairs, records differing for %d, of 5000", same, differ)
	}
}

// checkAfter fails t unless MarshalNormalizedAfter(next, prev's normalized spec and spec
// encoding) and MarshalUnrevised(next) give exactly what MarshalNormalized(next) gives, MarshalNormalized's spec is the
// record's own (nil exactly when a quantity's text does not read back as itself), and the
// previous spec is reused exactly when SpecEncodesSame allows it. It returns the results of
// MarshalNormalizedAfter and whether it reused prev's spec.
func checkAfter(t testing.TB, f Format, what string, prev *store.Target, prevSpec []byte, next *store.Target) (*store.Target, []byte, bool) {
	t.Helper()
	wantU, want, wantSpec, wantErr := f.MarshalNormalized(next)
	gotU, got, gotSpec, err := f.MarshalNormalizedAfter(next, prev, prevSpec)
	onlyU, onlyErr := f.MarshalUnrevised(next)
	if (onlyErr == nil) != (wantErr == nil) || onlyErr == nil && !bytes.Equal(onlyU.Bytes(), wantU.Bytes()) {
		t.Fatalf("%s: MarshalUnrevised wrote\n%s (%v)\nMarshalNormalized\n%s (%v)", what, onlyU.Bytes(), onlyErr, wantU.Bytes(), wantErr)
	}
	switch {
	case (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error():
		t.Fatalf("%s: MarshalNormalizedAfter's error %v, MarshalNormalized's %v", what, err, wantErr)
	case err != nil:
		return nil, nil, false
	case !bytes.Equal(gotU.Bytes(), wantU.Bytes()):
		t.Fatalf("%s: MarshalNormalizedAfter wrote\n%s\nMarshalNormalized\n%s", what, gotU.Bytes(), wantU.Bytes())
	case !sameTarget(got, want):
		t.Fatalf("%s: MarshalNormalizedAfter's target differs from MarshalNormalized's:\n%s", what, cmp.Diff(want, got, deepEqual))
	case !bytes.Equal(gotSpec, wantSpec) || (gotSpec == nil) != (wantSpec == nil):
		t.Fatalf("%s: MarshalNormalizedAfter's spec %q, MarshalNormalized's %q", what, gotSpec, wantSpec)
	}
	section := append(append([]byte(`,"spec":`), wantSpec...), `,"state":`...)
	if f == Binary {
		section = append(binary.LittleEndian.AppendUint32(nil, uint32(len(wantSpec))), wantSpec...)
	}
	if wantSpec != nil && !bytes.Contains(wantU.Bytes(), section) {
		t.Fatalf("%s: the spec %s is not the record's:\n%s", what, wantSpec, wantU.Bytes())
	}
	if exact := textsReadBack(&next.Spec); exact != (wantSpec != nil) {
		t.Fatalf("%s: MarshalNormalized's spec is %q, but the quantities' texts read back as themselves: %v", what, wantSpec, exact)
	}
	reused := gotSpec != nil && prevSpec != nil && &gotSpec[0] == &prevSpec[0]
	if want := prevSpec != nil && SpecEncodesSame(&next.Spec, &prev.Spec); reused != want {
		t.Fatalf("%s: reused the previous spec: %v, want %v", what, reused, want)
	}
	if reused && (got.Spec.MinReplicas != prev.Spec.MinReplicas || got.Spec.Behavior != prev.Spec.Behavior ||
		reflect.ValueOf(got.Spec.Metrics).Pointer() != reflect.ValueOf(prev.Spec.Metrics).Pointer()) {
		t.Fatalf("%s: reused the previous spec's encoding but not its normalized form", what)
	}
	return got, gotSpec, reused
}

// textsReadBack reports whether every quantity of s has a text that parses to a quantity with
// that text: the oracle for MarshalNormalized's spec being nil.
func textsReadBack(s *recommender.Spec) bool {
	for _, at := range sites(reflect.ValueOf(deepCopy(s)).Elem(), "spec") {
		if at.v.Type() == quantityType {
			q := at.v.Interface().(resource.Quantity)
			text := q.String()
			if back := resource.MustParse(text); back.String() != text {
				return false
			}
		}
	}
	return true
}

// TestMarshalNormalizedAfter: for random targets each written after the previous one, with the
// previous one's spec unchanged (a deep copy) or mutated, MarshalNormalizedAfter keeps its
// invariants (checkAfter), also when the previous spec was itself reused; and it reuses the
// previous spec for most unchanged ones (all but those whose texts do not read back).
func TestMarshalNormalizedAfter(t *testing.T) {
	for _, f := range []Format{JSON, Binary} {
		t.Run(fmt.Sprint(f), func(t *testing.T) { testMarshalNormalizedAfter(t, f) })
	}
}

func testMarshalNormalizedAfter(t *testing.T, f Format) {
	r := rand.New(rand.NewPCG(11, 12))
	specs := seedSpecs(t)
	var unchanged, reused, unusable int
	for i := range 300 {
		prev := randomTarget(r)
		if i%2 == 0 {
			prev.Spec = *deepCopy(specs[i/2%len(specs)])
		}
		_, prevNorm, prevSpec, err := f.MarshalNormalized(prev)
		if err != nil {
			t.Fatalf("chain %d: %v", i, err)
		}
		for step := range 8 {
			next := randomTarget(r)
			next.Spec = *deepCopy(&prevNorm.Spec)
			var what []string
			if r.IntN(2) == 0 {
				for range 1 + r.IntN(2) {
					what = append(what, mutateSpec(t, r, &next.Spec))
				}
			} else {
				unchanged++
			}
			got, spec, ok := checkAfter(t, f, fmt.Sprintf("chain %d, step %d (%s)", i, step, strings.Join(what, "; ")),
				prevNorm, prevSpec, next)
			if got == nil {
				continue
			}
			if ok && len(what) == 0 {
				reused++
			}
			if spec == nil {
				unusable++
			}
			prevNorm, prevSpec = got, spec
		}
	}
	if reused < unchanged/2 || unusable < 10 {
		t.Fatalf("the previous spec was reused for %d of %d unchanged specs; %d specs could not be", reused, unchanged, unusable)
	}
}

// FuzzSpecEncodesSame: for a seed spec or a random one (seed), and a copy of it mutated as the
// fuzzer's bytes choose, SpecEncodesSame and MarshalNormalizedAfter keep their invariants
// (checkSpecPair, checkAfter), and SpecEncodesSame is true for the unmutated copy.
func FuzzSpecEncodesSame(f *testing.F) {
	for base := range len(seedSpecs(f)) + 1 {
		f.Add(uint8(base), uint64(1), []byte{})
		f.Add(uint8(base), uint64(2), []byte{1, 0, 0})
		f.Add(uint8(base), uint64(3), []byte{3, 17, 1, 2, 40, 0, 1, 9, 3, 1})
	}
	f.Fuzz(func(t *testing.T, base uint8, seed uint64, choices []byte) {
		specs := seedSpecs(t)
		var a *recommender.Spec
		if int(base) < len(specs) {
			a = specs[base]
		} else {
			a = &randomTarget(rand.New(rand.NewPCG(seed, uint64(base)))).Spec
		}
		b := deepCopy(a)
		if s, _ := checkSpecPair(t, "a copy", a, b); !s {
			t.Fatal("SpecEncodesSame is false for a deep copy")
		}
		c := &byteChooser{choices}
		var what []string
		for range c.IntN(4) {
			what = append(what, mutateSpec(t, c, b))
		}
		desc := strings.Join(what, "; ")
		checkSpecPair(t, desc, a, b)
		for _, f := range []Format{JSON, Binary} {
			_, prev, prevSpec, err := f.MarshalNormalized(specTarget(a))
			if err != nil {
				t.Fatal(err)
			}
			checkAfter(t, f, desc, prev, prevSpec, specTarget(b))
		}
	})
}

// TestSharedSpecIsOnlyRead: goroutines that encode, compare and reuse one spec at once, as the
// server's requests share the specs it converted and a store shares its cached records, only
// read it. Quantity.String caches a text it computes in its receiver; "8Gi" is a text
// ParseQuantity does not cache. Meaningful under -race.
func TestSharedSpecIsOnlyRead(t *testing.T) {
	spec := benchTarget().Spec
	q := resource.MustParse("8Gi")
	spec.Metrics = append(slices.Clone(spec.Metrics), recommender.MetricSpec{Type: recommender.MetricExternal,
		External: &recommender.ExternalMetricSource{Target: recommender.MetricTarget{Value: &q}}})
	_, prev, prevSpec, err := MarshalNormalized(specTarget(deepCopy(&spec))) // leaves spec untouched
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 20 {
				if !SpecEncodesSame(&spec, &prev.Spec) {
					t.Error("the spec does not encode as its own record's")
				}
				if _, err := Marshal(specTarget(&spec), 1); err != nil {
					t.Error(err)
				}
				if _, _, _, err := MarshalNormalizedAfter(specTarget(&spec), prev, prevSpec); err != nil {
					t.Error(err)
				}
				if _, err := Marshal(prev, 1); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
}
