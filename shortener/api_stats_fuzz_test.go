package shortener

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/clicks"
)

// statsParams are the query parameters the stats endpoints read.
var statsParams = []string{"from", "to", "granularity", "tz", "group_by", "limit", "format"}

// FuzzStatsBreakdownQueries sends any query string to a link's stats and
// to the stats across links, on an embedded store with clicks in every
// dimension. Properties: the answer is 200 or 400, never a 5xx; a 400's
// error names one of the parameters given; a JSON 200 with group_by lists
// at most limit values of that dimension, most clicks first, none with
// more clicks than the total.
func FuzzStatsBreakdownQueries(f *testing.F) {
	for _, seed := range []string{
		"", "group_by=country", "group_by=city&limit=1000", "group_by=referrer&format=csv", "group_by=os&limit=0",
		"group_by=Browser", "group_by=device&group_by=os", "limit=1001", "limit=-5", "limit=%2B3", "limit=1e3",
		"group_by=%00", "group_by=region&from=2026-11-19T00:00:00Z&to=2026-11-23T00:00:00Z", "limit=2&format=csv",
		"from=2026-11-21T00:00:00Z&to=2026-11-20T00:00:00Z", "group_by=country&tz=Europe/Paris&granularity=hour",
	} {
		f.Add(seed)
	}
	h := newHandler(f, openFuzzEmbedded(f), withReadKey)
	code := create(f, h, `{"long_url":"https://example.com/fuzz"}`).Code
	day := time.Now().UTC().Truncate(24 * time.Hour).Add(-48 * time.Hour)
	mix, _ := dimMix(code, day, 300, 0)
	if _, err := h.clicks.Cfg.Sink.ApplyClicks(context.Background(), []clicks.Batch{{ID: "fz", Clicks: mix}}); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, query string) {
		query = requestTargetSafe(query)
		given, _ := url.ParseQuery(query)
		for _, path := range []string{"/api/links/" + code + "/stats?", "/api/stats?"} {
			w := serve(t, h, "GET", path+query, "", readAuth()...)
			switch w.Code {
			case http.StatusBadRequest:
				if !namesGiven(w.Body.String(), given) {
					t.Fatalf("GET %s%s: 400 %s names none of the parameters given", path, query, w.Body)
				}
			case http.StatusOK:
				if strings.HasPrefix(w.Header().Get("Content-Type"), "application/json") {
					checkBreakdownAnswer(t, path+query, given, w.Body.Bytes())
				}
			default:
				t.Fatalf("GET %s%s: status %d %s", path, query, w.Code, w.Body)
			}
		}
	})
}

func namesGiven(body string, given url.Values) bool {
	for _, p := range statsParams {
		if _, ok := given[p]; ok && strings.Contains(body, p) {
			return true
		}
	}
	return false
}

// checkBreakdownAnswer checks a JSON stats answer's breakdown against the
// query: the dimension asked for, at most limit values, in order.
func checkBreakdownAnswer(t *testing.T, target string, given url.Values, body []byte) {
	t.Helper()
	var a struct {
		Total     int64                   `json:"total"`
		AllTime   *clicks.Totals          `json:"all_time"`
		GroupBy   string                  `json:"group_by"`
		Breakdown []clicks.BreakdownEntry `json:"breakdown"`
	}
	if err := json.Unmarshal(body, &a); err != nil {
		t.Fatalf("GET %s: %v", target, err)
	}
	if a.GroupBy != given.Get("group_by") {
		t.Fatalf("GET %s: group_by %q in the answer", target, a.GroupBy)
	}
	limit := clicks.DefaultBreakdownLimit
	if l := given.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil {
			t.Fatalf("GET %s: 200 for limit %q", target, l)
		}
		limit = n
	}
	if a.AllTime != nil { // a link's window may cut its days; the breakdown counts them whole
		a.Total = a.AllTime.Total
	}
	if len(a.Breakdown) > limit {
		t.Fatalf("GET %s: %d values, more than limit %d", target, len(a.Breakdown), limit)
	}
	for i, e := range a.Breakdown {
		if e.Clicks > a.Total || e.Clicks <= 0 || i > 0 && e.Clicks > a.Breakdown[i-1].Clicks {
			t.Fatalf("GET %s: breakdown %v out of order or over the total %d", target, a.Breakdown, a.Total)
		}
	}
}
