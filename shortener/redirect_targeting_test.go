package shortener

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/edgekit/caddy-edgekit/internal/pgpool"
	"github.com/edgekit/caddy-edgekit/internal/redispool"
	"github.com/edgekit/caddy-edgekit/internal/testenv"
	"github.com/edgekit/caddy-edgekit/shortener/clicks"
	"github.com/edgekit/caddy-edgekit/shortener/link"
)

const (
	iphoneUA  = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1"
	windowsUA = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36"
	firefoxUA = "Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0"
)

// visit is one request: from the client address remote (host:port),
// with header name, value pairs.
func visit(t testing.TB, h *Handler, method, target, remote string, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(method, "http://sho.rt"+target, nil)
	if remote != "" {
		r.RemoteAddr = remote
	}
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	r = r.WithContext(context.WithValue(r.Context(), caddy.ReplacerCtxKey, caddy.NewReplacer()))
	w := httptest.NewRecorder()
	if err := h.ServeHTTP(w, r, nextHandler); err != nil {
		var he caddyhttp.HandlerError
		if !errors.As(err, &he) {
			t.Fatalf("%s %s: %v", method, target, err)
		}
		w.Code = he.StatusCode
	}
	return w
}

// putLink stores l straight in h's store and publishes it as the API
// does (code filter, Redis, every instance's L1), and waits until the
// other instances' code filters know it.
func putLink(t testing.TB, h *Handler, l link.Link, others ...*Handler) {
	t.Helper()
	ctx := context.Background()
	if l.CreatedAt.IsZero() {
		l.CreatedAt = time.Now()
	}
	if err := h.store.Create(ctx, l); err != nil {
		t.Fatalf("Create(%s): %v", l.Code, err)
	}
	if err := h.cache.publishLink(ctx, l); err != nil {
		t.Fatalf("publishLink(%s): %v", l.Code, err)
	}
	for _, o := range others {
		eventually(t, 5*time.Second, "the other instance knows "+l.Code, func() bool { return o.cache.codes.mayExist(l.Code) })
	}
}

// targetingStore provisions handlers on one store with Redis: twice for
// two instances sharing both.
type targetingStore struct {
	name string
	mk   func(t *testing.T, configure func(*Handler)) (*Handler, *Handler)
}

// targetingStores are PostgreSQL and the embedded store, each with Redis
// and a GeoIP file (clicks_geoip), source_header on and app scheme myapp.
func targetingStores(t *testing.T) []targetingStore {
	geo := filepath.Join(t.TempDir(), "city.mmdb")
	writeGeoDB(t, geo, "GeoLite2-City", testCityNets)
	base := func(h *Handler, prefix string, configure func(*Handler)) {
		h.Redis = &redispool.Config{URL: testenv.RedisURL(t), KeyPrefix: prefix}
		h.ClicksGeoIP, h.SourceHeader, h.AppSchemes = geo, true, []string{"myapp"}
		if configure != nil {
			configure(h)
		}
	}
	return []targetingStore{
		{"postgres", func(t *testing.T, configure func(*Handler)) (*Handler, *Handler) {
			dsn := testenv.Postgres(t)
			_, prefix := testenv.Redis(t)
			mk := func(name string) *Handler {
				s, _ := openPostgresOwn(t, dsn, pgpool.Settings{StatementTimeout: 5 * time.Second, ApplicationName: name})
				return newHandler(t, s, func(h *Handler) { base(h, prefix, configure) })
			}
			return mk("node-a"), mk("node-b")
		}},
		{"embedded", func(t *testing.T, configure func(*Handler)) (*Handler, *Handler) {
			path, data := filepath.Join(t.TempDir(), "links.db"), t.TempDir()
			_, prefix := testenv.Redis(t)
			mk := func() *Handler {
				h := &Handler{Path: path, API: "/api", APIKeys: []string{testKey}, dataDir: data}
				base(h, prefix, configure)
				if err := provision(t, h); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() {
					if err := h.Cleanup(); err != nil {
						t.Errorf("Cleanup: %v", err)
					}
				})
				return h
			}
			return mk(), mk()
		}},
	}
}

// conditionCases are one rule per condition kind, with a visit it holds
// for and one it does not: remote address, then header pairs.
var conditionCases = []struct {
	kind, cond string
	yes, no    []string
}{
	{"device", `{"device":["mobile"]}`, []string{"", "User-Agent", iphoneUA}, []string{"", "User-Agent", windowsUA}},
	{"os", `{"os":["windows"]}`, []string{"", "User-Agent", windowsUA}, []string{"", "User-Agent", iphoneUA}},
	{"browser", `{"browser":["firefox"]}`, []string{"", "User-Agent", firefoxUA}, []string{"", "User-Agent", windowsUA}},
	{"country", `{"country":["DE"]}`, []string{"203.0.113.9:1"}, []string{"198.51.100.7:1"}},
	{"language", `{"language":["fr"]}`, []string{"", "Accept-Language", "fr-CA,fr;q=0.9,en;q=0.5"}, []string{"", "Accept-Language", "de-DE,en;q=0.5"}},
	{"ip", `{"ip":["192.0.2.0/28"]}`, []string{"192.0.2.3:9"}, []string{"192.0.2.200:9"}},
	{"query", `{"query":[{"name":"src","equals":"qr"}]}`, []string{"?src=qr"}, []string{"?src=web"}},
	{"time", `{"time":{"from":"2020-01-01T00:00:00Z","until":"2999-01-01T00:00:00Z"}}`, []string{""}, nil},
	{"time-future", `{"time":{"from":"2998-01-01T00:00:00Z"}}`, nil, []string{""}},
}

// request turns a case's visit into a target, remote address and headers.
func request(code string, v []string) (target, remote string, header []string) {
	target = "/" + code
	if len(v) > 0 {
		if strings.HasPrefix(v[0], "?") {
			target += v[0]
		} else {
			remote = v[0]
		}
		header = v[1:]
	}
	return target, remote, header
}

// Each condition kind decides a real redirect on both stores with Redis,
// first from the store, then from L1 on the same instance and from Redis
// on the other; X-Shortener-Rule names the rule.
func TestTargetingConditions(t *testing.T) {
	for _, st := range targetingStores(t) {
		t.Run(st.name, func(t *testing.T) {
			a, b := st.mk(t, nil)
			for _, c := range conditionCases {
				code := "c" + strings.ReplaceAll(c.kind, "-", "") + testenv.RandomID(4)
				rule := fmt.Sprintf(`{"rules":[{"name":"r-%s","if":%s,"url":"https://example.com/%s"}]}`, c.kind, c.cond, c.kind)
				putLink(t, a, link.Link{Code: code, LongURL: "https://example.com/long", Targeting: []byte(rule)}, b)
				for _, h := range []*Handler{a, a, b} {
					check := func(v []string, want, wantRule string) {
						if v == nil {
							return
						}
						target, remote, header := request(code, v)
						w := visit(t, h, "GET", target, remote, header...)
						loc := strings.Split(w.Header().Get("Location"), "?")[0]
						if w.Code != http.StatusFound || loc != want || w.Header().Get("X-Shortener-Rule") != wantRule {
							t.Errorf("%s: GET %s from %q %v = %d %q rule %q (source %s), want 302 %q rule %q", c.kind, target, remote, header,
								w.Code, loc, w.Header().Get("X-Shortener-Rule"), w.Header().Get("X-Shortener-Source"), want, wantRule)
						}
					}
					check(c.yes, "https://example.com/"+c.kind, "r-"+c.kind)
					check(c.no, "https://example.com/long", "")
				}
			}
		})
	}
}

// A rule edited in the store and published as the API publishes reaches
// the other instance, as a long-URL edit does.
func TestTargetingEditReachesOtherInstance(t *testing.T) {
	for _, st := range targetingStores(t) {
		t.Run(st.name, func(t *testing.T) {
			a, b := st.mk(t, nil)
			code := "edit" + testenv.RandomID(4)
			putLink(t, a, link.Link{Code: code, LongURL: "https://example.com/long",
				Targeting: []byte(`{"rules":[{"if":{"language":["fr"]},"url":"https://example.com/fr"}]}`)}, b)
			fr := []string{"Accept-Language", "fr"}
			for _, h := range []*Handler{a, b} {
				if w := visit(t, h, "GET", "/"+code, "", fr...); w.Header().Get("Location") != "https://example.com/fr" {
					t.Fatalf("before the edit: %d %q", w.Code, w.Header().Get("Location"))
				}
			}
			ctx := context.Background()
			ed, _ := a.editor()
			edited, err := ed.Edit(ctx, code, link.Edit{At: time.Now(), Apply: func(l *link.Link) error {
				l.Targeting = []byte(`{"rules":[{"if":{"language":["fr"]},"url":"https://example.com/fr2"}]}`)
				return nil
			}})
			if err != nil {
				t.Fatal(err)
			}
			if err := a.cache.publishLink(ctx, edited); err != nil {
				t.Fatal(err)
			}
			eventually(t, 5*time.Second, "b serves the edited rule", func() bool {
				return visit(t, b, "GET", "/"+code, "", fr...).Header().Get("Location") == "https://example.com/fr2"
			})
			if w := visit(t, a, "GET", "/"+code, "", fr...); w.Header().Get("Location") != "https://example.com/fr2" {
				t.Errorf("a after the edit: %q", w.Header().Get("Location"))
			}
		})
	}
}

// A 30/70 split over many distinct visitors, half of them on each
// instance, is within 2 points on both stores; one visitor sees one
// variant on every visit and on both instances.
func TestTargetingSplit(t *testing.T) {
	for _, st := range targetingStores(t) {
		t.Run(st.name, func(t *testing.T) { testTargetingSplit(t, st.mk) })
	}
}

func testTargetingSplit(t *testing.T, mk func(*testing.T, func(*Handler)) (*Handler, *Handler)) {
	a, b := mk(t, nil)
	code := "ab" + testenv.RandomID(4)
	putLink(t, a, link.Link{Code: code, LongURL: "https://example.com/long", Targeting: []byte(
		`{"variants":[{"name":"a","url":"https://example.com/a","weight":30},{"name":"b","url":"https://example.com/b","weight":70}]}`)}, b)
	const n = 10000
	seen := map[string]int{}
	for i := range n {
		remote := fmt.Sprintf("10.%d.%d.%d:1", i>>16&255, i>>8&255, i&255)
		ua := fmt.Sprintf("%s v%d", firefoxUA, i%7)
		w := visit(t, []*Handler{a, b}[i%2], "GET", "/"+code, remote, "User-Agent", ua)
		seen[w.Header().Get("X-Shortener-Variant")]++
	}
	if pa := float64(seen["a"]) * 100 / n; pa < 28 || pa > 32 || seen["a"]+seen["b"] != n {
		t.Errorf("split over %d visitors: %v (a %.2f%%), want 30%% ± 2", n, seen, pa)
	}
	for i := range 20 {
		remote, ua := fmt.Sprintf("203.0.113.%d:5", i), fmt.Sprintf("ua-%d", i)
		first := visit(t, a, "GET", "/"+code, remote, "User-Agent", ua).Header().Get("X-Shortener-Variant")
		for j := range 5 {
			h := []*Handler{a, b}[j%2]
			w := visit(t, h, "GET", "/"+code, remote, "User-Agent", ua)
			if v := w.Header().Get("X-Shortener-Variant"); v != first || w.Header().Get("Location") != "https://example.com/"+first {
				t.Errorf("visitor %d, visit %d: variant %q %q, want %q", i, j, v, w.Header().Get("Location"), first)
			}
		}
	}
}

// sipHash24 gives the reference vectors of the SipHash paper (key
// 00..0f, messages 00..n-1).
func TestSipHash24(t *testing.T) {
	k := [2]uint64{0x0706050403020100, 0x0f0e0d0c0b0a0908}
	m := make([]byte, 16)
	for i := range m {
		m[i] = byte(i)
	}
	for n, want := range map[int]uint64{0: 0x726fdb47dd0e0e31, 1: 0x74f839c593dc67fd, 15: 0xa129ca6149be45e5, 8: 0x93f5f5799a932462} {
		if got := sipHash24(k, m[:n]); got != want {
			t.Errorf("sipHash24(00..%d) = %#x, want %#x", n, got, want)
		}
	}
}

// FuzzRedirectTargeting: whatever a client sends (user agent, language,
// query, address), a link with every kind of condition answers a redirect
// or its app page, never a panic or a 5xx.
func FuzzRedirectTargeting(f *testing.F) {
	f.Add(iphoneUA, "fr-CA,fr;q=0.9", "src=qr&x=%zz", "203.0.113.9:1")
	f.Add("", strings.Repeat("a-", 3000), strings.Repeat("&", 5000), "[::ffff:198.51.100.7]:80")
	f.Add("\x00\xff", "*;q=abc,,;", "a=%", "not an address")
	h := newHandler(f, newMemStore(), func(h *Handler) { h.AppSchemes = []string{"myapp"}; h.SourceHeader = true })
	putLink(f, h, link.Link{Code: "fuzzed", LongURL: "https://example.com/long", FallbackURL: "https://example.com/fb", Targeting: []byte(`{"rules":[
		{"if":{"os":["ios"],"language":["fr"]},"url":"https://example.com/ios","app_url":"myapp://x"},
		{"if":{"device":["desktop"],"browser":["firefox"],"ip":["10.0.0.0/8"]},"url":"https://example.com/d"},
		{"if":{"query":[{"name":"src","equals":"qr"}],"time":{"days":["mon","tue"]}},"variants":[{"name":"a","url":"https://example.com/a","weight":50},{"name":"b","url":"https://example.com/b","weight":50}]}],
		"variants":[{"name":"x","url":"https://example.com/x","weight":10},{"name":"y","url":"https://example.com/y","weight":90}]}`)})
	f.Fuzz(func(t *testing.T, ua, lang, query, remote string) {
		r := httptest.NewRequest("GET", "http://sho.rt/fuzzed", nil)
		r.URL.RawQuery, r.RemoteAddr = query, remote
		r.Header["User-Agent"], r.Header["Accept-Language"] = []string{ua}, []string{lang}
		r = r.WithContext(context.WithValue(r.Context(), caddy.ReplacerCtxKey, caddy.NewReplacer()))
		w := httptest.NewRecorder()
		if err := h.ServeHTTP(w, r, nextHandler); err != nil || (w.Code != 302 && w.Code != 200) {
			t.Fatalf("ua %q lang %q query %q remote %q: %d %v", ua, lang, query, remote, w.Code, err)
		}
	})
}

// A redirect's click carries the rule and variant chosen: the rule and
// variant breakdowns of the stats API count them on both stores, two
// instances sharing the stream, each value with its uniques: the distinct
// people who hit it, a repeat visit once, bots not at all.
func TestTargetingClickDims(t *testing.T) {
	for _, st := range targetingStores(t) {
		t.Run(st.name, func(t *testing.T) {
			a, b := st.mk(t, func(h *Handler) { h.ClicksInterval = caddy.Duration(10 * time.Millisecond) })
			code := "dims" + testenv.RandomID(4)
			putLink(t, a, link.Link{Code: code, LongURL: "https://example.com/long", Targeting: []byte(
				`{"rules":[{"name":"French","if":{"language":["fr"]},"variants":[{"name":"a","url":"https://example.com/a","weight":50},{"name":"b","url":"https://example.com/b","weight":50}]}]}`)}, b)
			clicksOf, people := map[string]int64{}, map[string]map[string]bool{"a": {}, "b": {}}
			hit := func(h *Handler, remote, ua string) string {
				v := visit(t, h, "GET", "/"+code, remote, "User-Agent", ua, "Accept-Language", "fr").Header().Get("X-Shortener-Variant")
				if v != "a" && v != "b" {
					t.Fatalf("visit from %s: variant %q", remote, v)
				}
				clicksOf[v]++
				return v
			}
			for i := range 12 {
				remote := fmt.Sprintf("192.0.2.%d:1", i)
				for j := range 1 + i%3 { // repeat visits, on both instances
					people[hit([]*Handler{a, b}[(i+j)%2], remote, firefoxUA)][remote] = true
				}
			}
			for i := range 3 {
				hit(a, fmt.Sprintf("192.0.2.%d:1", 100+i), "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)")
			}
			visit(t, b, "GET", "/"+code, "192.0.2.200:1", "User-Agent", firefoxUA) // no rule, no variant
			total := clicksOf["a"] + clicksOf["b"]
			var ans clicks.StatsAnswer
			eventually(t, 10*time.Second, fmt.Sprintf("the rule breakdown counts %d clicks", total), func() bool {
				getJSON(t, a, "/api/links/"+code+"/stats?group_by=rule", http.StatusOK, &ans)
				return len(ans.Breakdown) == 1 && ans.Breakdown[0].Clicks == total
			})
			if e := ans.Breakdown[0]; e.Value != "French" || e.Uniques == nil || *e.Uniques != 12 {
				t.Errorf("rule breakdown = %+v, want French with 12 uniques", e)
			}
			ans = clicks.StatsAnswer{}
			getJSON(t, b, "/api/links/"+code+"/stats?group_by=variant", http.StatusOK, &ans)
			for _, e := range ans.Breakdown {
				if e.Clicks != clicksOf[e.Value] || e.Uniques == nil || *e.Uniques != int64(len(people[e.Value])) {
					t.Errorf("variant %q: %d clicks, uniques %v; want %d and %d", e.Value, e.Clicks, e.Uniques, clicksOf[e.Value], len(people[e.Value]))
				}
			}
			if len(ans.Breakdown) != len(clicksOf) {
				t.Errorf("variant breakdown = %+v, want %d values", ans.Breakdown, len(clicksOf))
			}
			csv := serve(t, a, "GET", "/api/links/"+code+"/stats?group_by=variant&format=csv", "", auth()...).Body.String()
			want := "variant,clicks,uniques\n"
			for _, e := range ans.Breakdown {
				want += fmt.Sprintf("%s,%d,%d\n", e.Value, clicksOf[e.Value], len(people[e.Value]))
			}
			if csv != want {
				t.Errorf("variant breakdown as CSV = %q, want %q", csv, want)
			}
			var o clicks.Overview
			getJSON(t, a, "/api/stats?group_by=variant", http.StatusOK, &o)
			for _, e := range o.Breakdown {
				if e.Uniques != nil {
					t.Errorf("overview variant %q has uniques %d", e.Value, *e.Uniques)
				}
			}
		})
	}
}
