package check

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite prometheusrule.yaml and metrics.txt from rules.yaml and dashboard.json")

const (
	rulesFile          = "../rules.yaml"
	prometheusRuleFile = "../prometheusrule.yaml"
	dashboardFile      = "../dashboard.json"
	metricsFile        = "../metrics.txt"
)

var promql = parser.NewParser(parser.Options{})

// parseRules parses a rules file's groups as Prometheus loads them (rulefmt: unknown fields,
// duplicate groups, bad durations, label names, templates and PromQL are errors).
func parseRules(t *testing.T, name string, data []byte) *rulefmt.RuleGroups {
	t.Helper()
	groups, errs := rulefmt.Parse(data, false, model.UTF8Validation, promql, slog.New(slog.DiscardHandler))
	for _, err := range errs {
		t.Errorf("%s: %v", name, err)
	}
	if groups == nil || len(groups.Groups) == 0 {
		t.Fatalf("%s: no rule groups", name)
	}
	return groups
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// prometheusRuleHeader precedes rules.yaml's groups, indented under spec, in
// prometheusrule.yaml.
const prometheusRuleHeader = `# Generated from rules.yaml by deploy/monitoring/check (go test -update): edit rules.yaml.
# The alerting rules of rules.yaml as a prometheus-operator PrometheusRule. Add the labels your
# Prometheus's ruleSelector matches (kube-prometheus-stack: release: <its release name>).
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: hpa-recommender
  namespace: hpa-system
  labels:
    app.kubernetes.io/part-of: hpa-recommender
spec:
`

// prometheusRule is rules.yaml's text from its groups on, indented under the object's spec.
func prometheusRule(t *testing.T, rules []byte) []byte {
	t.Helper()
	_, groups, ok := bytes.Cut(rules, []byte("\ngroups:\n"))
	if !ok {
		t.Fatalf("%s has no top-level groups: line", rulesFile)
	}
	var b bytes.Buffer
	b.WriteString(prometheusRuleHeader)
	b.WriteString("  groups:\n")
	for line := range strings.Lines(string(groups)) {
		if strings.TrimSpace(line) != "" {
			b.WriteString("  ")
		}
		b.WriteString(line)
	}
	return b.Bytes()
}

func TestRulesParse(t *testing.T) {
	groups := parseRules(t, rulesFile, readFile(t, rulesFile))
	alerts := map[string]bool{}
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				t.Errorf("group %s: a rule without an alert name (recording rules are not expected here): %q", g.Name, r.Expr)
				continue
			}
			if alerts[r.Alert] {
				t.Errorf("alert %s is defined twice", r.Alert)
			}
			alerts[r.Alert] = true
			if r.Labels["severity"] == "" {
				t.Errorf("alert %s has no severity label", r.Alert)
			}
			if r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("alert %s lacks a summary or description annotation", r.Alert)
			}
		}
	}
	if want := []string{"hpa-recommender", "hpa-scaler"}; !slices.Equal(groupNames(groups), want) {
		t.Errorf("groups = %v, want %v", groupNames(groups), want)
	}
}

func groupNames(g *rulefmt.RuleGroups) []string {
	var names []string
	for _, x := range g.Groups {
		names = append(names, x.Name)
	}
	return names
}

// TestPrometheusRuleIsRulesFile: prometheusrule.yaml is generated from rules.yaml, and its spec
// parses to the same groups.
func TestPrometheusRuleIsRulesFile(t *testing.T) {
	rules := readFile(t, rulesFile)
	want := prometheusRule(t, rules)
	if *update {
		if err := os.WriteFile(prometheusRuleFile, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := readFile(t, prometheusRuleFile)
	if !bytes.Equal(got, want) {
		t.Errorf("%s is stale; run go test -update in deploy/monitoring/check:\n%s", prometheusRuleFile, cmp.Diff(string(want), string(got)))
	}
	var obj struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name      string            `json:"name"`
			Namespace string            `json:"namespace"`
			Labels    map[string]string `json:"labels"`
		} `json:"metadata"`
		Spec json.RawMessage `json:"spec"`
	}
	if err := yaml.UnmarshalStrict(got, &obj); err != nil {
		t.Fatalf("%s: %v", prometheusRuleFile, err)
	}
	if obj.APIVersion != "monitoring.coreos.com/v1" || obj.Kind != "PrometheusRule" || obj.Metadata.Name == "" {
		t.Errorf("%s: %s %s %q, want a named monitoring.coreos.com/v1 PrometheusRule", prometheusRuleFile, obj.APIVersion, obj.Kind, obj.Metadata.Name)
	}
	spec, err := yaml.JSONToYAML(obj.Spec)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(parseRules(t, rulesFile, rules), parseRules(t, prometheusRuleFile+" spec", spec)); diff != "" {
		t.Errorf("the PrometheusRule's groups differ from rules.yaml's (-rules.yaml +prometheusrule.yaml):\n%s", diff)
	}
}

// dashboard is what the test reads of a Grafana dashboard.
type dashboard struct {
	UID           string  `json:"uid"`
	Title         string  `json:"title"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []panel `json:"panels"`
	Templating    struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query string `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int         `json:"id"`
	Type       string      `json:"type"`
	Title      string      `json:"title"`
	Datasource *datasource `json:"datasource"`
	GridPos    struct {
		H, W, X, Y int
	} `json:"gridPos"`
	Targets []struct {
		RefID      string      `json:"refId"`
		Expr       string      `json:"expr"`
		Datasource *datasource `json:"datasource"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // a collapsed row's
}

type datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// grafanaVariables are the variables Grafana replaces in a query before Prometheus sees it,
// with a value of their kind so that the parser reads a query as Prometheus will.
var grafanaVariables = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h")

func readDashboard(t *testing.T) (*dashboard, []panel) {
	t.Helper()
	data := readFile(t, dashboardFile)
	var d dashboard
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	var all []panel
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			all = append(all, p)
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return &d, all
}

// TestDashboard: the dashboard is of a recent schema, has a Prometheus data source variable
// that every query uses, unique panel ids, and queries that parse.
func TestDashboard(t *testing.T) {
	d, panels := readDashboard(t)
	if d.UID == "" || d.Title == "" {
		t.Errorf("uid %q, title %q: want both", d.UID, d.Title)
	}
	// Grafana 11 writes schema 39 and later; an older one migrates a dashboard on load.
	if d.SchemaVersion < 39 {
		t.Errorf("schemaVersion %d, want 39 or later", d.SchemaVersion)
	}
	var dsVar bool
	for _, v := range d.Templating.List {
		dsVar = dsVar || (v.Name == "datasource" && v.Type == "datasource" && v.Query == "prometheus")
	}
	if !dsVar {
		t.Error("no datasource variable of type prometheus")
	}
	want := datasource{Type: "prometheus", UID: "${datasource}"}
	ids := map[int]bool{}
	queries := 0
	for _, p := range panels {
		if p.ID == 0 || ids[p.ID] {
			t.Errorf("panel %q: id %d is missing or repeated", p.Title, p.ID)
		}
		ids[p.ID] = true
		if p.Title == "" {
			t.Errorf("panel %d has no title", p.ID)
		}
		if p.Type == "row" {
			continue
		}
		if p.GridPos.W == 0 || p.GridPos.H == 0 || p.GridPos.X+p.GridPos.W > 24 {
			t.Errorf("panel %q: gridPos %+v does not fit the 24 columns", p.Title, p.GridPos)
		}
		if p.Datasource == nil || *p.Datasource != want {
			t.Errorf("panel %q: datasource %+v, want %+v", p.Title, p.Datasource, want)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			queries++
			if q.Datasource == nil || *q.Datasource != want {
				t.Errorf("panel %q, query %s: datasource %+v, want %+v", p.Title, q.RefID, q.Datasource, want)
			}
			if _, err := promql.ParseExpr(grafanaVariables.Replace(q.Expr)); err != nil {
				t.Errorf("panel %q, query %s: %v\n%s", p.Title, q.RefID, err, q.Expr)
			}
		}
	}
	if queries == 0 {
		t.Fatal("the dashboard has no queries")
	}
}

// metricNames are the metric names expr selects.
func metricNames(t *testing.T, where, expr string) []string {
	t.Helper()
	e, err := promql.ParseExpr(grafanaVariables.Replace(expr))
	if err != nil {
		t.Errorf("%s: %v", where, err)
		return nil
	}
	var names []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		name := vs.Name
		for _, m := range vs.LabelMatchers {
			if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
				name = m.Value
			}
		}
		if name == "" {
			t.Errorf("%s: a selector without a metric name: %s", where, vs)
			return nil
		}
		names = append(names, name)
		return nil
	})
	return names
}

// TestMetricsList: metrics.txt lists exactly the metric names the rules and the dashboard
// select, which the binaries' tests check they export.
func TestMetricsList(t *testing.T) {
	used := map[string]bool{}
	for _, g := range parseRules(t, rulesFile, readFile(t, rulesFile)).Groups {
		for _, r := range g.Rules {
			for _, n := range metricNames(t, "alert "+r.Alert, r.Expr) {
				used[n] = true
			}
		}
	}
	_, panels := readDashboard(t)
	for _, p := range panels {
		for _, q := range p.Targets {
			for _, n := range metricNames(t, fmt.Sprintf("panel %q, query %s", p.Title, q.RefID), q.Expr) {
				used[n] = true
			}
		}
	}
	var b strings.Builder
	b.WriteString("# Generated by deploy/monitoring/check (go test -update): the metric names rules.yaml and\n")
	b.WriteString("# dashboard.json select, one a line. The binaries' tests check that each is exported.\n")
	for _, n := range slices.Sorted(maps.Keys(used)) {
		b.WriteString(n + "\n")
	}
	want := b.String()
	if *update {
		if err := os.WriteFile(metricsFile, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := string(readFile(t, metricsFile)); got != want {
		t.Errorf("%s is stale; run go test -update in deploy/monitoring/check:\n%s", metricsFile, cmp.Diff(want, got))
	}
}
