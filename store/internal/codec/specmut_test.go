package codec

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/hpa-recommender/hpa-recommender/recommender"
)

// Random specs and their mutations, by reflection, for the tests of SpecEncodesSame and
// MarshalNormalizedAfter (spec_test.go): a field added to recommender.Spec later is filled and
// mutated without editing them.

// chooser picks one of n choices: a *rand.Rand, or a fuzzer's bytes.
type chooser interface{ IntN(n int) int }

// byteChooser chooses by consuming bytes; once they run out it always chooses 0.
type byteChooser struct{ b []byte }

func (c *byteChooser) IntN(n int) int {
	if n <= 1 || len(c.b) == 0 {
		return 0
	}
	v := int(c.b[0])
	c.b = c.b[1:]
	if n > 256 && len(c.b) > 0 {
		v = v<<8 | int(c.b[0])
		c.b = c.b[1:]
	}
	return v % n
}

var (
	// specQuantities include texts that String() keeps ("+1"), that it rewrites ("1.5", "1000m",
	// "8Gi", whose text ParseQuantity does not cache), and equal values with other texts.
	specQuantities = []string{"0", "1", "+1", "1000m", "500m", "1.5", "1500m", "8Gi", "1Gi", "1073741824", "10k",
		"1e3", "12345678901234m", "-7", "0.000001", "59324e3", "36E"}
	formats = []resource.Format{resource.DecimalSI, resource.BinarySI, resource.DecimalExponent}
	// specStrs include two invalid UTF-8 bytes, which JSON writes alike.
	specStrs = []string{"", "a", "web", "cpu", "Pods", "héllo", "x\ny", "<&>", "\xff", "\xfe", "a\u2028b"}
)

// newQuantity returns a quantity of one of specQuantities, maybe with its cached text dropped
// (String() then computes the canonical one) or its Format changed (String() keeps the text it
// cached). A decimal value with Format BinarySI has a text that reads back as another: "10k"
// is written "10000", which reads back as "10k".
func newQuantity(c chooser) resource.Quantity {
	q := resource.MustParse(specQuantities[c.IntN(len(specQuantities))])
	switch c.IntN(4) {
	case 0:
		q.Add(resource.Quantity{})
	case 1:
		q.Format = formats[c.IntN(len(formats))]
	case 2:
		q.Format = resource.BinarySI
		q.Add(resource.Quantity{})
	}
	return q
}

// specFiller sets every exported field reachable from a value to a value c chooses; with full,
// every pointer is set and every slice and map holds two elements.
type specFiller struct {
	c    chooser
	full bool
}

func (f specFiller) fill(t testing.TB, v reflect.Value, depth int) {
	if v.Type() == quantityType {
		v.Set(reflect.ValueOf(newQuantity(f.c)))
		return
	}
	size := func() int {
		if f.full {
			return 2
		}
		if depth > 8 {
			return -1
		}
		return f.c.IntN(4) - 1 // -1: nil
	}
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(f.c.IntN(2) == 0)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(f.c.IntN(201) - 100))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(f.c.IntN(2001)-1000) / 8)
	case reflect.String:
		s := specStrs[f.c.IntN(len(specStrs))]
		if f.full && s == "" {
			s = "full"
		}
		v.SetString(s)
	case reflect.Pointer:
		if !f.full && (depth > 8 || f.c.IntN(3) == 0) {
			v.SetZero()
			return
		}
		p := reflect.New(v.Type().Elem())
		f.fill(t, p.Elem(), depth+1)
		v.Set(p)
	case reflect.Slice:
		n := size()
		if n < 0 {
			v.SetZero()
			return
		}
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			f.fill(t, s.Index(i), depth+1)
		}
		v.Set(s)
	case reflect.Map:
		n := size()
		if n < 0 {
			v.SetZero()
			return
		}
		m := reflect.MakeMapWithSize(v.Type(), n)
		for i := range n {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			f.fill(t, k, depth+1)
			if f.full && k.Kind() == reflect.String {
				k.SetString(fmt.Sprintf("key%d", i)) // distinct keys: a full map holds n entries
			}
			f.fill(t, e, depth+1)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				f.fill(t, v.Field(i), depth+1)
			}
		}
	default:
		t.Fatalf("specFiller: a field of kind %s (%s): teach the spec tests about it", v.Kind(), v.Type())
	}
}

// deepCopy copies x, sharing nothing with it (nil and empty kept apart).
func deepCopy[T any](x *T) *T {
	out := new(T)
	copyValue(reflect.ValueOf(out).Elem(), reflect.ValueOf(x).Elem())
	return out
}

func copyValue(dst, src reflect.Value) {
	if src.Type() == quantityType {
		dst.Set(reflect.ValueOf(src.Interface().(resource.Quantity).DeepCopy()))
		return
	}
	switch src.Kind() {
	case reflect.Pointer:
		if !src.IsNil() {
			p := reflect.New(src.Type().Elem())
			copyValue(p.Elem(), src.Elem())
			dst.Set(p)
		}
	case reflect.Slice:
		if !src.IsNil() {
			s := reflect.MakeSlice(src.Type(), src.Len(), src.Len())
			for i := range src.Len() {
				copyValue(s.Index(i), src.Index(i))
			}
			dst.Set(s)
		}
	case reflect.Map:
		if !src.IsNil() {
			m := reflect.MakeMapWithSize(src.Type(), src.Len())
			for it := src.MapRange(); it.Next(); {
				k, e := reflect.New(src.Type().Key()).Elem(), reflect.New(src.Type().Elem()).Elem()
				copyValue(k, it.Key())
				copyValue(e, it.Value())
				m.SetMapIndex(k, e)
			}
			dst.Set(m)
		}
	case reflect.Struct:
		for i := range src.NumField() {
			if src.Type().Field(i).IsExported() {
				copyValue(dst.Field(i), src.Field(i))
			}
		}
	default:
		dst.Set(src)
	}
}

// site is a place in a spec that a mutation changes: its path, its value (a copy for a map
// entry) and how to set it.
type site struct {
	path string
	v    reflect.Value
	set  func(reflect.Value)
}

// leaf reports whether s holds no other site: a mutation of it is a change of one field.
func (s site) leaf() bool {
	switch s.v.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map:
		return false
	case reflect.Struct:
		return s.v.Type() == quantityType
	}
	return true
}

// sites lists every site reachable from v (settable), in a fixed order: v itself, then its
// fields, elements and map entries (by key).
func sites(v reflect.Value, path string) []site {
	var out []site
	var walk func(v reflect.Value, path string, set func(reflect.Value))
	walk = func(v reflect.Value, path string, set func(reflect.Value)) {
		out = append(out, site{path, v, set})
		if v.Type() == quantityType {
			return
		}
		switch v.Kind() {
		case reflect.Pointer:
			if !v.IsNil() {
				e := v.Elem()
				walk(e, "*"+path, e.Set)
			}
		case reflect.Slice:
			for i := range v.Len() {
				e := v.Index(i)
				walk(e, fmt.Sprintf("%s[%d]", path, i), e.Set)
			}
		case reflect.Map:
			keys := v.MapKeys()
			slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
			for _, k := range keys {
				walk(v.MapIndex(k), fmt.Sprintf("%s[%q]", path, k), func(e reflect.Value) { v.SetMapIndex(k, e) })
			}
		case reflect.Struct:
			for i := range v.NumField() {
				if f := v.Type().Field(i); f.IsExported() {
					e := v.Field(i)
					walk(e, path+"."+f.Name, e.Set)
				}
			}
		}
	}
	walk(v, path, v.Set)
	return out
}

// mutation is one change of a site.
type mutation struct {
	name  string
	apply func()
}

// mutations lists the changes of s: to another value of a basic kind or quantity (or the same
// quantity in another form), nil for a set pointer and a value for a nil one, nil and empty
// for each other, an element or entry more or less, two elements swapped.
func mutations(t testing.TB, c chooser, s site) []mutation {
	v := s.v
	fresh := func() reflect.Value {
		x := reflect.New(v.Type()).Elem()
		specFiller{c: c}.fill(t, x, 4)
		return x
	}
	set := func(name string, x func() reflect.Value) mutation {
		return mutation{name, func() { s.set(x()) }}
	}
	if v.Type() == quantityType {
		q := v.Interface().(resource.Quantity)
		return []mutation{
			set("another quantity", func() reflect.Value { return reflect.ValueOf(newQuantity(c)) }),
			set("another value", func() reflect.Value {
				x := q.DeepCopy()
				x.Add(resource.MustParse("1"))
				return reflect.ValueOf(x)
			}),
			set("a deep copy", func() reflect.Value { return reflect.ValueOf(q.DeepCopy()) }),
			set("its cached text dropped", func() reflect.Value {
				x := q.DeepCopy()
				x.Add(resource.Quantity{})
				return reflect.ValueOf(x)
			}),
			set("another Format", func() reflect.Value {
				x := q.DeepCopy()
				x.Format = formats[c.IntN(len(formats))]
				return reflect.ValueOf(x)
			}),
		}
	}
	switch v.Kind() {
	case reflect.Bool:
		return []mutation{set("flipped", func() reflect.Value { return reflect.ValueOf(!v.Bool()).Convert(v.Type()) })}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return []mutation{set("plus one", func() reflect.Value { return reflect.ValueOf(v.Int() + 1).Convert(v.Type()) })}
	case reflect.Float32, reflect.Float64:
		return []mutation{set("plus one", func() reflect.Value { return reflect.ValueOf(v.Float() + 1).Convert(v.Type()) })}
	case reflect.String:
		return []mutation{
			set("another string", func() reflect.Value {
				return reflect.ValueOf(v.String() + specStrs[c.IntN(len(specStrs))] + "x").Convert(v.Type())
			}),
			set("another string or the same", func() reflect.Value {
				return reflect.ValueOf(specStrs[c.IntN(len(specStrs))]).Convert(v.Type())
			}),
		}
	case reflect.Pointer:
		if v.IsNil() {
			return []mutation{set("set", func() reflect.Value { return fresh() })}
		}
		return []mutation{
			set("nil", func() reflect.Value { return reflect.Zero(v.Type()) }),
			set("another value", func() reflect.Value { return fresh() }),
		}
	case reflect.Slice:
		ms := []mutation{set("one more element", func() reflect.Value {
			e := reflect.New(v.Type().Elem()).Elem()
			specFiller{c: c}.fill(t, e, 4)
			return reflect.Append(reflect.AppendSlice(reflect.MakeSlice(v.Type(), 0, v.Len()+1), v), e)
		})}
		switch {
		case v.IsNil():
			ms = append(ms, set("empty", func() reflect.Value { return reflect.MakeSlice(v.Type(), 0, 0) }))
		case v.Len() == 0:
			ms = append(ms, set("nil", func() reflect.Value { return reflect.Zero(v.Type()) }))
		default:
			ms = append(ms, set("one element less", func() reflect.Value {
				i := c.IntN(v.Len())
				out := reflect.AppendSlice(reflect.MakeSlice(v.Type(), 0, v.Len()), v.Slice(0, i))
				return reflect.AppendSlice(out, v.Slice(i+1, v.Len()))
			}))
		}
		if v.Len() >= 2 {
			ms = append(ms, set("first two swapped", func() reflect.Value {
				out := reflect.AppendSlice(reflect.MakeSlice(v.Type(), 0, v.Len()), v)
				a, b := reflect.New(v.Type().Elem()).Elem(), reflect.New(v.Type().Elem()).Elem()
				a.Set(out.Index(0))
				b.Set(out.Index(1))
				out.Index(0).Set(b)
				out.Index(1).Set(a)
				return out
			}))
		}
		return ms
	case reflect.Map:
		ms := []mutation{set("one more entry", func() reflect.Value {
			out := reflect.MakeMapWithSize(v.Type(), v.Len()+1)
			for it := v.MapRange(); it.Next(); {
				out.SetMapIndex(it.Key(), it.Value())
			}
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			specFiller{c: c}.fill(t, k, 4)
			specFiller{c: c}.fill(t, e, 4)
			out.SetMapIndex(k, e)
			return out
		})}
		switch {
		case v.IsNil():
			ms = append(ms, set("empty", func() reflect.Value { return reflect.MakeMap(v.Type()) }))
		case v.Len() == 0:
			ms = append(ms, set("nil", func() reflect.Value { return reflect.Zero(v.Type()) }))
		default:
			ms = append(ms, set("one entry less", func() reflect.Value {
				out := reflect.MakeMapWithSize(v.Type(), v.Len())
				for it := v.MapRange(); it.Next(); {
					out.SetMapIndex(it.Key(), it.Value())
				}
				keys := out.MapKeys()
				out.SetMapIndex(keys[c.IntN(len(keys))], reflect.Value{})
				return out
			}))
		}
		return ms
	case reflect.Struct:
		return []mutation{set("refilled", func() reflect.Value { return fresh() })}
	}
	t.Fatalf("mutations: %s is of kind %s (%s): teach the spec tests about it", s.path, v.Kind(), v.Type())
	return nil
}

// mutateSpec applies one random mutation to one random site of s and describes it.
func mutateSpec(t testing.TB, c chooser, s *recommender.Spec) string {
	ss := sites(reflect.ValueOf(s).Elem(), "spec")
	at := ss[c.IntN(len(ss))]
	ms := mutations(t, c, at)
	m := ms[c.IntN(len(ms))]
	m.apply()
	return at.path + ": " + m.name
}
