package ratelimit

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
)

// One request, one key: a header, cookie or query parameter the key reads,
// sent more than once, is refused with 400 in either order, nothing
// charged. Before, the values were joined into a fresh key.
func TestRepeatedKeyFieldRefused(t *testing.T) {
	for _, tt := range []struct {
		name, key string
		send      func(r *http.Request, vals ...string)
	}{
		{"header", "{http.request.header.X-API-Key}", func(r *http.Request, vals ...string) {
			for _, v := range vals {
				r.Header.Add("X-Api-Key", v)
			}
		}},
		{"cookie in one line", "{http.request.cookie.sid}", func(r *http.Request, vals ...string) {
			line := ""
			for i, v := range vals {
				if i > 0 {
					line += "; "
				}
				line += "other=x; sid=" + v
			}
			r.Header.Set("Cookie", line)
		}},
		{"cookie in two lines, any case", "{http.request.cookie.sid}", func(r *http.Request, vals ...string) {
			for i, v := range vals {
				name := "sid"
				if i == 1 {
					name = "SID"
				}
				r.Header.Add("Cookie", name+"="+v)
			}
		}},
		{"query", "{http.request.uri.query.key}", func(r *http.Request, vals ...string) {
			q := ""
			for i, v := range vals {
				name := "key"
				if i == 1 {
					name = "k%65y" // "key", escaped
				}
				q += "&" + name + "=" + url.QueryEscape(v)
			}
			r.URL.RawQuery = q[1:]
		}},
		{"hash tag", "{http.request.header.X-User}", func(r *http.Request, vals ...string) {
			r.Header.Set("X-User", "u")
			for _, v := range vals {
				r.Header.Add("X-Tenant", v)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := &Handler{Zones: []*Zone{{Name: "once", Key: tt.key, Events: 1, Window: caddy.Duration(time.Hour)}}}
			if tt.name == "hash tag" {
				h.HashTag = "{http.request.header.X-Tenant}"
			}
			provision(t, h)
			next := new(statusHandler)
			send := func(vals ...string) int {
				r := get("/")
				tt.send(r, vals...)
				return do(h, next, r).status
			}
			counted := h.Zones[0].inputs[inputRepeated]
			before := counterValue(counted)
			if s := send("k1"); s != http.StatusOK {
				t.Fatalf("k1: status %d, want 200", s)
			}
			if s := send("k1"); s != http.StatusTooManyRequests {
				t.Fatalf("k1 again: status %d, want 429", s)
			}
			for i, vals := range [][]string{{"k1", "junk1"}, {"junk2", "k1"}, {"k2", "k2"}, {"k2", ""}} {
				if s := send(vals...); s != http.StatusBadRequest {
					t.Errorf("values %q: status %d, want 400", vals, s)
				}
				if d := counterValue(counted) - before; d != float64(i+1) {
					t.Errorf("values %q: invalid_input_total{kind=repeated} grew by %v, want %d", vals, d, i+1)
				}
			}
			if s := send("k2"); s != http.StatusOK {
				t.Errorf("k2 after its refused repeats: status %d, want 200 (nothing charged)", s)
			}
			if next.Calls() != 2 {
				t.Errorf("%d requests went on, want 2", next.Calls())
			}
		})
	}
}

// One header line holding a comma-separated list is one opaque value: one
// key, decided as any other.
func TestCommaListIsOneValue(t *testing.T) {
	h := &Handler{Zones: []*Zone{zone("list", 1, time.Hour)}}
	provision(t, h)
	next := new(statusHandler)
	for i, want := range []int{http.StatusOK, http.StatusTooManyRequests} {
		if s := do(h, next, get("/", "X-API-Key", "k1, junk")).status; s != want {
			t.Errorf("request %d with `X-API-Key: k1, junk`: status %d, want %d", i+1, s, want)
		}
	}
}

// appendFields finds the fields Caddy's replacer would read.
func TestAppendFields(t *testing.T) {
	for _, tt := range []struct {
		tmpl string
		want []field
	}{
		{"{client_ip}", nil},
		{"literal", nil},
		{"{http.request.header.x-api-key}", []field{{kind: fieldHeader, name: "X-Api-Key"}}},
		{"{http.request.header.A}:{http.request.cookie.s}:{http.request.uri.query.q}:{http.request.header.a}",
			[]field{{kind: fieldHeader, name: "A"}, {kind: fieldCookie, name: "s"}, {kind: fieldQuery, name: "q"}}},
		{`\{http.request.header.A}`, nil},
		{"{http.request.header.}", nil},
		{"{http.request.uri.query}", nil},
		{"{unclosed {http.request.header.B}", nil}, // Caddy reads "unclosed {http.request.header.B" as one key
	} {
		got := appendFields(nil, tt.tmpl)
		if len(got) != len(tt.want) {
			t.Errorf("appendFields(%q) = %+v, want %+v", tt.tmpl, got, tt.want)
			continue
		}
		for i := range got {
			if got[i].kind != tt.want[i].kind || got[i].name != tt.want[i].name || got[i].err == nil {
				t.Errorf("appendFields(%q)[%d] = %+v, want %+v", tt.tmpl, i, got[i], tt.want[i])
			}
		}
	}
}

// countQuery agrees with url.ParseQuery, the parser Caddy's replacer uses.
func TestCountQueryAgreesWithParseQuery(t *testing.T) {
	for _, raw := range []string{
		"", "key=a", "key=a&key=b", "key=a&k%65y=b", "key=a;key=b", "key=a&key;=b", "key&key", "key=a&%zz=b",
		"key=a&&key=", "k+ey=a&k%20ey=b", "key=a&key%=b", "other=key&key=a", "key=%zz&key=a",
		"key=%4&key=%41", "key=%41%4g&key=b", "key=a%&key=b", "key=%%41&key=b",
	} {
		for _, name := range []string{"key", "k ey"} {
			vals, _ := url.ParseQuery(raw)
			want := min(len(vals[name]), 2)
			if got := countQuery(raw, name); got != want {
				t.Errorf("countQuery(%q, %q) = %d, want %d (ParseQuery: %q)", raw, name, got, want, vals[name])
			}
		}
	}
}

// countCookies counts at least what net/http parses (Caddy takes the
// first match of any case).
func TestCountCookiesCoversNetHTTP(t *testing.T) {
	for _, lines := range [][]string{
		{"sid=a"}, {"sid=a; sid=b"}, {"sid=a", "SID=b"}, {" sid = a ;sid=b"}, {"sid=\"a\"; Sid=b"},
		{"sid=a b; sid=c"}, {"other=sid"}, {"sid"}, {"sid=a;;sid=b"},
	} {
		r := get("/")
		for _, l := range lines {
			r.Header.Add("Cookie", l)
		}
		n := 0
		for _, c := range r.Cookies() {
			if c.Name == "sid" || c.Name == "SID" || c.Name == "Sid" {
				n++
			}
		}
		if got := countCookies(r.Header["Cookie"], "sid"); got < min(n, 2) {
			t.Errorf("countCookies(%q) = %d, net/http parses %d", lines, got, n)
		}
	}
}

// The check allocates nothing when the values are single.
func TestRepeatedFieldDoesNotAllocate(t *testing.T) {
	fs := appendFields(nil, "{http.request.header.X-API-Key}:{http.request.cookie.sid}:{http.request.uri.query.key}")
	r := get("/?a=1&key=k", "X-API-Key", "k", "Cookie", "a=1; sid=s")
	var f *field
	if n := testing.AllocsPerRun(100, func() { f = repeatedField(fs, r) }); n != 0 {
		t.Errorf("repeatedField allocates %.0f times, want 0", n)
	}
	if f != nil {
		t.Errorf("repeatedField = %+v, want none", f)
	}
}
