package codec

import (
	"encoding/binary"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/hpa-recommender/hpa-recommender/recommender"
	"github.com/hpa-recommender/hpa-recommender/store"
)

// The record decoder's fast path. json-iterator's reflective decoding of a record, then the
// conversion to a Target, cost tens of microseconds and hundreds of allocations per record, and
// a store pays it on every read it has not cached. decodeFast reads, in one pass, exactly the
// form encodeRecord writes (its member order, no whitespace, its escapes and number formats)
// and builds the Target directly. It gives up on anything else, and Unmarshal then decodes
// with json-iterator as before: what decodeFast accepts it must decode to exactly what that
// path returns (FuzzUnmarshalFast holds it to that), and whatever it does not accept keeps
// json-iterator's behaviour, quirks and errors included.
//
// The text of every string is unescaped into one scratch buffer and the Target's strings are
// carved from a single copy of it, made when the whole record has been read: one allocation
// instead of one per string, and nothing aliases the input (bbolt's memory, valid only during
// its transaction). Fields whose final address is known when their string is read get a fixup
// (a pointer and a span of the text); array elements, whose slice is only allocated once its
// length is known, keep their spans next to them until then. Quantities and usage ratios are
// parsed from the same copy at the end, by the functions the slow path uses.

// maxPooledDecoder bounds the records whose decoder goes back to the pool: its scratch grows
// with the record, and one huge record must not pin it for good.
const maxPooledDecoder = 64 << 10

var fastDecoders = sync.Pool{New: func() any { return &fastDecoder{lastDate: [10]byte([]byte("1970-01-01"))} }}

// decodeFast decodes b, and reports false when b is not exactly in the form encodeRecord
// writes or would make Unmarshal fail; the caller then takes the slow path.
func decodeFast(b []byte) (*store.Target, bool) {
	d := fastDecoders.Get().(*fastDecoder)
	defer d.release()
	d.b = b
	t := d.record()
	if d.bad || !d.finish() {
		return nil, false
	}
	if d.condsAsState {
		// Copied once the strings are set, and apart: callers change the two separately.
		t.LastDecision.Decision.Conditions = slices.Clone(t.State.Conditions)
	}
	return t, true
}

// span is a string's text in fastDecoder.text.
type span struct{ off, end int }

// fixup sets *dst, once the text is final, to the string of span s.
type fixup[T any] struct {
	dst *T
	s   span
}

// label is one matchLabels entry, set once the text is final.
type label struct {
	dst  *map[string]string
	k, v span
}

// item is an array element being decoded: its value, and the spans of the texts it holds in
// place (see the fields functions), recorded as fixups once the element has its final address.
type item[T any] struct {
	v    T
	text [4]span
}

type fastDecoder struct {
	b   []byte
	i   int
	bad bool // b is not in the canonical form: stop and take the slow path

	version      int  // the record's
	condsAsState bool // the last decision's conditions are a copy of the state's

	text   []byte // the unescaped text of the strings (and usage ratios) read so far
	strs   []fixup[string]
	qtys   []fixup[*resource.Quantity]
	ratios []fixup[float64]
	labels []label
	int32s []int32 // backs the record's *int32 fields; part of the result, never pooled

	lastDate [10]byte // the last date time read, valid, and the Unix time its day starts
	lastDay  int64

	// Scratch for the elements of each kind of array, copied to a slice of exactly their
	// number at the array's end. No array holds an array of its own kind.
	spans    []span
	pending  []item[store.PendingDecision]
	metrics  []item[recommender.MetricSpec]
	exprs    []item[recommender.LabelSelectorRequirement]
	policies []item[recommender.ScalingPolicy]
	recs     []item[recommender.Recommendation]
	events   []item[recommender.ScaleEvent]
	conds    []item[recommender.Condition]
	statuses []item[recommender.MetricStatus]
	expls    []item[recommender.MetricExplanation]
}

// release returns d to the pool with nothing that points into the result or the input.
func (d *fastDecoder) release() {
	if len(d.b) > maxPooledDecoder {
		return
	}
	d.b, d.i, d.bad, d.int32s = nil, 0, false, nil
	d.version, d.condsAsState = 0, false
	d.text = d.text[:0]
	d.strs = clearSlice(d.strs)
	d.qtys = clearSlice(d.qtys)
	d.ratios = clearSlice(d.ratios)
	d.labels = clearSlice(d.labels)
	d.spans = d.spans[:0]
	d.pending = clearSlice(d.pending)
	d.metrics = clearSlice(d.metrics)
	d.exprs = clearSlice(d.exprs)
	d.policies = clearSlice(d.policies)
	d.recs = clearSlice(d.recs)
	d.events = clearSlice(d.events)
	d.conds = clearSlice(d.conds)
	d.statuses = clearSlice(d.statuses)
	d.expls = clearSlice(d.expls)
	fastDecoders.Put(d)
}

// clearSlice zeroes s, so that the pool holds no pointer into a result, and empties it.
// array clears what an earlier array of the same kind left past its own length.
func clearSlice[T any](s []T) []T {
	clear(s)
	return s[:0]
}

// finish copies the text once and sets every string, quantity, ratio and label from it. It
// reports false when a quantity or a ratio does not parse: the slow path then reports it.
func (d *fastDecoder) finish() bool {
	text := string(d.text)
	for _, f := range d.strs {
		*f.dst = text[f.s.off:f.s.end]
	}
	for _, f := range d.ratios {
		v, err := strconv.ParseFloat(text[f.s.off:f.s.end], 64)
		if err != nil {
			return false
		}
		*f.dst = v
	}
	if len(d.qtys) > 0 {
		qs := make([]resource.Quantity, len(d.qtys))
		for i, f := range d.qtys {
			q, err := parseQty(text[f.s.off:f.s.end])
			if err != nil {
				return false
			}
			qs[i] = q
			*f.dst = &qs[i]
		}
	}
	for i := 0; i < len(d.labels); {
		dst, n := d.labels[i].dst, 1
		for i+n < len(d.labels) && d.labels[i+n].dst == dst {
			n++
		}
		m := make(map[string]string, n)
		for _, l := range d.labels[i : i+n] {
			m[text[l.k.off:l.k.end]] = text[l.v.off:l.v.end] // the last of equal keys wins, as in json-iterator
		}
		*dst = m
		i += n
	}
	return true
}

// fail marks b as not canonical and moves to its end, so that every later read fails at once
// and the decoding unwinds without checks at each step.
func (d *fastDecoder) fail() {
	d.bad = true
	d.i = len(d.b)
}

// byte consumes c if it comes next.
func (d *fastDecoder) byte(c byte) bool {
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

func (d *fastDecoder) expect(c byte) {
	if !d.byte(c) {
		d.fail()
	}
}

// member consumes the name of the next member of an object, and the comma before it, when
// that member is name. Members come in the encoder's order, an omitempty one only when set,
// and a comma before each but the first: no value ends in '{'.
func (d *fastDecoder) member(name string) bool {
	b, i := d.b, d.i
	if i >= len(b) { // failed (or truncated): i > 0 otherwise, past the record's opening
		return false
	}
	if b[i-1] != '{' {
		if b[i] != ',' {
			return false
		}
		i++
	}
	end := i + 1 + len(name)
	// The quotes first: an absent member most often has a name of another length.
	if end+1 >= len(b) || b[i] != '"' || b[end] != '"' || b[end+1] != ':' || string(b[i+1:end]) != name {
		return false
	}
	d.i = end + 2
	return true
}

// must consumes the name of a member the encoder always writes.
func (d *fastDecoder) must(name string) {
	if !d.member(name) {
		d.fail()
	}
}

// unescaped holds the bytes a string may hold as they are: json-iterator copies any byte but
// '"', '\\' and the control characters, which it refuses, without looking at UTF-8.
var unescaped = func() (ok [256]bool) {
	for c := range ok {
		ok[c] = c >= ' ' && c != '"' && c != '\\'
	}
	return ok
}()

// needsLook reports whether one of the 8 bytes of w is not unescaped: '"', '\\' or a control
// character. Strings are mostly long runs of plain bytes, skipped 8 at a time. The tests are
// exact (no byte is missed); a borrow may only flag the wrong byte, which the byte loop sorts out.
func needsLook(w uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	quote, backslash := w^(ones*'"'), w^(ones*'\\')
	return ((w-ones*' ')&^w|(quote-ones)&^quote|(backslash-ones)&^backslash)&highs != 0
}

// str reads a string and returns the span of its text.
func (d *fastDecoder) str() span {
	if !d.byte('"') {
		d.fail()
		return span{}
	}
	b, i, off := d.b, d.i, len(d.text)
	for {
		start := i
		for i+8 <= len(b) && !needsLook(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
		}
		for i < len(b) && unescaped[b[i]] {
			i++
		}
		d.text = append(d.text, b[start:i]...)
		if i >= len(b) || b[i] != '\\' {
			break
		}
		if i = d.escape(i + 1); i < 0 {
			break
		}
	}
	if i < 0 || i >= len(b) || b[i] != '"' { // the end of b, a control character or a bad escape
		d.fail()
		return span{}
	}
	d.i = i + 1
	return span{off, len(d.text)}
}

// escape appends the character escaped at b[i:] (after the backslash) and returns the index
// after it, or -1. \u escapes of UTF-16 surrogates are left to the slow path: json-iterator
// pairs them, or not, in ways of its own.
func (d *fastDecoder) escape(i int) int {
	b := d.b
	if i >= len(b) {
		return -1
	}
	var c byte
	switch b[i] {
	case '"', '\\', '/':
		c = b[i]
	case 'n':
		c = '\n'
	case 'r':
		c = '\r'
	case 't':
		c = '\t'
	case 'b':
		c = '\b'
	case 'f':
		c = '\f'
	case 'u':
		if i+5 > len(b) {
			return -1
		}
		var r rune
		for _, h := range b[i+1 : i+5] {
			v := unhex(h)
			if v < 0 {
				return -1
			}
			r = r<<4 | v
		}
		if 0xd800 <= r && r < 0xe000 {
			return -1
		}
		d.text = appendRune(d.text, r)
		return i + 5
	default:
		return -1
	}
	d.text = append(d.text, c)
	return i + 1
}

func unhex(c byte) rune {
	switch {
	case '0' <= c && c <= '9':
		return rune(c - '0')
	case 'a' <= c && c <= 'f':
		return rune(c - 'a' + 10)
	case 'A' <= c && c <= 'F':
		return rune(c - 'A' + 10)
	}
	return -1
}

// appendRune appends the UTF-8 encoding of r, a code point of the Basic Multilingual Plane
// other than a surrogate.
func appendRune(b []byte, r rune) []byte {
	switch {
	case r < 0x80:
		return append(b, byte(r))
	case r < 0x800:
		return append(b, 0xc0|byte(r>>6), 0x80|byte(r)&0x3f)
	}
	return append(b, 0xe0|byte(r>>12), 0x80|byte(r>>6)&0x3f, 0x80|byte(r)&0x3f)
}

// setStr reads a string into *dst once the text is final; an empty one leaves *dst empty.
func (d *fastDecoder) setStr(dst *string) {
	d.fix(dst, d.str())
}

func (d *fastDecoder) fix(dst *string, s span) {
	if s.end > s.off {
		d.strs = append(d.strs, fixup[string]{dst, s})
	}
}

// qty reads a quantity's string, parsed into *dst once the text is final.
func (d *fastDecoder) qty(dst **resource.Quantity) {
	d.qtys = append(d.qtys, fixup[*resource.Quantity]{dst, d.str()})
}

// int64 reads an integer as strconv.AppendInt writes it: no '+', no leading zero, no "-0".
// One out of range is left to the slow path, which fails on it (or, past json-iterator's
// overflow check, wraps).
func (d *fastDecoder) int64() int64 {
	b, i := d.b, d.i
	neg := i < len(b) && b[i] == '-'
	if neg {
		i++
	}
	start := i
	var u uint64
	for i < len(b) && '0' <= b[i] && b[i] <= '9' && i-start < 19 { // 19 digits cannot overflow u
		u = u*10 + uint64(b[i]-'0')
		i++
	}
	n := i - start
	switch {
	case n == 0, b[start] == '0' && (n > 1 || neg), i < len(b) && '0' <= b[i] && b[i] <= '9',
		!neg && u > math.MaxInt64, neg && u > -math.MinInt64:
		d.fail()
		return 0
	}
	d.i = i
	if neg {
		return -int64(u)
	}
	return int64(u)
}

func (d *fastDecoder) int32() int32 {
	v := d.int64()
	if v < math.MinInt32 || v > math.MaxInt32 {
		d.fail()
		return 0
	}
	return int32(v)
}

// int32Ptr reads an int32 into a variable of the record's int32 block.
func (d *fastDecoder) int32Ptr() *int32 {
	if len(d.int32s) == cap(d.int32s) {
		d.int32s = make([]int32, 0, 8)
	}
	d.int32s = append(d.int32s, d.int32())
	return &d.int32s[len(d.int32s)-1]
}

// time reads a timestamp as time.Time.MarshalJSON writes a UTC one: RFC 3339 with "Z" and at
// most nine fractional digits. It returns what time.Time.UnmarshalJSON returns for it
// (time.Date(..., time.UTC), which time.Unix(...).UTC() is). Other zones, which Marshal never
// writes but which decode with Local or a FixedZone, are left to the slow path.
func (d *fastDecoder) time() time.Time {
	b := d.b[d.i:]
	if len(b) < len(`"2006-01-02T15:04:05Z"`) || b[0] != '"' || b[11] != 'T' || b[14] != ':' || b[17] != ':' {
		d.fail()
		return time.Time{}
	}
	day, ok := d.date(b[1:11])
	hour, ok2 := twoDigits(b[12:14])
	minute, ok3 := twoDigits(b[15:17])
	sec, ok4 := twoDigits(b[18:20])
	if !(ok && ok2 && ok3 && ok4) || hour > 23 || minute > 59 || sec > 59 {
		d.fail()
		return time.Time{}
	}
	i, nsec := 20, 0
	if b[i] == '.' {
		i++
		start := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' && i-start < 9 {
			nsec = nsec*10 + int(b[i]-'0')
			i++
		}
		if i == start || i < len(b) && '0' <= b[i] && b[i] <= '9' {
			d.fail()
			return time.Time{}
		}
		for range 9 - (i - start) {
			nsec *= 10
		}
	}
	if len(b) < i+2 || b[i] != 'Z' || b[i+1] != '"' {
		d.fail()
		return time.Time{}
	}
	d.i += i + 2
	return time.Unix(day+int64(hour*3600+minute*60+sec), int64(nsec)).UTC()
}

// date returns the Unix time at which the day b ("2006-01-02") starts in UTC, and whether b is
// a valid date. It remembers the last date it read: most of a record's times are of one day.
func (d *fastDecoder) date(b []byte) (int64, bool) {
	if string(b) == string(d.lastDate[:]) {
		return d.lastDay, true
	}
	year, ok := twoDigits(b[0:2])
	year2, ok2 := twoDigits(b[2:4])
	month, ok3 := twoDigits(b[5:7])
	day, ok4 := twoDigits(b[8:10])
	year = year*100 + year2
	if !(ok && ok2 && ok3 && ok4) || b[4] != '-' || b[7] != '-' || month < 1 || month > 12 || day < 1 || day > daysIn(month, year) {
		return 0, false
	}
	d.lastDay = time.Date(year, time.Month(month), day, 0, 0, 0, 0, time.UTC).Unix()
	copy(d.lastDate[:], b)
	return d.lastDay, true
}

func twoDigits(b []byte) (int, bool) {
	hi, lo := b[0]-'0', b[1]-'0'
	return int(hi)*10 + int(lo), hi <= 9 && lo <= 9
}

func daysIn(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// ratio reads a usage ratio as appendFloat writes it: "NaN", "+Inf" or "-Inf" (what
// float.UnmarshalJSON parses with strconv.ParseFloat) or a JSON number, whose text is kept for
// strconv.ParseFloat, which json-iterator's float64 decoding matches.
func (d *fastDecoder) ratio(dst *float64) span {
	switch {
	case d.lit(`"NaN"`):
		*dst = math.NaN()
		return span{}
	case d.lit(`"+Inf"`):
		*dst = math.Inf(1)
		return span{}
	case d.lit(`"-Inf"`):
		*dst = math.Inf(-1)
		return span{}
	}
	b, start := d.b, d.i
	i := start
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		i = skipDigits(b, i)
	default:
		d.fail()
		return span{}
	}
	if i < len(b) && b[i] == '.' {
		if i = skipDigits(b, i+1); b[i-1] == '.' {
			d.fail()
			return span{}
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		digitsStart := i
		if i = skipDigits(b, i); i == digitsStart {
			d.fail()
			return span{}
		}
	}
	d.i = i
	off := len(d.text)
	d.text = append(d.text, b[start:i]...)
	return span{off, len(d.text)}
}

func skipDigits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}

// lit consumes s if it comes next.
func (d *fastDecoder) lit(s string) bool {
	if len(d.b)-d.i >= len(s) && string(d.b[d.i:d.i+len(s)]) == s {
		d.i += len(s)
		return true
	}
	return false
}

// array reads a non-empty array (the encoder omits empty ones) into scratch with elem and
// returns its elements.
func array[T any](d *fastDecoder, scratch *[]item[T], elem func(*fastDecoder, *item[T])) []item[T] {
	items := clearSlice(*scratch)
	d.expect('[')
	for !d.bad {
		items = append(items, item[T]{})
		elem(d, &items[len(items)-1])
		if !d.byte(',') {
			break
		}
	}
	d.expect(']')
	*scratch = items
	return items
}

// settle copies items to a slice of their exact number and records the fixups of the texts
// they hold in place: fields returns the strings of an element, in the order of item.text.
func settle[T any](d *fastDecoder, items []item[T], fields func(*T) [4]*string) []T {
	out := make([]T, len(items))
	for i := range items {
		out[i] = items[i].v
		if fields == nil {
			continue
		}
		for j, dst := range fields(&out[i]) {
			if dst != nil {
				d.fix(dst, items[i].text[j])
			}
		}
	}
	return out
}

// strings reads a non-empty array of strings.
func (d *fastDecoder) strings() []string {
	d.spans = d.spans[:0]
	d.expect('[')
	for !d.bad {
		d.spans = append(d.spans, d.str())
		if !d.byte(',') {
			break
		}
	}
	d.expect(']')
	out := make([]string, len(d.spans))
	for i, s := range d.spans {
		d.fix(&out[i], s)
	}
	return out
}

// The record, member by member in the encoder's order (see encode.go), converted as decRecord
// converts: empty slices and maps are nil, since the encoder omits them.

// decodeFast reads versions 1 and 2, which differ only in lastDecision.conditionsAsState.
// Should the format get a version 3, this fails to compile: decodeFast must learn it, and
// whether unmarshalSlow still reads the versions decodeFast reads.
var _ = [1]struct{}{}[RecordVersion-2]

func (d *fastDecoder) record() *store.Target {
	t := new(store.Target)
	switch {
	case d.lit(`{"v":2`):
		d.version = 2
	case d.lit(`{"v":1`):
		d.version = 1
	default:
		d.fail()
		return nil
	}
	if d.member("rev") {
		t.Revision = d.int64()
	}
	d.must("key")
	d.expect('{')
	d.must("cluster")
	d.setStr(&t.Key.Cluster)
	d.must("namespace")
	d.setStr(&t.Key.Namespace)
	d.must("name")
	d.setStr(&t.Key.Name)
	d.expect('}')
	d.must("spec")
	d.spec(&t.Spec)
	d.must("state")
	d.state(&t.State)
	if d.member("pending") {
		t.Pending = settle(d, array(d, &d.pending, (*fastDecoder).pendingDecision), pendingFields)
	}
	if d.member("reported") {
		t.Reported = d.strings()
	}
	if d.member("lastDecision") {
		t.LastDecision = d.lastDecision()
	}
	d.must("lastSeen")
	t.LastSeen = d.time()
	d.expect('}')
	if d.i != len(d.b) {
		d.fail()
	}
	return t
}

func (d *fastDecoder) spec(s *recommender.Spec) {
	d.expect('{')
	d.must("scaleTargetRef")
	d.objRef(&s.ScaleTargetRef)
	if d.member("minReplicas") {
		s.MinReplicas = d.int32Ptr()
	}
	d.must("maxReplicas")
	s.MaxReplicas = d.int32()
	if d.member("metrics") {
		s.Metrics = settle(d, array(d, &d.metrics, (*fastDecoder).metricSpec), metricSpecFields)
	}
	if d.member("behavior") {
		b := new(recommender.Behavior)
		d.expect('{')
		if d.member("scaleUp") {
			b.ScaleUp = d.rules()
		}
		if d.member("scaleDown") {
			b.ScaleDown = d.rules()
		}
		d.expect('}')
		s.Behavior = b
	}
	d.expect('}')
}

func (d *fastDecoder) objRef(r *recommender.ObjectReference) {
	d.expect('{')
	if d.member("apiVersion") {
		d.setStr(&r.APIVersion)
	}
	if d.member("kind") {
		d.setStr(&r.Kind)
	}
	if d.member("name") {
		d.setStr(&r.Name)
	}
	d.expect('}')
}

func metricSpecFields(m *recommender.MetricSpec) [4]*string { return [4]*string{&m.Type} }

func (d *fastDecoder) metricSpec(it *item[recommender.MetricSpec]) {
	m := &it.v
	d.expect('{')
	d.must("type")
	it.text[0] = d.str()
	if d.member("resource") {
		x := new(recommender.ResourceMetricSource)
		d.expect('{')
		d.must("name")
		d.setStr(&x.Name)
		d.must("target")
		d.target(&x.Target)
		d.expect('}')
		m.Resource = x
	}
	if d.member("containerResource") {
		x := new(recommender.ContainerResourceMetricSource)
		d.expect('{')
		d.must("name")
		d.setStr(&x.Name)
		d.must("container")
		d.setStr(&x.Container)
		d.must("target")
		d.target(&x.Target)
		d.expect('}')
		m.ContainerResource = x
	}
	if d.member("pods") {
		x := new(recommender.PodsMetricSource)
		d.expect('{')
		d.must("metric")
		d.metricID(&x.Metric)
		d.must("target")
		d.target(&x.Target)
		d.expect('}')
		m.Pods = x
	}
	if d.member("object") {
		x := new(recommender.ObjectMetricSource)
		d.expect('{')
		d.must("describedObject")
		d.objRef(&x.DescribedObject)
		d.must("metric")
		d.metricID(&x.Metric)
		d.must("target")
		d.target(&x.Target)
		d.expect('}')
		m.Object = x
	}
	if d.member("external") {
		x := new(recommender.ExternalMetricSource)
		d.expect('{')
		d.must("metric")
		d.metricID(&x.Metric)
		d.must("target")
		d.target(&x.Target)
		d.expect('}')
		m.External = x
	}
	d.expect('}')
}

func (d *fastDecoder) metricID(m *recommender.MetricIdentifier) {
	d.expect('{')
	d.must("name")
	d.setStr(&m.Name)
	if d.member("selector") {
		s := new(recommender.LabelSelector)
		d.expect('{')
		if d.member("matchLabels") {
			d.matchLabels(&s.MatchLabels)
		}
		if d.member("matchExpressions") {
			s.MatchExpressions = settle(d, array(d, &d.exprs, (*fastDecoder).selectorReq), selectorReqFields)
		}
		d.expect('}')
		m.Selector = s
	}
	d.expect('}')
}

// matchLabels reads a non-empty object of strings, made a map once the text is final.
func (d *fastDecoder) matchLabels(dst *map[string]string) {
	d.expect('{')
	for !d.bad {
		k := d.str()
		d.expect(':')
		d.labels = append(d.labels, label{dst: dst, k: k, v: d.str()})
		if !d.byte(',') {
			break
		}
	}
	d.expect('}')
}

func selectorReqFields(r *recommender.LabelSelectorRequirement) [4]*string {
	return [4]*string{&r.Key, &r.Operator}
}

func (d *fastDecoder) selectorReq(it *item[recommender.LabelSelectorRequirement]) {
	d.expect('{')
	d.must("key")
	it.text[0] = d.str()
	d.must("operator")
	it.text[1] = d.str()
	if d.member("values") {
		it.v.Values = d.strings()
	}
	d.expect('}')
}

func (d *fastDecoder) target(t *recommender.MetricTarget) {
	d.expect('{')
	d.must("type")
	d.setStr(&t.Type)
	if d.member("value") {
		d.qty(&t.Value)
	}
	if d.member("averageValue") {
		d.qty(&t.AverageValue)
	}
	if d.member("averageUtilization") {
		t.AverageUtilization = d.int32Ptr()
	}
	d.expect('}')
}

func (d *fastDecoder) rules() *recommender.ScalingRules {
	r := new(recommender.ScalingRules)
	d.expect('{')
	if d.member("stabilizationWindowSeconds") {
		r.StabilizationWindowSeconds = d.int32Ptr()
	}
	if d.member("selectPolicy") {
		r.SelectPolicy = new(string)
		d.setStr(r.SelectPolicy)
	}
	if d.member("policies") {
		r.Policies = settle(d, array(d, &d.policies, (*fastDecoder).policy), policyFields)
	}
	if d.member("tolerance") {
		d.qty(&r.Tolerance)
	}
	d.expect('}')
	return r
}

func policyFields(p *recommender.ScalingPolicy) [4]*string { return [4]*string{&p.Type} }

func (d *fastDecoder) policy(it *item[recommender.ScalingPolicy]) {
	d.expect('{')
	d.must("type")
	it.text[0] = d.str()
	d.must("value")
	it.v.Value = d.int32()
	d.must("periodSeconds")
	it.v.PeriodSeconds = d.int32()
	d.expect('}')
}

func (d *fastDecoder) state(s *recommender.State) {
	d.expect('{')
	if d.member("seeded") {
		switch {
		case d.lit("true"):
			s.Seeded = true
		case !d.lit("false"):
			d.fail()
		}
	}
	d.must("history")
	d.expect('{')
	h := &s.History
	if d.member("recommendations") {
		h.Recommendations = settle(d, array(d, &d.recs, (*fastDecoder).recommendation), nil)
	}
	if d.member("scaleUpEvents") {
		h.ScaleUpEvents = settle(d, array(d, &d.events, (*fastDecoder).scaleEvent), nil)
	}
	if d.member("scaleDownEvents") {
		h.ScaleDownEvents = settle(d, array(d, &d.events, (*fastDecoder).scaleEvent), nil)
	}
	d.expect('}')
	if d.member("conditions") {
		s.Conditions = d.conditions()
	}
	d.expect('}')
}

func (d *fastDecoder) recommendation(it *item[recommender.Recommendation]) {
	d.expect('{')
	d.must("time")
	it.v.Time = d.time()
	d.must("replicas")
	it.v.Replicas = d.int32()
	d.expect('}')
}

func (d *fastDecoder) scaleEvent(it *item[recommender.ScaleEvent]) {
	d.expect('{')
	d.must("time")
	it.v.Time = d.time()
	d.must("change")
	it.v.Change = d.int32()
	d.expect('}')
}

func (d *fastDecoder) conditions() []recommender.Condition {
	return settle(d, array(d, &d.conds, (*fastDecoder).condition), conditionFields)
}

func conditionFields(c *recommender.Condition) [4]*string {
	return [4]*string{&c.Type, &c.Status, &c.Reason, &c.Message}
}

func (d *fastDecoder) condition(it *item[recommender.Condition]) {
	d.expect('{')
	d.must("type")
	it.text[0] = d.str()
	d.must("status")
	it.text[1] = d.str()
	if d.member("reason") {
		it.text[2] = d.str()
	}
	if d.member("message") {
		it.text[3] = d.str()
	}
	d.must("lastTransitionTime")
	it.v.LastTransitionTime = d.time()
	d.expect('}')
}

func pendingFields(p *store.PendingDecision) [4]*string { return [4]*string{&p.RecommendationID} }

func (d *fastDecoder) pendingDecision(it *item[store.PendingDecision]) {
	d.expect('{')
	d.must("recommendationId")
	it.text[0] = d.str()
	d.must("time")
	it.v.Time = d.time()
	d.must("currentReplicas")
	it.v.CurrentReplicas = d.int32()
	d.must("desiredReplicas")
	it.v.DesiredReplicas = d.int32()
	d.expect('}')
}

func (d *fastDecoder) lastDecision() *store.LastDecision {
	ld := new(store.LastDecision)
	dec := &ld.Decision
	d.expect('{')
	if d.member("recommendationId") {
		d.setStr(&ld.RecommendationID)
	}
	d.must("time")
	dec.Time = d.time()
	d.must("currentReplicas")
	dec.CurrentReplicas = d.int32()
	d.must("desiredReplicas")
	dec.DesiredReplicas = d.int32()
	if d.member("currentMetrics") {
		dec.CurrentMetrics = settle(d, array(d, &d.statuses, (*fastDecoder).metricStatus), metricStatusFields)
	}
	conds := d.member("conditions")
	if conds {
		dec.Conditions = d.conditions()
	}
	if d.member("conditionsAsState") {
		// Only as the encoder writes it: true, in version 2, without conditions. Anything else
		// the slow path refuses or reads its own way.
		if d.version < 2 || conds || !d.lit("true") {
			d.fail()
		}
		d.condsAsState = true
	}
	d.must("explanation")
	d.explanation(&dec.Explanation)
	d.expect('}')
	return ld
}

func metricStatusFields(m *recommender.MetricStatus) [4]*string { return [4]*string{&m.Type} }

func (d *fastDecoder) metricStatus(it *item[recommender.MetricStatus]) {
	m := &it.v
	d.expect('{')
	if d.member("type") {
		it.text[0] = d.str()
	}
	if d.member("resource") {
		x := new(recommender.ResourceMetricStatus)
		d.expect('{')
		d.must("name")
		d.setStr(&x.Name)
		d.must("current")
		d.value(&x.Current)
		d.expect('}')
		m.Resource = x
	}
	if d.member("containerResource") {
		x := new(recommender.ContainerResourceMetricStatus)
		d.expect('{')
		d.must("name")
		d.setStr(&x.Name)
		d.must("container")
		d.setStr(&x.Container)
		d.must("current")
		d.value(&x.Current)
		d.expect('}')
		m.ContainerResource = x
	}
	if d.member("pods") {
		x := new(recommender.PodsMetricStatus)
		d.expect('{')
		d.must("metric")
		d.metricID(&x.Metric)
		d.must("current")
		d.value(&x.Current)
		d.expect('}')
		m.Pods = x
	}
	if d.member("object") {
		x := new(recommender.ObjectMetricStatus)
		d.expect('{')
		d.must("metric")
		d.metricID(&x.Metric)
		d.must("current")
		d.value(&x.Current)
		d.must("describedObject")
		d.objRef(&x.DescribedObject)
		d.expect('}')
		m.Object = x
	}
	if d.member("external") {
		x := new(recommender.ExternalMetricStatus)
		d.expect('{')
		d.must("metric")
		d.metricID(&x.Metric)
		d.must("current")
		d.value(&x.Current)
		d.expect('}')
		m.External = x
	}
	d.expect('}')
}

func (d *fastDecoder) value(v *recommender.MetricValueStatus) {
	d.expect('{')
	if d.member("value") {
		d.qty(&v.Value)
	}
	if d.member("averageValue") {
		d.qty(&v.AverageValue)
	}
	if d.member("averageUtilization") {
		v.AverageUtilization = d.int32Ptr()
	}
	d.expect('}')
}

func (d *fastDecoder) explanation(x *recommender.Explanation) {
	d.expect('{')
	if d.member("message") {
		d.setStr(&x.Message)
	}
	if d.member("metrics") {
		items := array(d, &d.expls, (*fastDecoder).metricExplanation)
		x.Metrics = settle(d, items, metricExplanationFields)
		for i := range items {
			if s := items[i].text[2]; s.end > s.off {
				d.ratios = append(d.ratios, fixup[float64]{&x.Metrics[i].UsageRatio, s})
			}
		}
	}
	d.must("winningMetric")
	x.WinningMetric = d.int32()
	d.must("proposal")
	x.Proposal = d.int32()
	d.must("stabilized")
	x.Stabilized = d.int32()
	if d.member("stabilizationWindowNanos") {
		x.StabilizationWindow = time.Duration(d.int64())
	}
	d.must("limited")
	x.Limited = d.int32()
	if d.member("limitingPolicy") {
		d.setStr(&x.LimitingPolicy)
	}
	d.must("final")
	x.Final = d.int32()
	if d.member("limitReason") {
		d.setStr(&x.LimitReason)
	}
	d.expect('}')
}

// metricExplanationFields are the strings of a metric explanation; its usage ratio's text,
// item.text[2], is parsed into it once the text is final.
func metricExplanationFields(m *recommender.MetricExplanation) [4]*string {
	return [4]*string{&m.Name, &m.Error}
}

func (d *fastDecoder) metricExplanation(it *item[recommender.MetricExplanation]) {
	m := &it.v
	d.expect('{')
	d.must("index")
	m.Index = d.int32()
	if d.member("name") {
		it.text[0] = d.str()
	}
	d.must("proposal")
	m.Proposal = d.int32()
	d.must("usageRatio")
	it.text[2] = d.ratio(&m.UsageRatio)
	d.must("readyPods")
	m.ReadyPods = d.int32()
	d.must("ignoredPods")
	m.IgnoredPods = d.int32()
	d.must("missingPods")
	m.MissingPods = d.int32()
	d.must("unreadyPods")
	m.UnreadyPods = d.int32()
	if d.member("error") {
		it.text[1] = d.str()
	}
	d.expect('}')
}
