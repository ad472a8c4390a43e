package codec

import (
	"bytes"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/hpa-recommender/hpa-recommender/recommender"
	"github.com/hpa-recommender/hpa-recommender/store"
)

func compareKeys(a, b store.Key) int {
	for _, p := range [][2]string{{a.Cluster, b.Cluster}, {a.Namespace, b.Namespace}, {a.Name, b.Name}} {
		if c := strings.Compare(p[0], p[1]); c != 0 {
			return c
		}
	}
	return 0
}

// FuzzKeyEncoding states the key encoding's invariants: it round-trips, byte order is key order,
// and the cluster and cluster+namespace prefixes select exactly their keys.
func FuzzKeyEncoding(f *testing.F) {
	f.Add("a", "b/c", "d", "a/b", "c", "d")
	f.Add("a", "b\x00c", "d", "a", "b", "c\x00d")
	f.Add("a", "b", "c", "a", "b", "c\x00")
	f.Add("a\x00\xff", "\x00\x01", "x", "a", "\x00", "\x01")
	f.Add("", "", "", "x", "", "")
	f.Fuzz(func(t *testing.T, c1, n1, m1, c2, n2, m2 string) {
		a, b := store.Key{Cluster: c1, Namespace: n1, Name: m1}, store.Key{Cluster: c2, Namespace: n2, Name: m2}
		ea, eb := EncodeKey(a), EncodeKey(b)
		if got, err := DecodeKey(ea); err != nil || got != a {
			t.Fatalf("DecodeKey(EncodeKey(%q)) = %q, %v", a, got, err)
		}
		if got, want := bytes.Compare(ea, eb), compareKeys(a, b); got != want {
			t.Fatalf("byte order %d, key order %d for %q vs %q", got, want, a, b)
		}
		if c1 == "" {
			return
		}
		if got, want := bytes.HasPrefix(eb, Prefix(c1, "")), c2 == c1; got != want {
			t.Fatalf("cluster prefix of %q selects %q: %v, want %v", a, b, got, want)
		}
		if n1 == "" {
			return
		}
		if got, want := bytes.HasPrefix(eb, Prefix(c1, n1)), c2 == c1 && n2 == n1; got != want {
			t.Fatalf("namespace prefix of %q selects %q: %v, want %v", a, b, got, want)
		}
	})
}

func TestDecodeKeyRejectsMalformed(t *testing.T) {
	for _, b := range []string{"", "a", "a\x00\x01", "a\x00\x01b\x00\x01", "a\x00\x01b\x00\x01c\x00\x01d", "a\x00\x02b\x00\x01c\x00\x01", "a\x00"} {
		if k, err := DecodeKey([]byte(b)); err == nil {
			t.Errorf("DecodeKey(%q) = %q, want an error", b, k)
		}
	}
}

func TestNonFiniteRatiosRoundTrip(t *testing.T) {
	in := &store.Target{LastDecision: &store.LastDecision{Decision: recommender.Decision{
		Explanation: recommender.Explanation{Metrics: []recommender.MetricExplanation{
			{UsageRatio: math.NaN()}, {UsageRatio: math.Inf(1)}, {UsageRatio: math.Inf(-1)}, {UsageRatio: 1.25},
		}},
	}}}
	b, err := Marshal(in, 0)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := Unmarshal(b)
	if err != nil {
		t.Fatal(err)
	}
	m := out.LastDecision.Decision.Explanation.Metrics
	if !math.IsNaN(m[0].UsageRatio) || !math.IsInf(m[1].UsageRatio, 1) || !math.IsInf(m[2].UsageRatio, -1) || m[3].UsageRatio != 1.25 {
		t.Errorf("ratios came back as %v", m)
	}
}

func TestUpgradeRefusesOtherVersions(t *testing.T) {
	for _, b := range []string{`{"v":3}`, `{"v":0}`, `{"v":-1}`, `{}`, `not json`, ``} {
		if _, _, err := Upgrade([]byte(b)); err == nil {
			t.Errorf("Upgrade(%q) succeeded", b)
		}
	}
	const want = "unsupported record version 3 (this binary reads 1 to 2, and 4)"
	if _, _, err := Upgrade([]byte(`{"v":3}`)); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Upgrade of version 3: %v, want an error saying %q", err, want)
	}
}

// TestOnlyUpgradeReadsOldFormats: Unmarshal and LastSeen refuse a record of an older format,
// saying it was not upgraded, and Upgrade reads it.
func TestOnlyUpgradeReadsOldFormats(t *testing.T) {
	v1, err := os.ReadFile("testdata/record-v1.json")
	if err != nil {
		t.Fatal(err)
	}
	v3, err := os.ReadFile("testdata/format3/fixture-0.bin")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range [][]byte{v1, v3, []byte(`{"v":2,"lastSeen":"2026-01-01T00:00:00Z","key":{}}`)} {
		if _, _, err := Unmarshal(b); err == nil || !strings.Contains(err.Error(), "not upgraded") {
			t.Errorf("Unmarshal(%.20q): %v, want an error saying it is not upgraded", b, err)
		}
		if _, err := LastSeen(b); err == nil || !strings.Contains(err.Error(), "not upgraded") {
			t.Errorf("LastSeen(%.20q): %v, want an error saying it is not upgraded", b, err)
		}
		up, upgraded, err := Upgrade(b)
		if err != nil || !upgraded {
			t.Fatalf("Upgrade(%.20q) = %v, %v", b, upgraded, err)
		}
		if _, _, err := Unmarshal(up); err != nil {
			t.Errorf("the upgraded record does not decode: %v", err)
		}
		if again, upgraded, err := Upgrade(up); err != nil || upgraded || !bytes.Equal(again, up) {
			t.Errorf("Upgrade of a record of format 4 = %v, %v; want it back as it is", upgraded, err)
		}
	}
}

func TestUpgradeRefusesBadQuantity(t *testing.T) {
	b := `{"v":1,"spec":{"maxReplicas":1,"metrics":[{"type":"Resource","resource":{"name":"cpu","target":{"type":"AverageValue","averageValue":"lots"}}}]},"state":{"history":{}},"lastSeen":"2026-01-01T00:00:00Z","key":{}}`
	if _, _, err := Upgrade([]byte(b)); err == nil || !strings.Contains(err.Error(), "lots") {
		t.Errorf("Upgrade with a bad quantity: %v, want an error naming it", err)
	}
}
