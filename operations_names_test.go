package edgekit

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"go.yaml.in/yaml/v3"
)

// The files operators import: the Grafana dashboard and the Prometheus
// alert rules (docs/operations.md#dashboard, #alerts).
const (
	dashboardFile  = "deploy/grafana/edgekit.json"
	alertRulesFile = "deploy/prometheus/edgekit-alerts.yml"
)

// alertRules is the shape of a Prometheus rules file, as far as the tests
// read it.
type alertRules struct {
	Groups []struct {
		Name  string
		Rules []struct {
			Alert       string
			Expr        string
			Annotations map[string]string
		}
	}
}

func readAlertRules(t *testing.T) alertRules {
	t.Helper()
	b, err := os.ReadFile(alertRulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var r alertRules
	if err := yaml.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s: %v", alertRulesFile, err)
	}
	return r
}

// dashboardQueries returns the PromQL of the dashboard's panels (every
// "expr", nested rows included) and of its template variables (the metric
// of a label_values query), each with where it was found.
func dashboardQueries(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels     []json.RawMessage
		Templating struct {
			List []struct {
				Name, Type string
				Query      any
			}
		}
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	queries := map[string]string{}
	for _, p := range d.Panels {
		var v any
		_ = json.Unmarshal(p, &v)
		collectExprs(v, "", queries)
	}
	for _, v := range d.Templating.List {
		q, _ := v.Query.(string)
		if m, ok := v.Query.(map[string]any); ok {
			q, _ = m["query"].(string)
		}
		if v.Type == "query" && q != "" { // not a datasource or custom variable
			queries[labelValuesSeries(q)] = "template variable " + v.Name
		}
	}
	return queries
}

// collectExprs adds every "expr" string under v to queries, with the title
// of the panel holding it.
func collectExprs(v any, title string, queries map[string]string) {
	switch v := v.(type) {
	case map[string]any:
		if s, ok := v["title"].(string); ok {
			title = s
		}
		if e, ok := v["expr"].(string); ok {
			queries[e] = fmt.Sprintf("panel %q", title)
		}
		for _, x := range v {
			collectExprs(x, title, queries)
		}
	case []any:
		for _, x := range v {
			collectExprs(x, title, queries)
		}
	}
}

// labelValuesSeries returns the series selector of a Grafana
// label_values(<selector>, <label>) query; any other query is returned as is.
func labelValuesSeries(q string) string {
	inner, ok := strings.CutPrefix(strings.TrimSpace(q), "label_values(")
	if !ok || !strings.HasSuffix(inner, ")") {
		return q
	}
	inner = strings.TrimSuffix(inner, ")")
	i := strings.LastIndexByte(inner, ',')
	if i < 0 {
		return "" // label_values(<label>): no metric
	}
	return strings.TrimSpace(inner[:i])
}

// promqlKeywords are PromQL's words that are not metric names (the
// aggregation operators among them: `sum by (x) (...)` has no '(' after
// sum); those in labelListKeywords are followed by a list of label names.
var (
	promqlKeywords = []string{"and", "or", "unless", "bool", "offset", "inf", "nan", "by", "without", "on", "ignoring", "group_left", "group_right",
		"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values", "bottomk", "topk", "quantile", "limitk", "limit_ratio"}
	labelListKeywords = []string{"by", "without", "on", "ignoring", "group_left", "group_right"}
)

// metricNames returns the metric names an expression selects, sorted.
func metricNames(expr string) []string {
	names, _ := promqlRefs(expr)
	return names
}

// promqlRefs returns the metric names and the label names an expression
// uses, each sorted: a metric name is an identifier that is neither a
// function (followed by '('), a keyword, a string, a number nor a range;
// a label name is one matched inside {} or listed after by, without, on,
// ignoring or group_*. It tokenizes rather than parses: the dashboard and
// the rules are linted by promtool, this only needs to see the names.
func promqlRefs(expr string) (names, labels []string) {
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			i = skipString(expr, i)
		case c == '{':
			j := skipTo(expr, i, '}')
			labels = append(labels, identifiers(expr[i:j])...)
			i = j
		case c == '[':
			i = skipTo(expr, i, ']')
		case c == '$' || isDigit(c) || c == '.':
			i = skipWord(expr, i+1)
		case isIdentStart(c):
			j := skipWord(expr, i)
			word, next := expr[i:j], strings.TrimLeft(expr[j:], " \t\n")
			i = j
			switch {
			case slices.Contains(labelListKeywords, word) && strings.HasPrefix(next, "("):
				i = skipTo(expr, len(expr)-len(next), ')')
				labels = append(labels, identifiers(next[:len(next)-(len(expr)-i)])...)
			case slices.Contains(promqlKeywords, strings.ToLower(word)), strings.HasPrefix(next, "("):
			default:
				names = append(names, word)
			}
		default:
			i++
		}
	}
	sort.Strings(names)
	sort.Strings(labels)
	return slices.Compact(names), slices.Compact(labels)
}

// identifiers returns the identifiers of s outside its strings: the label
// names of a matcher list or a label list.
func identifiers(s string) []string {
	var ids []string
	for i := 0; i < len(s); {
		switch {
		case s[i] == '"' || s[i] == '\'' || s[i] == '`':
			i = skipString(s, i)
		case isIdentStart(s[i]):
			j := skipWord(s, i)
			ids = append(ids, s[i:j])
			i = j
		default:
			i++
		}
	}
	return ids
}

func isDigit(c byte) bool      { return c >= '0' && c <= '9' }
func isIdentStart(c byte) bool { return c == '_' || c == ':' || (c|0x20) >= 'a' && (c|0x20) <= 'z' }

// skipWord returns the index after the identifier (or number, duration)
// starting at i.
func skipWord(s string, i int) int {
	for i < len(s) && (isIdentStart(s[i]) || isDigit(s[i]) || s[i] == '.') {
		i++
	}
	return i
}

// skipString returns the index after the quoted string starting at i.
func skipString(s string, i int) int {
	q := s[i]
	for i++; i < len(s); i++ {
		switch {
		case s[i] == '\\' && q != '`':
			i++
		case s[i] == q:
			return i + 1
		}
	}
	return i
}

// skipTo returns the index after the first end at or after i that is not
// inside a string.
func skipTo(s string, i int, end byte) int {
	for i < len(s) {
		switch {
		case s[i] == '"' || s[i] == '\'' || s[i] == '`':
			i = skipString(s, i)
		case s[i] == end:
			return i + 1
		default:
			i++
		}
	}
	return i
}

// missingMetrics returns a line for each name used that the scraped
// families do not hold: a histogram's series are <name>_bucket, _sum and
// _count (a summary's _sum and _count), and its bare name selects nothing.
func missingMetrics(used map[string][]string, families map[string]*dto.MetricFamily) []string {
	var missing []string
	for name, where := range used {
		if f, ok := families[name]; ok {
			if t := f.GetType(); t != dto.MetricType_HISTOGRAM && t != dto.MetricType_SUMMARY {
				continue
			}
		} else if scrapedSeries(name, families) {
			continue
		}
		sort.Strings(where)
		missing = append(missing, fmt.Sprintf("%s (in %s)", name, strings.Join(where, ", ")))
	}
	sort.Strings(missing)
	return missing
}

// scrapedSeries reports whether name is a series of a scraped histogram or
// summary: <histogram>_bucket, <histogram or summary>_sum or _count.
func scrapedSeries(name string, families map[string]*dto.MetricFamily) bool {
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		f, ok := families[strings.TrimSuffix(name, suffix)]
		if !ok || !strings.HasSuffix(name, suffix) {
			continue
		}
		switch f.GetType() {
		case dto.MetricType_HISTOGRAM:
			return true
		case dto.MetricType_SUMMARY:
			return suffix != "_bucket"
		}
	}
	return false
}

// checkQueries returns what the scraped families lack of the queries:
// each metric name and each label, with the queries using it.
func checkQueries(queries map[string]string, families map[string]*dto.MetricFamily) []string {
	return append(missingMetrics(usedMetrics(queries), families), missingLabels(queries, families)...)
}

// targetLabels are labels a query may use that no exposition carries:
// Prometheus adds instance and job to each target's series, le and
// quantile are the series of a histogram and a summary.
var targetLabels = []string{"instance", "job", "le", "quantile"}

// missingLabels returns a line for each label a query matches or groups
// by that none of the scraped series of its metrics has.
func missingLabels(queries map[string]string, families map[string]*dto.MetricFamily) []string {
	var missing []string
	for q, where := range queries {
		names, labels := promqlRefs(q)
		for _, l := range labels {
			if !slices.Contains(targetLabels, l) && !hasLabel(names, l, families) {
				missing = append(missing, fmt.Sprintf("label %s of %s (in %s)", l, strings.Join(names, ", "), where))
			}
		}
	}
	sort.Strings(missing)
	return slices.Compact(missing)
}

// hasLabel reports whether a scraped series of one of the metrics (or of
// the histogram or summary it is a series of) has the label.
func hasLabel(names []string, label string, families map[string]*dto.MetricFamily) bool {
	for _, name := range names {
		for _, f := range []*dto.MetricFamily{families[name], families[strings.TrimSuffix(name, "_bucket")],
			families[strings.TrimSuffix(name, "_sum")], families[strings.TrimSuffix(name, "_count")]} {
			for _, m := range f.GetMetric() {
				for _, lp := range m.GetLabel() {
					if lp.GetName() == label {
						return true
					}
				}
			}
		}
	}
	return false
}

// usedMetrics maps each metric name the queries select to where.
func usedMetrics(queries map[string]string) map[string][]string {
	used := map[string][]string{}
	for q, where := range queries {
		for _, name := range metricNames(q) {
			if !slices.Contains(used[name], where) {
				used[name] = append(used[name], where)
			}
		}
	}
	return used
}

// operationsQueries are the queries of the dashboard and the alert rules.
func operationsQueries(t *testing.T) map[string]string {
	t.Helper()
	queries := dashboardQueries(t)
	for _, g := range readAlertRules(t).Groups {
		for _, r := range g.Rules {
			queries[r.Expr] = "alert " + r.Alert
		}
	}
	return queries
}

func TestMetricNames(t *testing.T) {
	for _, tc := range []struct{ expr, want string }{
		{`up`, "up"},
		{`sum by (zone, outcome) (rate(a_total{instance=~"$instance", zone="x{y}"}[$__rate_interval]))`, "a_total"},
		{`histogram_quantile(0.99, sum by (le) (rate(h_bucket{i="1"}[5m])))`, "h_bucket"},
		{`sum(rate(a[1m])) / sum(rate(b[1m])) > bool 0.5 and on (instance) c offset 5m`, "a b c"},
		{`sum(rate(a[1m])) by (zone) > 1e3 unless ignoring (x) group_left (y) d`, "a d"},
		{`max by (instance) (x:recorded) > 900`, "x:recorded"},
		{`topk(5, sum without (le) (a)) + count(b) + sum(c) by (x)`, "a b c"},
		{`caddy_ratelimit_decisions_total{outcome=~"fail_closed|fallback"}`, "caddy_ratelimit_decisions_total"},
		{`label_values(caddy_ratelimit_decisions_total{instance=~"$instance"}, zone)`, "caddy_ratelimit_decisions_total zone"},
		{labelValuesSeries(`label_values(caddy_ratelimit_decisions_total{instance=~"$instance", a="b"}, zone)`), "caddy_ratelimit_decisions_total"},
		{labelValuesSeries(`label_values(instance)`), ""},
	} {
		if got := strings.Join(metricNames(tc.expr), " "); got != tc.want {
			t.Errorf("metricNames(%q) = %q, want %q", tc.expr, got, tc.want)
		}
	}
	for _, tc := range []struct{ expr, want string }{
		{`sum by (zone, outcome) (rate(a_total{instance=~"$instance", zone="x{y}", k!~"a,b"}[5m]))`, "instance k outcome zone zone"},
		{`sum(a) by (x) / on (y) group_left (z) b{w="1"}`, "w x y z"},
		{`histogram_quantile(0.99, sum by (le) (rate(h_bucket[5m])))`, "le"},
	} {
		if _, labels := promqlRefs(tc.expr); strings.Join(labels, " ") != strings.Join(slices.Compact(strings.Fields(tc.want)), " ") {
			t.Errorf("promqlRefs(%q) labels = %q, want %q", tc.expr, labels, tc.want)
		}
	}
}
