package targeting

import (
	"net/url"
	"strings"
	"testing"
)

// queryOracle decides a query condition with url.ParseQuery.
func queryOracle(raw string, q QueryMatch) bool {
	values, _ := url.ParseQuery(raw) // pairs it cannot read are left out, as scan does
	vs, ok := values[q.Name]
	if q.Present {
		return ok
	}
	for _, v := range vs {
		if v == *q.Equals {
			return true
		}
	}
	return false
}

// queryConds are the conditions the query tests decide.
func queryConds() []QueryMatch {
	eq := func(s string) *string { return &s }
	return []QueryMatch{
		{Name: "a", Present: true}, {Name: "a", Equals: eq("1")}, {Name: "a", Equals: eq("")},
		{Name: "a b", Equals: eq("c&d")}, {Name: "é", Present: true}, {Name: "x", Equals: eq("%")},
		{Name: "long", Equals: eq(strings.Repeat("v", 256))},
	}
}

// checkScan compares scan with url.ParseQuery on raw (at most
// MaxRawQuery bytes) for every condition of queryConds.
func checkScan(t *testing.T, raw string) {
	t.Helper()
	var idx queryIndex
	conds := queryConds()
	if _, err := (&compiler{}).query("q", conds, &idx, &cond{}); err != nil {
		t.Fatal(err)
	}
	var hits queryHits
	idx.scan(raw, &hits)
	for i, q := range conds {
		if got, want := hits.has(i), queryOracle(raw, q); got != want {
			t.Errorf("query %q, condition %s: %v, url.ParseQuery says %v", raw, q.Name, got, want)
		}
	}
}

// TestQueryAgreesWithNetURL: the query is read as url.ParseQuery reads it.
func TestQueryAgreesWithNetURL(t *testing.T) {
	for _, raw := range []string{
		"", "a", "a=", "a=1", "b=2&a=1", "a=2&a=1", "a=1&", "&&a&&", "a=1;b=2", "b=2;&a=1",
		"a+b=c%26d", "a%20b=c%26d", "%61=1", "%C3%A9", "%c3%a9=x", "x=%25", "x=%", "x=%2", "x=%zz&a=1",
		"a%=1", "a=1=2", "=1", "long=" + strings.Repeat("v", 256), "long=" + strings.Repeat("v", 257),
		"long=" + strings.Repeat("%76", 256), "a=%00", "%2561=1",
	} {
		checkScan(t, raw)
	}
}

// TestQueryBound: a query is read up to MaxRawQuery bytes, and a
// parameter the bound cuts is left out.
func TestQueryBound(t *testing.T) {
	s := oneRule(t, `{"query":[{"name":"a","equals":"12"}]}`)
	pad := "p=" + strings.Repeat("x", MaxRawQuery-8) // + "&a=12" is MaxRawQuery-1 bytes
	for _, tc := range []struct {
		raw  string
		want bool
	}{
		{pad + "&a=12", true},
		{pad + "&a=12&more", true},
		{pad + "x&a=12", true},   // ends at MaxRawQuery exactly
		{pad + "xx&a=12", false}, // cut to a=1, left out
		{pad + "xxxxxxxx&a=12", false},
	} {
		if got := s.Decide(&Visitor{RawQuery: tc.raw}).Rule == 0; got != tc.want {
			t.Errorf("query of %d bytes ending %q: %v, want %v", len(tc.raw), tc.raw[len(tc.raw)-8:], got, tc.want)
		}
	}
}
