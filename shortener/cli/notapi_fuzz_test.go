package cli

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// FuzzNotAPI: whatever status, Content-Type and Location a server that is
// not the API answers, the error describing it is one line fit for a
// terminal (isPrintable: no control, escape or bidi character), quotes
// each header value at most maxShownHeader bytes long, and names the
// request and what --api should be.
func FuzzNotAPI(f *testing.F) {
	f.Add(200, "text/html; charset=utf-8", "")
	f.Add(308, "", "https://sho.rt/\x1b]8;;https://evil/\x07x")
	f.Add(404, "text/plain\r\nX-Evil: 1", "\u202e")
	f.Add(599, strings.Repeat("é", 500), "\xff\xfe")
	f.Fuzz(func(t *testing.T, status int, ctype, location string) {
		c, err := newClient("https://sho.rt", "k", time.Second)
		if err != nil {
			t.Fatal(err)
		}
		u, _ := url.Parse("https://sho.rt/links/abc")
		resp := &http.Response{StatusCode: status, Header: http.Header{}, Request: &http.Request{Method: http.MethodGet, URL: u}}
		resp.Header.Set("Content-Type", ctype)
		resp.Header.Set("Location", location)
		msg := c.notAPI(resp, "no JSON error")
		if !isPrintable(msg) || strings.ContainsAny(msg, "\r\n") {
			t.Fatalf("notAPI(%d, %q, %q) = %q: not one printable line", status, ctype, location, msg)
		}
		if len(msg) > 600+4*2*maxShownHeader {
			t.Fatalf("notAPI = %d bytes: header values not bounded", len(msg))
		}
		for _, want := range []string{"GET https://sho.rt/links/abc", "--api must be", "https://sho.rt/api"} {
			if !strings.Contains(msg, want) {
				t.Fatalf("notAPI = %q, lacks %q", msg, want)
			}
		}
	})
}
