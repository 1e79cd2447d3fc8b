package clicks

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/edgekit/caddy-edgekit/internal/clientip"
	"github.com/edgekit/caddy-edgekit/shortener/link"
)

func TestCountedRequest(t *testing.T) {
	tests := []struct {
		name   string
		method string
		header http.Header
		want   bool
	}{
		{"get", "GET", nil, true},
		{"head", "HEAD", nil, false},
		{"sec-purpose prefetch", "GET", http.Header{"Sec-Purpose": {"prefetch"}}, false},
		{"sec-purpose prerender", "GET", http.Header{"Sec-Purpose": {"prefetch;prerender"}}, false},
		{"purpose prefetch", "GET", http.Header{"Purpose": {"Prefetch"}}, false},
		{"x-moz prefetch", "GET", http.Header{"X-Moz": {"prefetch"}}, false},
		{"other purpose", "GET", http.Header{"Purpose": {"navigate"}}, true},
		{"prefetch later in header", "GET", http.Header{"Sec-Purpose": {"x, prefetch"}}, false},
		{"not a prefix", "GET", http.Header{"Sec-Purpose": {"noprefetch"}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(tt.method, "/abc1234", nil)
			for k, v := range tt.header {
				r.Header[k] = v
			}
			if got := CountedRequest(r); got != tt.want {
				t.Errorf("CountedRequest(%s %v) = %v, want %v", tt.method, tt.header, got, tt.want)
			}
		})
	}
}

func TestClassifyUserAgent(t *testing.T) {
	tests := []struct {
		ua   string
		want UAClass
	}{
		{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36", ClassBrowser},
		{"Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1", ClassBrowser},
		{"Opera/9.80 (Windows NT 6.1) Presto/2.12.388 Version/12.18", ClassBrowser},
		{"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", ClassBot},
		{"Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)", ClassBot},
		{"facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)", ClassBot},
		{"Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)", ClassBot},
		{"Twitterbot/1.0", ClassBot},
		{"WhatsApp/2.23.20.0", ClassBot},
		{"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/120.0 Safari/537.36", ClassBot},
		{"curl/8.5.0", ClassBot},
		{"Wget/1.21", ClassBot},
		{"python-requests/2.31.0", ClassBot},
		{"Go-http-client/1.1", ClassBot},
		{"Yahoo! Slurp", ClassBot},
		{"", ClassBot},
		{"MyApp/3.2 (Android 14)", ClassOther},
		{"Dalvik/2.1.0 (Linux; U; Android 13)", ClassOther},
	}
	for _, tt := range tests {
		if got := ClassifyUserAgent(tt.ua); got != tt.want {
			t.Errorf("ClassifyUserAgent(%q) = %d, want %d", tt.ua, got, tt.want)
		}
	}
}

func TestReferrerHost(t *testing.T) {
	long := "https://news.example.com/" + strings.Repeat("a", 300)
	tests := []struct{ in, want string }{
		{"", ""},
		{"https://News.Example.COM/path?q=1", "news.example.com"},
		{"https://example.com:8443/", "example.com"},
		{"http://user:pw@example.org/x", "example.org"},
		{"https://example.com.", "example.com"},
		{"https://example.com?x", "example.com"},
		{"https://example.com#frag", "example.com"},
		{"http://[2001:db8::1]:8080/x", "[2001:db8::1]"},
		{"android-app://com.google.android.gm/", "com.google.android.gm"},
		{"not a url", ""},
		{"/relative/path", ""},
		{"https://exa mple.com/", ""},
		{"https://ex\tample.com/", ""},
		{"https://ex\nample.com/", ""},
		{"https:///path", ""},
		{"https://[::1/x", ""},
		{long, "news.example.com"},
	}
	for _, tt := range tests {
		if got := ReferrerHost(tt.in); got != tt.want {
			t.Errorf("ReferrerHost(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func FuzzReferrerHost(f *testing.F) {
	f.Add("https://News.Example.com:8443/a?b")
	f.Add("http://[2001:db8::1]:80/")
	f.Add("http://u:p@h/")
	f.Fuzz(func(t *testing.T, ref string) {
		h := ReferrerHost(ref)
		if len(h) > 253 || strings.ContainsAny(h, "\t\n/?#@ ") || h != strings.ToLower(h) {
			t.Fatalf("ReferrerHost(%q) = %q: not a lowercase host", ref, h)
		}
		ClassifyUserAgent(ref) // must not panic
	})
}

func TestClassifyRequest(t *testing.T) {
	now := time.Date(2026, 11, 30, 10, 30, 0, 0, time.UTC)
	r := httptest.NewRequest("GET", "/abc1234", nil)
	r.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64) Firefox/133.0")
	r.Header.Set("Referer", "https://WWW.Example.com/post/1")
	c, ok := ClassifyRequest(r, clientip.Addr(r), "abc1234", now)
	want := Click{Code: "abc1234", At: now, Referrer: "www.example.com", Class: ClassBrowser,
		Addr: netip.MustParseAddr("192.0.2.1"), UA: "Mozilla/5.0 (X11; Linux x86_64) Firefox/133.0"}
	if !ok || c != want {
		t.Errorf("ClassifyRequest = %+v, %v; want %+v, true", c, ok, want)
	}
	r.Method = http.MethodHead
	if _, ok := ClassifyRequest(r, clientip.Addr(r), "abc1234", now); ok {
		t.Errorf("ClassifyRequest(HEAD) counted")
	}
}

// The click's address is Caddy's client IP (so trusted_proxies applies),
// else the remote address; its user agent is cut to MaxUserAgent bytes,
// copied so the long header is not pinned.
func TestClassifyRequestClient(t *testing.T) {
	long := "Mozilla/5.0 " + strings.Repeat("x", 2*MaxUserAgent)
	for _, tt := range []struct {
		name, clientIP, remote, ua string
		want                       netip.Addr
		wantUA                     string
	}{
		{"client ip var", "203.0.113.7", "10.0.0.1:5555", "curl/8", netip.MustParseAddr("203.0.113.7"), "curl/8"},
		{"ipv4-mapped var", "::ffff:198.51.100.2", "10.0.0.1:5555", "", netip.MustParseAddr("198.51.100.2"), ""},
		{"ipv6 zone dropped", "fe80::1%eth0", "10.0.0.1:5555", "x", netip.MustParseAddr("fe80::1"), "x"},
		{"no var: remote address", "", "[2001:db8::5]:443", "x", netip.MustParseAddr("2001:db8::5"), "x"},
		{"nothing parses", "", "pipe", "x", netip.Addr{}, "x"},
		{"long user agent", "", "192.0.2.9:1", long, netip.MustParseAddr("192.0.2.9"), long[:MaxUserAgent]},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/abc1234", nil)
			r.RemoteAddr = tt.remote
			r.Header.Set("User-Agent", tt.ua)
			if tt.clientIP != "" {
				vars := map[string]any{caddyhttp.ClientIPVarKey: tt.clientIP}
				r = r.WithContext(context.WithValue(r.Context(), caddyhttp.VarsCtxKey, vars))
			}
			c, ok := ClassifyRequest(r, clientip.Addr(r), "abc1234", time.Now())
			if !ok || c.Addr != tt.want || c.UA != tt.wantUA {
				t.Errorf("ClassifyRequest: Addr %v, UA %.20q (%d bytes); want %v, %.20q (%d bytes)",
					c.Addr, c.UA, len(c.UA), tt.want, tt.wantUA, len(tt.wantUA))
			}
			if ClickSize(c) < 0 {
				t.Errorf("clickSize refused the classified click")
			}
		})
	}
}

func TestClassifyRequestAllocs(t *testing.T) {
	r := httptest.NewRequest("GET", "/abc1234", nil)
	r.Header.Set("User-Agent", "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36")
	r.Header.Set("Referer", "https://news.example.com/a")
	now := time.Now()
	allocs := testing.AllocsPerRun(100, func() {
		if _, ok := ClassifyRequest(r, clientip.Addr(r), "abc1234", now); !ok {
			t.Fatal("not counted")
		}
	})
	if allocs != 0 {
		t.Errorf("ClassifyRequest allocates %v times per call, want 0", allocs)
	}
}

func TestClickEncoding(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.UTC)
	in := []Click{
		{Code: "abc1234", At: at, Referrer: "example.com", Class: ClassBrowser},
		{Code: "x_y-z", At: at.Add(time.Hour), Class: ClassBot},
		{Code: "Q9", At: at, Referrer: "[::1]", Class: ClassOther},
		{Code: "v1", At: at, Class: ClassBrowser, Visitor: 0xfedcba9876543210},
		{Code: "v2", At: at, Referrer: "example.com", Class: ClassOther, Visitor: 1},
	}
	out, err := DecodeClicks(EncodeClicks(in))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out, in) {
		t.Errorf("decode(encode(%+v)) = %+v", in, out)
	}
	for _, bad := range []string{"abc\n", "abc\t1\t0\n", "abc\tx\t0\t\n", "abc\t1\t9\t\n", "\t1\t0\t\n",
		// the visitor after referrer, device, OS and browser: 16 hex digits, not 0
		"abc\t1\t0\t\t\t\t\t12\n", "abc\t1\t0\t\t\t\t\t0000000000000000\n", "abc\t1\t0\t\t\t\t\t+00000000000000f\n",
		"abc\t1\t0\t\t\t\t\t00000000000000001\n"} {
		if _, err := DecodeClicks(bad); err == nil {
			t.Errorf("decodeClicks(%q) = nil error", bad)
		}
	}
}

func TestParseStatsRange(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		query    string
		from, to time.Time
		err      string
	}{
		{"", now.Add(-DefaultStatsWindow), now, ""},
		{"from=2026-11-01T00:00:00Z&to=2026-11-02T00:00:00Z", time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC), ""},
		{"from=2026-11-01T02:00:00%2B02:00", time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), now, ""},
		{"to=2026-11-10T00:00:00Z", time.Date(2026, 10, 11, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 10, 0, 0, 0, 0, time.UTC), ""},
		{"from=yesterday", time.Time{}, time.Time{}, "from must be an RFC 3339"},
		{"to=2026-11-01", time.Time{}, time.Time{}, "to must be an RFC 3339"},
		{"from=2026-11-02T00:00:00Z&to=2026-11-01T00:00:00Z", time.Time{}, time.Time{}, "from is after to"},
		{"from=2020-01-01T00:00:00Z", time.Time{}, time.Time{}, "longer than 366 days"},
		{"from=2026-11-01T00:00:00Z&from=2026-11-02T00:00:00Z", time.Time{}, time.Time{}, "from given 2 times"},
		{"from=0001-01-01T00:00:00Z", time.Time{}, time.Time{}, "out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			q, _ := url.ParseQuery(tt.query)
			from, to, err := ParseStatsRange(q, now)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || !errors.Is(err, ErrBadStatsRange) {
					t.Errorf("ParseStatsRange(%q) error = %v, want one containing %q", tt.query, err, tt.err)
				}
				return
			}
			if err != nil || !from.Equal(tt.from) || !to.Equal(tt.to) {
				t.Errorf("ParseStatsRange(%q) = %v, %v, %v; want %v, %v", tt.query, from, to, err, tt.from, tt.to)
			}
		})
	}
}

func FuzzParseStatsRange(f *testing.F) {
	f.Add("from=2026-11-01T00:00:00Z&to=2026-11-02T00:00:00Z")
	f.Add("from=2026-11-01T00:00:00%2B14:00")
	f.Add("to=9999-12-31T23:59:59Z")
	f.Add("from=x&to=&from=")
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		from, to, err := ParseStatsRange(q, now)
		if err != nil {
			if !errors.Is(err, ErrBadStatsRange) {
				t.Fatalf("ParseStatsRange(%q) error %v does not wrap ErrBadStatsRange", raw, err)
			}
			return
		}
		if from.After(to) || to.Sub(from) > MaxStatsWindow || from.Location() != time.UTC || to.Location() != time.UTC {
			t.Fatalf("ParseStatsRange(%q) = %v, %v: not a valid UTC window", raw, from, to)
		}
	})
}

func TestClickStatsJSON(t *testing.T) {
	empty := Stats{Code: "abc", Hourly: []link.HourlyClicks{}, Referrers: []ReferrerClicks{}}
	b, _ := json.Marshal(empty)
	if want := `{"code":"abc","total":0,"people":0,"bots":0,"hourly":[],"referrers":[],"uniques":0}`; string(b) != want {
		t.Errorf("json = %s, want %s", b, want)
	}
	full := Stats{Code: "abc", Total: 3, People: 2, Bots: 1, Uniques: 2,
		Hourly:    []link.HourlyClicks{{Hour: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC), People: 2, Bots: 1}},
		Referrers: []ReferrerClicks{{Host: "example.com", Count: 2}}}
	b, _ = json.Marshal(full)
	if want := `{"code":"abc","total":3,"people":2,"bots":1,"hourly":[{"hour":"2026-11-30T10:00:00Z","people":2,"bots":1}],"referrers":[{"host":"example.com","count":2}],"uniques":2}`; string(b) != want {
		t.Errorf("json = %s, want %s", b, want)
	}
}

// BenchmarkClickHotPath is what a counted redirect pays: classification
// and Record into the buffer (drained concurrently, as in production).
func BenchmarkClickHotPath(b *testing.B) {
	rec, err := NewRecorder(Config{Sink: discardSink{}, BatchInterval: 10 * time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	defer rec.Close(context.Background())
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		r := httptest.NewRequest("GET", "/abc1234", nil)
		r.Header.Set("User-Agent", "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36")
		r.Header.Set("Referer", "https://news.example.com/a")
		for pb.Next() {
			if c, ok := ClassifyRequest(r, clientip.Addr(r), "abc1234", time.Now()); ok {
				rec.Record(c)
			}
		}
	})
}

// discardSink accepts every batch.
type discardSink struct{}

func (discardSink) ApplyClicks(_ context.Context, b []Batch) (int, error) { return len(b), nil }
func (discardSink) ClickStats(context.Context, string, time.Time, time.Time) (Stats, error) {
	return Stats{}, nil
}
func (discardSink) ClickTotal(context.Context, string) (int64, error) { return 0, nil }
func (discardSink) ClickBreakdown(context.Context, string, string, time.Time, time.Time, int) ([]BreakdownEntry, error) {
	return nil, nil
}
func (discardSink) ClickOverview(context.Context, time.Time, time.Time, int) (Overview, error) {
	return Overview{}, nil
}
