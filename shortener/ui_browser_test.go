package shortener

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/edgekit/caddy-edgekit/shortener/clicks"
)

// TestUIBrowser is issue 18's acceptance in a real browser (e2e/dashboard.mjs
// drives Chromium against the handler on a loopback port, embedded store,
// clicks on, destinations on another loopback port): sign in (no Webhooks
// entry without a webhooks block); create a link with tags; find it by search and tag;
// real redirects, read back off the link's page; edit the destination and
// see the redirect follow; download the QR PNG, decode it with jsQR and
// request what it holds (a qr click); revoke and see 410; a read key's
// dashboard without write controls and its writes refused with cookie and
// CSRF token; CSRF attempts from another origin of the same site refused;
// no horizontal scroll at 360 px; sign-in by keyboard. Then the numbers
// the script saw are checked here against the store.
func TestUIBrowser(t *testing.T) {
	needBrowser(t)
	h := newHandler(t, embeddedStore(t), func(h *Handler) {
		h.UI, h.APIReadKeys = "/admin", []string{testReadKey}
		h.ClicksInterval = caddy.Duration(50 * time.Millisecond)
		h.DenyPrivate = new(bool) // the destinations are on the loopback
	})
	other := otherOrigin(t)
	var mu sync.Mutex
	var foreign []string // the requests from the other origin: method, path, cookie sent, status
	srv := dashboardServer(t, h, func(r *http.Request, status int) {
		if r.Header.Get("Origin") == other.URL {
			_, err := r.Cookie(sessionCookiePlain)
			mu.Lock()
			foreign = append(foreign, fmt.Sprintf("%s %s cookie=%t %d", r.Method, r.URL.Path, err == nil, status))
			mu.Unlock()
		}
	})
	out := runNode(t, "dashboard.mjs", 90*time.Second,
		"BASE="+srv.URL, "UI=/admin/", "WRITE_KEY="+testKey, "READ_KEY="+testReadKey, "OTHER="+other.URL)
	var res struct {
		Code, ShortURL, Scanned string
		Redirects, QR           int64
		Other                   string
	}
	decodeResult(t, out, &res)
	if res.Redirects < 1 || res.QR != 1 || res.Scanned != res.ShortURL+"?"+QRMarker {
		t.Fatalf("script result %+v", res)
	}
	waitCodeTotal(t, h.clicks.Cfg.Sink, res.Code, res.Redirects+res.QR)
	var st clicks.StatsAnswer
	getJSON(t, h, "/api/links/"+res.Code+"/stats?group_by=source", http.StatusOK, &st)
	want := map[string]int64{clicks.SourceLink: res.Redirects, clicks.SourceQR: res.QR}
	for _, e := range st.Breakdown {
		if want[e.Value] != e.Clicks {
			t.Errorf("source %s: %d clicks, want %d", e.Value, e.Clicks, want[e.Value])
		}
	}
	if w := serve(t, h, "GET", "/"+res.Code, ""); w.Code != http.StatusGone {
		t.Errorf("GET /%s after revoke = %d, want 410", res.Code, w.Code)
	}
	// fetch, form post, and a request with a valid token: each reached
	// the server with the session cookie and was refused.
	mu.Lock()
	defer mu.Unlock()
	if got, want := strings.Join(foreign, "; "), strings.Repeat("POST /api/links cookie=true 403; ", 3); got+"; " != want {
		t.Errorf("requests from the other origin: %s, want %s", got, want)
	}
	for _, code := range []string{"csrf-fetch", "csrf-form", "csrf-header", "read-write"} {
		if w := serve(t, h, "GET", "/api/links/"+code, "", auth()...); w.Code != http.StatusNotFound {
			t.Errorf("refused create %s exists: GET = %d %s", code, w.Code, w.Body)
		}
	}
}
