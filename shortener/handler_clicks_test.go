package shortener

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/edgekit/caddy-edgekit/shortener/clicks"
	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// Handler tests of click counting (issue 5) on an in-memory store that also
// keeps clicks; the real stores' counters are tested in clicks_sink_test.go
// and, wired into the handler, in handler_clicks_nodes_test.go.

// memClickSink is an in-memory Sink: batch IDs applied once, counters
// per hour and per referrer day like the real sinks keep.
type memClickSink struct {
	mu        sync.Mutex
	seen      map[string]bool
	hourly    map[clicks.HourKey]*[2]int64 // people, bots
	referrers map[clicks.RefKey]int64

	// If gate is set, ApplyClicks signals entered and waits until gate is
	// closed: a store that hangs.
	gate, entered chan struct{}
}

func (s *memClickSink) ApplyClicks(ctx context.Context, batches []clicks.Batch) (int, error) {
	if s.gate != nil {
		select {
		case s.entered <- struct{}{}:
		default:
		}
		select {
		case <-s.gate:
		case <-ctx.Done():
		}
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen == nil {
		s.seen, s.hourly, s.referrers = map[string]bool{}, map[clicks.HourKey]*[2]int64{}, map[clicks.RefKey]int64{}
	}
	var fresh []clicks.Batch
	for _, b := range batches {
		if !s.seen[b.ID] {
			s.seen[b.ID] = true
			fresh = append(fresh, b)
		}
	}
	a := clicks.AggregateClicks(fresh)
	for k, v := range a.Hourly {
		if s.hourly[k] == nil {
			s.hourly[k] = new([2]int64)
		}
		s.hourly[k][0] += v[0]
		s.hourly[k][1] += v[1]
	}
	for k, n := range a.Referrers {
		s.referrers[k] += n
	}
	return len(fresh), nil
}

func (s *memClickSink) ClickStats(ctx context.Context, code string, from, to time.Time) (clicks.Stats, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := clicks.Stats{Code: code, Hourly: []link.HourlyClicks{}, Referrers: []clicks.ReferrerClicks{}}
	for hr := clicks.HourFloor(from); hr.Before(to); hr = hr.Add(time.Hour) {
		if v := s.hourly[clicks.HourKey{Code: code, Hour: hr.Unix()}]; v != nil {
			st.Hourly = append(st.Hourly, link.HourlyClicks{Hour: hr, People: v[0], Bots: v[1]})
			st.People += v[0]
			st.Bots += v[1]
		}
	}
	st.Total = st.People + st.Bots
	firstDay, endDay := clicks.DayRange(from, to)
	hosts := map[string]int64{}
	for k, n := range s.referrers {
		if k.Code == code && k.Day >= firstDay.Unix() && k.Day < endDay.Unix() {
			hosts[k.Host] += n
		}
	}
	st.Referrers = clicks.RankReferrers(hosts)
	return st, nil
}

// ClickBreakdown lists referrer hosts only, and Overview totals only:
// the handler tests on this sink do not read the dimensions or the top
// links (those run on both real sinks).
func (s *memClickSink) ClickBreakdown(ctx context.Context, code, dim string, from, to time.Time, limit int) ([]clicks.BreakdownEntry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	first, end := clicks.DayRange(from, to)
	sums := map[string]int64{}
	for k, n := range s.referrers {
		if dim == clicks.DimReferrer && (code == "" || k.Code == code) && k.Day >= first.Unix() && k.Day < end.Unix() {
			sums[k.Host] += n
		}
	}
	return clicks.TopEntries(sums, limit), nil
}

func (s *memClickSink) ClickOverview(ctx context.Context, from, to time.Time, limit int) (clicks.Overview, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	first, end := clicks.DayRange(from, to)
	o := clicks.Overview{From: first, To: end, Links: []clicks.LinkClicks{}}
	for k, v := range s.hourly {
		if k.Hour >= first.Unix() && k.Hour < end.Unix() {
			o.People, o.Bots = o.People+v[0], o.Bots+v[1]
		}
	}
	o.Total = o.People + o.Bots
	return o, nil
}

func (s *memClickSink) ClickTotal(ctx context.Context, code string) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for k, v := range s.hourly {
		if k.Code == code {
			n += v[0] + v[1]
		}
	}
	return n, nil
}

// clickMemStore is a memStore that keeps clicks too (a Store and a
// Sink), so the handler counts clicks with it.
type clickMemStore struct {
	*memStore
	*memClickSink
}

func newClickMemStore() clickMemStore {
	return clickMemStore{newMemStore(), new(memClickSink)}
}

// clickHandler is a handler on a clickMemStore at a fixed clock, flushing
// clicks every 10ms.
func clickHandler(t *testing.T, now time.Time, configure func(*Handler)) (*Handler, clickMemStore) {
	t.Helper()
	s := newClickMemStore()
	h := newHandler(t, s, func(h *Handler) {
		h.now = func() time.Time { return now }
		h.ClicksInterval = caddy.Duration(10 * time.Millisecond)
		if configure != nil {
			configure(h)
		}
	})
	if h.clicks == nil {
		t.Fatal("click counting is off on a store that keeps clicks")
	}
	return h, s
}

// waitCodeTotal waits until the sink counted want clicks for code, then checks
// that no more arrive over a few flush intervals.
func waitCodeTotal(t *testing.T, s clicks.Sink, code string, want int64) {
	t.Helper()
	total := func() int64 {
		n, err := s.ClickTotal(context.Background(), code)
		if err != nil {
			t.Fatalf("ClickTotal(%q): %v", code, err)
		}
		return n
	}
	eventually(t, 20*time.Second, "clicks counted", func() bool { return total() >= want })
	time.Sleep(100 * time.Millisecond)
	if n := total(); n != want {
		t.Fatalf("ClickTotal(%q) = %d, want %d", code, n, want)
	}
}

func getJSON(t *testing.T, h *Handler, target string, wantStatus int, out any) {
	t.Helper()
	w := serve(t, h, "GET", target, "", auth()...)
	if w.Code != wantStatus {
		t.Fatalf("GET %s = %d %s, want %d", target, w.Code, w.Body, wantStatus)
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("GET %s: Content-Type %q, want application/json", target, ct)
	}
	if err := json.Unmarshal(w.Body.Bytes(), out); err != nil {
		t.Fatalf("GET %s: decoding %s: %v", target, w.Body, err)
	}
}

// Which redirects count, what the stats API answers for them, and the
// clicks field of a link.
func TestClicksCountedAndStatsAPI(t *testing.T) {
	now := time.Date(2026, 11, 29, 10, 42, 0, 0, time.UTC)
	h, s := clickHandler(t, now, nil)
	code := create(t, h, `{"long_url":"https://example.com/landing"}`).Code
	gone := create(t, h, `{"long_url":"https://example.com/gone"}`).Code
	if w := serve(t, h, "DELETE", "/api/links/"+gone, "", auth()...); w.Code != http.StatusNoContent {
		t.Fatalf("DELETE = %d", w.Code)
	}
	const browser = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36"
	for _, tc := range []struct {
		method string
		header []string
		want   int
	}{
		{"GET", []string{"User-Agent", browser, "Referer", "https://News.Example.com/a?b=c"}, http.StatusFound},
		{"GET", []string{"User-Agent", browser, "Referer", "https://news.example.com/other"}, http.StatusFound},
		{"GET", []string{"User-Agent", browser, "Referer", "https://blog.example.org/"}, http.StatusFound},
		{"GET", []string{"User-Agent", "MyApp/2.1 (iOS)"}, http.StatusFound},
		{"GET", []string{"User-Agent", "curl/8.5.0"}, http.StatusFound},
		{"GET", []string{"User-Agent", "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)"}, http.StatusFound},
		{"GET", nil, http.StatusFound}, // no user agent: a script
		// Not counted:
		{"HEAD", []string{"User-Agent", browser}, http.StatusFound},
		{"GET", []string{"User-Agent", browser, "Sec-Purpose", "prefetch"}, http.StatusFound},
		{"GET", []string{"User-Agent", browser, "Sec-Purpose", "prefetch;prerender"}, http.StatusFound},
		{"GET", []string{"User-Agent", browser, "Purpose", "prefetch"}, http.StatusFound},
	} {
		if w := serve(t, h, tc.method, "/"+code, "", tc.header...); w.Code != tc.want {
			t.Fatalf("%s /%s %v = %d, want %d", tc.method, code, tc.header, w.Code, tc.want)
		}
	}
	for _, tc := range []struct {
		path string
		want int
	}{{"/" + gone, http.StatusGone}, {"/nosuch1", http.StatusNotFound}, {"/bad!code", http.StatusNotFound}} {
		if w := serve(t, h, "GET", tc.path, "", "User-Agent", browser); w.Code != tc.want {
			t.Fatalf("GET %s = %d, want %d", tc.path, w.Code, tc.want)
		}
	}
	waitCodeTotal(t, s, code, 7)
	for _, c := range []string{gone, "nosuch1"} {
		if n, _ := s.ClickTotal(context.Background(), c); n != 0 {
			t.Errorf("%s counted %d clicks, want 0 (410 and 404 do not count)", c, n)
		}
	}

	var st clicks.StatsAnswer
	getJSON(t, h, "/api/links/"+code+"/stats", http.StatusOK, &st)
	want := clicks.Stats{
		Code: code, Total: 7, People: 4, Bots: 3,
		Hourly:    []link.HourlyClicks{{Hour: time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC), People: 4, Bots: 3}},
		Referrers: []clicks.ReferrerClicks{{Host: "news.example.com", Count: 2}, {Host: "blog.example.org", Count: 1}},
	}
	series := st.Timeseries
	if st.Granularity != clicks.GranularityDay || st.TZ != "UTC" || len(series) != 31 || series[0].Start.After(now.Add(-clicks.DefaultStatsWindow)) {
		t.Errorf("default series: %s in %s, %d points from %v, want 31 days in UTC", st.Granularity, st.TZ, len(series), series[0].Start)
	}
	if last := series[len(series)-1]; last.Start != time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC) || last.Clicks != 7 || last.People != 4 || last.Bots != 3 {
		t.Errorf("default series ends with %+v, want 2026-11-29 with the 7 clicks", last)
	}
	if !statsEqual(st.Stats, want) {
		t.Errorf("stats = %+v, want %+v", st, want)
	}
	// The same hour in a zone half an hour off UTC, by hour and by week.
	getJSON(t, h, "/api/links/"+code+"/stats?from=2026-11-29T09:00:00Z&to=2026-11-29T12:00:00Z&granularity=hour&tz=Asia/Kolkata", http.StatusOK, &st)
	if got := seriesString(st.Timeseries); got != "2026-11-29T14:30:00+05:30 0 0 0, 2026-11-29T15:30:00+05:30 7 4 3, 2026-11-29T16:30:00+05:30 0 0 0" {
		t.Errorf("hourly series in Asia/Kolkata = %s", got)
	}
	getJSON(t, h, "/api/links/"+code+"/stats?granularity=week&tz=America/New_York&from=2026-11-20T00:00:00Z&to=2026-12-01T00:00:00Z", http.StatusOK, &st)
	if got := seriesString(st.Timeseries); got != "2026-11-16T00:00:00-05:00 0 0 0, 2026-11-23T00:00:00-05:00 7 4 3, 2026-11-30T00:00:00-05:00 0 0 0" {
		t.Errorf("weekly series in America/New_York = %s", got)
	}
	// The same series as CSV.
	w := serve(t, h, "GET", "/api/links/"+code+"/stats?from=2026-11-29T09:00:00Z&to=2026-11-29T11:00:00Z&granularity=hour&format=csv", "", auth()...)
	if want := "start,clicks,people,bots,uniques\n2026-11-29T09:00:00Z,0,0,0,\n2026-11-29T10:00:00Z,7,4,3,\n"; w.Code != http.StatusOK ||
		w.Body.String() != want || w.Header().Get("Content-Type") != "text/csv; charset=utf-8" ||
		w.Header().Get("Content-Disposition") != `attachment; filename="`+code+`-clicks.csv"` {
		t.Errorf("stats as CSV = %d %q %v, want 200 %q", w.Code, w.Body, w.Header(), want)
	}
	// The raw JSON has the documented shape.
	w = serve(t, h, "GET", "/api/links/"+code+"/stats", "", auth()...)
	for _, k := range []string{`"code":`, `"total":7`, `"people":4`, `"bots":3`, `"hourly":[{"hour":"2026-11-29T10:00:00Z","people":4,"bots":3}]`,
		`"referrers":[{"host":"news.example.com","count":2},{"host":"blog.example.org","count":1}]`} {
		if !strings.Contains(w.Body.String(), k) {
			t.Errorf("stats body %s lacks %s", w.Body, k)
		}
	}

	// A window that misses the hour: zero, with empty lists (not null).
	w = serve(t, h, "GET", "/api/links/"+code+"/stats?from=2026-11-29T11:00:00Z&to=2026-11-29T12:00:00Z", "", auth()...)
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"total":0`) ||
		!strings.Contains(w.Body.String(), `"hourly":[]`) {
		t.Errorf("stats of an empty window = %d %s, want 200, total 0 and hourly []", w.Code, w.Body)
	}
	// An explicit window around the hour.
	getJSON(t, h, "/api/links/"+code+"/stats?from=2026-11-29T10:30:00Z&to=2026-11-29T10:45:00%2B00:00", http.StatusOK, &st)
	if st.Total != 7 || len(st.Hourly) != 1 {
		t.Errorf("stats 10:30..10:45 = %+v, want the 10:00 hour's 7 clicks", st)
	}

	var link map[string]any
	getJSON(t, h, "/api/links/"+code, http.StatusOK, &link)
	if link["clicks"] != float64(7) {
		t.Errorf("GET link: clicks = %v, want 7 (%v)", link["clicks"], link)
	}
	getJSON(t, h, "/api/links/"+gone, http.StatusOK, &link)
	if link["clicks"] != float64(0) {
		t.Errorf("GET revoked link: clicks = %v, want 0 (%v)", link["clicks"], link)
	}
	// Reads through the API count nothing.
	waitCodeTotal(t, s, code, 7)
}

// seriesString is "start clicks people bots, ..." with start in RFC 3339.
func seriesString(points []clicks.SeriesPoint) string {
	var out []string
	for _, p := range points {
		out = append(out, fmt.Sprintf("%s %d %d %d", p.Start.Format(time.RFC3339), p.Clicks, p.People, p.Bots))
	}
	return strings.Join(out, ", ")
}

func statsEqual(a, b clicks.Stats) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

func TestClicksStatsAPIErrors(t *testing.T) {
	now := time.Date(2026, 11, 29, 10, 42, 0, 0, time.UTC)
	h, _ := clickHandler(t, now, nil)
	code := create(t, h, `{"long_url":"https://example.com/x"}`).Code
	for _, tc := range []struct {
		method, target string
		header         []string
		status         int
		msg            string
	}{
		{"GET", "/api/links/" + code + "/stats?from=yesterday", auth(), 400, "from must be an RFC 3339 time"},
		{"GET", "/api/links/" + code + "/stats?to=2026-13-01T00:00:00Z", auth(), 400, "to must be an RFC 3339 time"},
		{"GET", "/api/links/" + code + "/stats?from=2026-11-02T00:00:00Z&from=2026-11-03T00:00:00Z", auth(), 400, "from: given 2 times"},
		{"GET", "/api/links/" + code + "/stats?from=2026-11-29T12:00:00Z&to=2026-11-29T11:00:00Z", auth(), 400, "from is after to"},
		{"GET", "/api/links/" + code + "/stats?from=2024-01-01T00:00:00Z", auth(), 400, "longer than 366 days"},
		{"GET", "/api/links/" + code + "/stats?granularity=year", auth(), 400, "granularity must be one of hour, day, week, month"},
		{"GET", "/api/links/" + code + "/stats?granularity=day&granularity=hour", auth(), 400, "granularity: given 2 times"},
		{"GET", "/api/links/" + code + "/stats?tz=Mars/Olympus", auth(), 400, `tz: unknown time zone "Mars/Olympus"`},
		{"GET", "/api/links/" + code + "/stats?format=xml", auth(), 400, "format must be json or csv"},
		{"GET", "/api/links/" + code + "/stats?tz=Local", auth(), 400, "tz must be an IANA time zone name"},
		{"GET", "/api/links/" + code + "/stats?tz=../../etc/passwd", auth(), 400, "tz must be an IANA time zone name"},
		{"GET", "/api/links/" + code + "/stats?tz=" + strings.Repeat("A", 65), auth(), 400, "tz must be an IANA time zone name"},
		{"GET", "/api/links/nosuch1/stats", auth(), 404, "link not found"},
		{"GET", "/api/links/bad!code/stats", auth(), 404, "link not found"},
		{"GET", "/api/links//stats", auth(), 404, "link not found"},
		{"POST", "/api/links/" + code + "/stats", auth(), 405, "method POST not allowed"},
		{"DELETE", "/api/links/" + code + "/stats", auth(), 405, "method DELETE not allowed"},
		{"GET", "/api/links/" + code + "/stats", nil, 401, "missing or invalid API key"},
		{"GET", "/api/links/" + code + "/stats/more", auth(), 404, "no such API endpoint"},
	} {
		w := serve(t, h, tc.method, tc.target, "", tc.header...)
		var out map[string]string
		if w.Code != tc.status || json.Unmarshal(w.Body.Bytes(), &out) != nil || !strings.Contains(out["error"], tc.msg) {
			t.Errorf("%s %s = %d %s, want %d with an error containing %q", tc.method, tc.target, w.Code, w.Body, tc.status, tc.msg)
		}
	}
	if w := serve(t, h, "POST", "/api/links/"+code+"/stats", "", auth()...); w.Header().Get("Allow") != "GET, HEAD" {
		t.Errorf("405 Allow = %q, want GET, HEAD", w.Header().Get("Allow"))
	}
}

// With clicks off nothing is recorded, links have no clicks field and the
// stats endpoint does not exist.
func TestClicksOff(t *testing.T) {
	s := newClickMemStore()
	h := newHandler(t, s, func(h *Handler) { h.ClicksOff = true })
	if h.clicks != nil {
		t.Fatal("clicks off, but a recorder was started")
	}
	code := create(t, h, `{"long_url":"https://example.com/x"}`).Code
	if w := serve(t, h, "GET", "/"+code, ""); w.Code != http.StatusFound {
		t.Fatalf("redirect = %d", w.Code)
	}
	var link map[string]any
	getJSON(t, h, "/api/links/"+code, http.StatusOK, &link)
	if _, ok := link["clicks"]; ok {
		t.Errorf("GET link with clicks off has clicks: %v", link)
	}
	var e map[string]string
	getJSON(t, h, "/api/links/"+code+"/stats", http.StatusNotFound, &e)
	if e["error"] != "click counting is off" {
		t.Errorf("stats with clicks off: %v", e)
	}
	if len(s.seen) != 0 {
		t.Errorf("%d click batches applied with clicks off", len(s.seen))
	}
}

// A store given to the handler that keeps no clicks (a plain test store)
// runs without click counting rather than failing.
func TestClicksStoreWithoutClicks(t *testing.T) {
	h := newHandler(t, newMemStore(), nil)
	if h.clicks != nil {
		t.Fatal("a recorder was started on a store that keeps no clicks")
	}
	var e map[string]string
	code := create(t, h, `{"long_url":"https://example.com/x"}`).Code
	getJSON(t, h, "/api/links/"+code+"/stats", http.StatusNotFound, &e)
}

// A full buffer drops clicks and counts them in the metric; the redirects
// still answer at once, and the buffered clicks are counted later.
func TestClicksBufferFullDrops(t *testing.T) {
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	s := newClickMemStore()
	s.gate, s.entered = make(chan struct{}), make(chan struct{}, 1)
	h := newHandler(t, s, func(h *Handler) {
		h.now = func() time.Time { return now }
		h.ClicksBuffer = 8
		h.ClicksBatch = 1
	})
	code := create(t, h, `{"long_url":"https://example.com/x"}`).Code
	redirect := func() {
		if w := serve(t, h, "GET", "/"+code, "", "User-Agent", "Mozilla/5.0"); w.Code != http.StatusFound {
			t.Fatalf("redirect = %d", w.Code)
		}
	}
	redirect()
	<-s.entered // the writer is stuck delivering the first click
	for range 19 {
		redirect()
	}
	if d := h.clicks.Dropped(); d != 11 {
		t.Errorf("dropped %d, want 11 (1 in flight, 8 buffered)", d)
	}
	if m := counterValue(h.clicks.DroppedCounter); m != 11 {
		t.Errorf("caddy_shortener_clicks_dropped_total = %v, want 11", m)
	}
	close(s.gate)
	waitCodeTotal(t, s, code, 9)
}
