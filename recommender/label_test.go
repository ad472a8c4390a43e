package recommender

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestMetricLabelMatchesFmt holds metricLabel's hand-written formatting to the fmt.Sprintf it
// replaces (upstream's label), over nil and empty parts, unsorted keys, and strings holding
// the separators fmt does not escape.
func TestMetricLabelMatchesFmt(t *testing.T) {
	viaFmt := func(m MetricIdentifier) string {
		if m.Selector == nil {
			return m.Name + "(<nil>)"
		}
		return fmt.Sprintf("%s(&LabelSelector{MatchLabels:%v,MatchExpressions:%v,})", m.Name, m.Selector.MatchLabels, m.Selector.MatchExpressions)
	}
	words := []string{"", "a", "queue", "b c", "x:y", "]", "{", "é", "Z", "10", "9"}
	pick := func(r *rand.Rand) string { return words[r.IntN(len(words))] }
	cases := []MetricIdentifier{
		{Name: "m"},
		{Name: "m", Selector: &LabelSelector{}},
		{Name: "m", Selector: &LabelSelector{MatchLabels: map[string]string{}}},
		{Name: "m", Selector: &LabelSelector{MatchExpressions: []LabelSelectorRequirement{{}}}},
		{Name: "queue_messages_ready", Selector: &LabelSelector{MatchLabels: map[string]string{"queue": "work"}}},
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		sel := &LabelSelector{}
		if r.IntN(3) > 0 {
			sel.MatchLabels = map[string]string{}
			for range r.IntN(5) {
				sel.MatchLabels[pick(r)] = pick(r)
			}
		}
		for range r.IntN(4) {
			req := LabelSelectorRequirement{Key: pick(r), Operator: pick(r)}
			for range r.IntN(4) {
				req.Values = append(req.Values, pick(r))
			}
			sel.MatchExpressions = append(sel.MatchExpressions, req)
		}
		cases = append(cases, MetricIdentifier{Name: pick(r), Selector: sel})
	}
	for _, m := range cases {
		if got, want := metricLabel(m), viaFmt(m); got != want {
			t.Fatalf("metricLabel(%+v)\n got %q\nwant %q", m, got, want)
		}
	}
}
