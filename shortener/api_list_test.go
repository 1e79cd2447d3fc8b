package shortener

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// listStores are the two real stores the list and export tests run on.
var listStores = map[string]func(t *testing.T) link.Store{"postgres": openTestPostgres, "embedded": openTestEmbedded}

// getList answers GET target with a read key and decodes a 200.
func getList(t testing.TB, h *Handler, target string) listResponse {
	t.Helper()
	w := serve(t, h, "GET", target, "", "Authorization", "Bearer "+readKey)
	if w.Code != http.StatusOK {
		t.Fatalf("GET %s = %d %s, want 200", target, w.Code, w.Body)
	}
	var out listResponse
	if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
		t.Fatalf("decoding %s: %v", w.Body, err)
	}
	return out
}

func TestAPIList(t *testing.T) {
	for name, open := range listStores {
		t.Run(name, func(t *testing.T) {
			h := newHandler(t, open(t), withReadKey)
			a := create(t, h, `{"long_url":"https://example.com/first","title":"First Sale","tags":["print","q3"]}`)
			b := create(t, h, `{"long_url":"https://example.com/second","tags":["print"]}`)
			c := create(t, h, `{"long_url":"https://example.org/third"}`)
			if w := serve(t, h, "DELETE", "/api/links/"+c.Code, "", auth()...); w.Code != http.StatusNoContent {
				t.Fatalf("DELETE = %d", w.Code)
			}
			codes := func(l listResponse) string {
				var s []string
				for _, x := range l.Links {
					s = append(s, x.Code)
				}
				return strings.Join(s, ",")
			}
			for target, want := range map[string]string{
				"/api/links":                          b.Code + "," + a.Code,
				"/api/links?sort=created":             a.Code + "," + b.Code,
				"/api/links?status=all&sort=created":  a.Code + "," + b.Code + "," + c.Code,
				"/api/links?status=revoked":           c.Code,
				"/api/links?status=expired":           "",
				"/api/links?tag=q3":                   a.Code,
				"/api/links?q=SALE":                   a.Code,
				"/api/links?q=example&tag=print":      b.Code + "," + a.Code,
				"/api/links?q=example.org&status=all": c.Code,
				"/api/links?utm_source=x&_=1":         b.Code + "," + a.Code,
			} {
				if got := codes(getList(t, h, target)); got != want {
					t.Errorf("GET %s = [%s], want [%s]", target, got, want)
				}
			}
			first := getList(t, h, "/api/links?limit=1")
			if len(first.Links) != 1 || first.NextCursor == nil {
				t.Fatalf("limit=1: %+v", first)
			}
			one := serve(t, h, "GET", "/api/links/"+b.Code, "", auth()...)
			if listed, _ := json.Marshal(first.Links[0]); strings.TrimSpace(one.Body.String()) != string(listed) {
				t.Errorf("listed %s, want the GET answer %s", listed, one.Body)
			}
			rest := getList(t, h, "/api/links?limit=1&cursor="+url.QueryEscape(*first.NextCursor))
			if codes(rest) != a.Code || rest.NextCursor != nil {
				t.Errorf("second page = [%s] next %v, want [%s] and null", codes(rest), rest.NextCursor, a.Code)
			}
		})
	}
}

func TestAPIListErrors(t *testing.T) {
	h := newHandler(t, openTestEmbedded(t), withReadKey)
	for target, field := range map[string]string{
		"/api/links?q=ab":                             "q",
		"/api/links?q=" + strings.Repeat("x", 201):    "q",
		"/api/links?q=a%0Ab":                          "q",
		"/api/links?q=%FF%FE%FD":                      "q",
		"/api/links?tag=a%20b":                        "tag",
		"/api/links?tag=" + strings.Repeat("t", 51):   "tag",
		"/api/links?status=scheduledx":                "status",
		"/api/links?sort=code":                        "sort",
		"/api/links?limit=0":                          "limit",
		"/api/links?limit=1001":                       "limit",
		"/api/links?limit=ten":                        "limit",
		"/api/links?limit=5&limit=6":                  "limit",
		"/api/links?cursor=not-a-cursor":              "cursor",
		"/api/links?cursor=" + strings.Repeat("A", 9): "cursor",
		"/api/links?q=%zz":                            "query string",
		"/api/links/export?format=xml":                "format",
		"/api/links/export?status=gone":               "status",
	} {
		w := serve(t, h, "GET", target, "", "Authorization", "Bearer "+readKey)
		if w.Code != http.StatusBadRequest || !strings.HasPrefix(errorOf(t, w.Body.Bytes()), field) {
			t.Errorf("GET %s = %d %s, want 400 naming %s", target, w.Code, w.Body, field)
		}
	}
	w := serve(t, h, "PUT", "/api/links", "", auth()...)
	if w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != "GET, HEAD, POST" {
		t.Errorf("PUT /api/links = %d Allow %q, want 405 with GET, HEAD, POST", w.Code, w.Header().Get("Allow"))
	}
	if w := serve(t, h, "GET", "/api/links", ""); w.Code != http.StatusUnauthorized {
		t.Errorf("GET /api/links without a key = %d, want 401", w.Code)
	}
}

// TestAPIListWalkWhileCreating walks every page of sort=created and
// -created while other goroutines create links: each link that existed at
// the start is listed exactly once, and no link twice.
func TestAPIListWalkWhileCreating(t *testing.T) {
	for name, open := range listStores {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			h := newHandler(t, s, withReadKey)
			ctx := context.Background()
			start := time.Now().UTC().Truncate(time.Microsecond)
			before := map[string]bool{}
			for i := range 240 {
				// Many links share a creation time: ties are broken by code.
				l := link.Link{Code: fmt.Sprintf("w%04d", i), LongURL: "https://example.com/", CreatedAt: start.Add(-time.Duration(i/4) * time.Second)}
				if err := s.Create(ctx, l); err != nil {
					t.Fatal(err)
				}
				before[l.Code] = true
			}
			for _, sort := range []string{link.SortCreated, link.SortCreatedDesc} {
				var stop atomic.Bool
				var wg sync.WaitGroup
				var made atomic.Int64
				for g := range 3 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := 0; !stop.Load(); i++ {
							// New links land before, among and after the listed ones.
							at := start.Add(time.Duration(i%90-60) * time.Second)
							l := link.Link{Code: fmt.Sprintf("n%s%d_%d", sort[:1], g, i), LongURL: "https://example.com/n", CreatedAt: at}
							if err := s.Create(ctx, l); err != nil {
								t.Error(err)
								return
							}
							made.Add(1)
						}
					}()
				}
				seen := map[string]int{}
				target := "/api/links?status=all&limit=7&sort=" + sort
				for cursor := ""; ; {
					page := getList(t, h, target+cursor)
					for _, l := range page.Links {
						seen[l.Code]++
					}
					if page.NextCursor == nil {
						break
					}
					cursor = "&cursor=" + url.QueryEscape(*page.NextCursor)
				}
				stop.Store(true)
				wg.Wait()
				for code, n := range seen {
					if n != 1 {
						t.Errorf("sort=%s: %s listed %d times", sort, code, n)
					}
				}
				for code := range before {
					if seen[code] != 1 {
						t.Errorf("sort=%s: %s, there from the start, listed %d times", sort, code, seen[code])
					}
				}
				t.Logf("sort=%s: %d listed, %d created during the walk", sort, len(seen), made.Load())
			}
		})
	}
}

// FuzzAPIList sends any query string to GET /api/links: never a 5xx, a
// 200 is a listing within its limit, and a 400 names the parameter (or
// the query string) that is wrong.
func FuzzAPIList(f *testing.F) {
	for _, seed := range []string{
		"", "q=sale&tag=print&status=all&sort=-clicks&limit=2", "q=%25_%5C", "q=ab", "limit=0", "limit=-1",
		"limit=99999999999999999999", "sort=clicks&cursor=eyJzIjoiY2xpY2tzIiwiayI6LTEsImMiOiJhYmMifQ",
		"cursor=%00", "status=all&status=all", "tag=a:b.c-d_e", "q=%E2%80%AE%E2%80%AEx", "a=%zz", "x=1&;&&=",
	} {
		f.Add(seed)
	}
	s := openFuzzEmbedded(f)
	h := newHandler(f, s, withReadKey)
	for i := range 5 {
		create(f, h, fmt.Sprintf(`{"long_url":"https://example.com/%d","title":"Sale %d","tags":["print"]}`, i, i))
	}
	f.Fuzz(func(t *testing.T, query string) {
		query = requestTargetSafe(query)
		w := serve(t, h, "GET", "/api/links?"+query, "", "Authorization", "Bearer "+readKey)
		switch w.Code {
		case http.StatusOK:
			var out listResponse
			if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil || len(out.Links) > link.MaxListLimit {
				t.Fatalf("?%s: 200 with %s (%v)", query, w.Body, err)
			}
		case http.StatusBadRequest:
			msg := errorOf(t, w.Body.Bytes())
			named := false
			for _, p := range []string{"q", "tag", "status", "sort", "limit", "cursor", "query string"} {
				named = named || strings.HasPrefix(msg, p+" ") || strings.HasPrefix(msg, p+":")
			}
			if !named {
				t.Fatalf("?%s: 400 %q names no parameter", query, msg)
			}
		default:
			t.Fatalf("?%s: status %d %s", query, w.Code, w.Body)
		}
	})
}

// requestTargetSafe percent-encodes the bytes a request line cannot carry
// (controls, space, #, DEL and non-ASCII), as a client would send them.
func requestTargetSafe(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c == '#' || c >= 0x7f {
			fmt.Fprintf(&b, "%%%02X", c)
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}
