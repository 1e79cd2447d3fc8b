package shortener

import (
	"context"
	"encoding/csv"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/clicks"
	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// statsHandler returns a handler on s whose link code has the clicks of
// dimMix (240 on day, 120 the next day) and a few referrers, and what
// each dimension must count over both days.
func statsHandler(t *testing.T, s link.Store, day time.Time) (*Handler, string, map[string]map[string]int64) {
	t.Helper()
	h := newHandler(t, s, withReadKey)
	if h.clicks == nil {
		t.Fatal("click counting is off")
	}
	code := create(t, h, `{"long_url":"https://example.com/stats"}`).Code
	first, want := dimMix(code, day, 240, 0)
	second, want2 := dimMix(code, day.Add(24*time.Hour), 120, 7)
	for dim, m := range want2 {
		for v, n := range m {
			want[dim][v] += n
		}
	}
	want[clicks.DimReferrer] = map[string]int64{}
	for i := range first {
		if i%4 != 3 {
			first[i].Referrer = []string{"a.example", "b.example", "c.example"}[i%4]
			want[clicks.DimReferrer][first[i].Referrer]++
		}
	}
	if _, err := h.clicks.Cfg.Sink.ApplyClicks(context.Background(), []clicks.Batch{{ID: "s1", Clicks: first}, {ID: "s2", Clicks: second}}); err != nil {
		t.Fatal(err)
	}
	return h, code, want
}

// topOf is the first n of m by clicks, then value: what a breakdown lists.
func topOf(m map[string]int64, n int) []clicks.BreakdownEntry {
	var out []clicks.BreakdownEntry
	for v, c := range m {
		out = append(out, clicks.BreakdownEntry{Value: v, Clicks: c})
	}
	for i := range out { // insertion sort: an oracle apart from topEntries
		for j := i; j > 0 && (out[j].Clicks > out[j-1].Clicks || out[j].Clicks == out[j-1].Clicks && out[j].Value < out[j-1].Value); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out[:min(n, len(out))]
}

// GET <api>/links/<code>/stats?group_by= lists each dimension's top values
// over the range on both stores, as JSON and as CSV.
func TestAPIStatsBreakdown(t *testing.T) {
	bothStores(t, func(t *testing.T, s link.Store) {
		day := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
		h, code, want := statsHandler(t, s, day)
		base := "/api/links/" + code + "/stats?from=2026-11-20T00:00:00Z&to=2026-11-22T00:00:00Z"
		for _, dim := range append(clicks.ClickDimensions[:], clicks.DimReferrer) {
			for _, limit := range []int{1, 3, 1000} {
				var st clicks.StatsAnswer
				getJSON(t, h, base+"&group_by="+dim+"&limit="+itoa(int64(limit)), http.StatusOK, &st)
				wantTop := topOf(want[dim], limit)
				for i := range wantTop {
					if clicks.HasUniques(dim) {
						wantTop[i].Uniques = new(int64) // dimMix's clicks have no visitor hash
					}
				}
				if st.GroupBy != dim || !reflect.DeepEqual(st.Breakdown, wantTop) {
					t.Errorf("group_by=%s limit=%d: %s %v, want %v", dim, limit, st.GroupBy, st.Breakdown, wantTop)
				}
			}
		}
		var st clicks.StatsAnswer
		getJSON(t, h, base+"&group_by=country", http.StatusOK, &st)
		if len(st.Breakdown) != min(clicks.DefaultBreakdownLimit, len(want[clicks.DimCountry])) || st.Total != 360 {
			t.Errorf("default limit: %d entries, total %d", len(st.Breakdown), st.Total)
		}
		getJSON(t, h, "/api/links/"+code+"/stats?from=2026-10-01T00:00:00Z&to=2026-10-02T00:00:00Z&group_by=os", http.StatusOK, &st)
		if st.Breakdown == nil || len(st.Breakdown) != 0 {
			t.Errorf("empty range: breakdown %v, want []", st.Breakdown)
		}
		w := serve(t, h, "GET", base+"&group_by=browser&format=csv", "", auth()...)
		rows, err := csv.NewReader(w.Body).ReadAll()
		if w.Code != http.StatusOK || err != nil || len(rows) != len(want[clicks.DimBrowser])+1 || strings.Join(rows[0], ",") != "browser,clicks" {
			t.Fatalf("csv = %d %v %v", w.Code, rows, err)
		}
		for i, e := range topOf(want[clicks.DimBrowser], 10) {
			if rows[i+1][0] != e.Value || rows[i+1][1] != itoa(e.Clicks) {
				t.Errorf("csv row %d = %v, want %v", i+1, rows[i+1], e)
			}
		}
	})
}

// Out-of-bounds group_by and limit are refused with 400 naming the field.
func TestAPIStatsBreakdownRefusals(t *testing.T) {
	h, _ := clickHandler(t, time.Now(), nil)
	code := create(t, h, `{"long_url":"https://example.com/stats"}`).Code
	for q, field := range map[string]string{
		"group_by=planet": "group_by", "group_by=Country": "group_by", "group_by=country&group_by=os": "group_by",
		"group_by=": "group_by", "utm_source=": "", "limit=0": "limit", "limit=1001": "limit", "limit=ten": "limit", "limit=1&limit=2": "limit",
		"group_by=os&limit=-1": "limit", "limit=99999999999999999999": "limit",
	} {
		w := serve(t, h, "GET", "/api/links/"+code+"/stats?"+q, "", auth()...)
		if field == "" {
			if w.Code != http.StatusOK {
				t.Errorf("stats?%s = %d %s, want 200", q, w.Code, w.Body)
			}
			continue
		}
		if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), field) {
			t.Errorf("stats?%s = %d %s, want 400 naming %s", q, w.Code, w.Body, field)
		}
	}
}

// GET <api>/stats counts every link over the range's days on both stores:
// totals, top links (the order of the list's sort=-clicks when the range
// holds every click), countries, referrers and a group_by breakdown, as
// JSON and CSV; a read key suffices.
func TestAPIOverview(t *testing.T) {
	bothStores(t, func(t *testing.T, s link.Store) {
		day := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
		h, code, want := statsHandler(t, s, day)
		other := create(t, h, `{"long_url":"https://example.com/other"}`).Code
		more, want2 := dimMix(other, day.Add(24*time.Hour), 500, 3)
		if _, err := h.clicks.Cfg.Sink.ApplyClicks(context.Background(), []clicks.Batch{{ID: "o1", Clicks: more}}); err != nil {
			t.Fatal(err)
		}
		for dim, m := range want2 {
			for v, n := range m {
				want[dim][v] += n
			}
		}
		var o clicks.Overview
		getJSON(t, h, "/api/stats?from=2026-11-20T06:00:00Z&to=2026-11-21T01:00:00Z&group_by=device&limit=5", http.StatusOK, &o)
		wantLinks := []clicks.LinkClicks{{Code: other, Clicks: 500}, {Code: code, Clicks: 360}}
		if o.Total != 860 || o.People+o.Bots != 860 || !reflect.DeepEqual(o.Links, wantLinks) || o.GroupBy != clicks.DimDevice ||
			!o.From.Equal(day) || !o.To.Equal(day.Add(48*time.Hour)) {
			t.Errorf("overview = %+v, want 860 clicks over 2 days, links %v", o, wantLinks)
		}
		for dim, got := range map[string][]clicks.BreakdownEntry{clicks.DimCountry: o.Countries, clicks.DimReferrer: o.Referrers, clicks.DimDevice: o.Breakdown} {
			if !reflect.DeepEqual(got, topOf(want[dim], 5)) {
				t.Errorf("across links %s = %v, want %v", dim, got, topOf(want[dim], 5))
			}
		}
		var list listResponse
		getJSON(t, h, "/api/links?sort=-clicks", http.StatusOK, &list)
		if len(list.Links) != 2 || list.Links[0].Code != other || list.Links[1].Code != code {
			t.Errorf("list sort=-clicks = %v, want %s then %s as the overview", list.Links, other, code)
		}
		w := serve(t, h, "GET", "/api/stats?from=2026-11-20T00:00:00Z&to=2026-11-22T00:00:00Z&format=csv", "", readAuth()...)
		if w.Code != http.StatusOK || w.Body.String() != "code,clicks\n"+other+",500\n"+code+",360\n" {
			t.Errorf("csv with the read key = %d %q", w.Code, w.Body)
		}
		var none clicks.Overview
		getJSON(t, h, "/api/stats?from=2026-10-01T00:00:00Z&to=2026-10-02T00:00:00Z", http.StatusOK, &none)
		if none.Total != 0 || none.Links == nil || len(none.Links) != 0 || none.Breakdown != nil || none.Countries == nil {
			t.Errorf("empty range = %+v", none)
		}
	})
}

// The across-links endpoint refuses what the link stats refuse, naming the
// field, and only GET and HEAD.
func TestAPIOverviewRefusals(t *testing.T) {
	h, _ := clickHandler(t, time.Now(), nil)
	for q, field := range map[string]string{
		"group_by=planet": "group_by", "limit=0": "limit", "limit=1001": "limit", "format=xml": "format",
		"from=2020-01-01T00:00:00Z&to=2022-01-01T00:00:00Z": "366 days", "from=yesterday": "from", "to=1&to=2": "to",
	} {
		w := serve(t, h, "GET", "/api/stats?"+q, "", auth()...)
		if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), field) {
			t.Errorf("stats?%s = %d %s, want 400 naming %s", q, w.Code, w.Body, field)
		}
	}
	if w := serve(t, h, "POST", "/api/stats", "", auth()...); w.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST /stats = %d, want 405", w.Code)
	}
}
