package shortener

import (
	"errors"
	"net/http"
	"net/netip"
	"strings"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/edgekit/caddy-edgekit/internal/clientip"
	"github.com/edgekit/caddy-edgekit/internal/tracing"
	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// Errors behind the redirect path's caddyhttp.Error answers.
var (
	errInvalidCode = errors.New("not a valid short code")
	errUnknownCode = errors.New("unknown short code")
	errGoneCode    = errors.New("short link revoked or expired")
	errUsedUp      = errors.New("short link reached its max_clicks")
	errStoreDown   = errors.New("link store unavailable")
)

// sourceHeaders are the X-Shortener-Source values.
var sourceHeaders = map[string]string{
	sourceLocal:  sourceLocal,
	sourceRedis:  sourceRedis,
	sourceStore:  sourceStore,
	sourceFilter: sourceFilter,
}

// codeOf returns the short code of a redirect request: the last segment of
// the path, so the handler works at the site root and under a prefix (with
// or without handle_path). ok is false for a path ending in "/".
func codeOf(path string) (string, bool) {
	code := path[strings.LastIndexByte(path, '/')+1:]
	return code, code != ""
}

// serveRedirect answers GET and HEAD /<code> from what the cache's Lookup
// says of key, the code's link key (link.DomainKey of the request's link
// domain). An L1 hit allocates once (the header values), see
// BenchmarkRedirectL1Hit; an unknown code the code filter answers, not at
// all (BenchmarkRedirectFilterReject).
func (h *Handler) serveRedirect(w http.ResponseWriter, r *http.Request, code, key string) error {
	if !link.ValidLookupCode(code) {
		h.metrics.count(sourceNone, resultInvalid)
		return h.notFound(w, r, errInvalidCode)
	}
	if c := h.clicks; c != nil {
		c.Enter()
		defer c.Leave()
	}
	e, source, err := h.cache.LookupTraced(r.Context(), code, key)
	if err != nil {
		if r.Context().Err() != nil { // the client left; the lookup goes on for others
			return caddyhttp.Error(http.StatusServiceUnavailable, err)
		}
		h.metrics.count(sourceNone, resultError)
		if c := h.logger.Check(zapcore.WarnLevel, "link lookup failed"); c != nil {
			c.Write(zap.Error(err))
		}
		return caddyhttp.Error(http.StatusServiceUnavailable, errStoreDown)
	}
	return h.answer(w, r, key, e, source)
}

// answer writes the response for a cached or looked-up entry and, for a
// redirect, queues the click (no I/O, no allocation: see Recorder).
func (h *Handler) answer(w http.ResponseWriter, r *http.Request, code string, e *entry, source string) error {
	hdr := w.Header()
	if h.SourceHeader {
		hdr["X-Shortener-Source"] = []string{sourceHeaders[source]}
	}
	if e.state == stateUnknown {
		if source == sourceFilter {
			h.metrics.notFoundFilter.Inc() // a scan's path: no label lookup
		} else {
			h.metrics.count(source, resultNotFound)
		}
		return h.notFound(w, r, errUnknownCode)
	}
	now := h.now()
	if e.gone(now.UnixNano()) {
		h.metrics.count(source, resultGone)
		return h.failTo(w, r, e.fallback, http.StatusGone, errGoneCode)
	}
	status, location := h.Status, e.location
	qr := false
	if r.URL.RawQuery != "" { // a scan's marker goes before anything reads the query
		r.URL.RawQuery, qr = stripQRMarker(r.URL.RawQuery)
	}
	if e.rules != nil {
		var err error
		if status, err = h.ruleStatus(w, r, code, e, source, now); status == 0 {
			return err
		}
	}
	var t targeted
	var addr netip.Addr // the client's, parsed once for targeting and the click
	if e.set != nil {
		addr = clientip.Addr(r)
		t = h.target(w, r, code, e, addr, now)
		location = t.location
	}
	if r.URL.RawQuery != "" && h.forwards(e.rules) {
		location = withQuery(location, r.URL.RawQuery)
	}
	if t.app != "" {
		h.writeAppPage(w, r, t.app, location)
	} else {
		// One allocation for the three values: later handlers (a `header`
		// replacement) may edit values in place, so cached strings are copied
		// into a per-response array rather than shared.
		vals := make([]string, 3)
		vals[0], vals[1], vals[2] = location, h.cacheControl, "noindex"
		hdr["Location"] = vals[0:1:1]
		hdr["Cache-Control"] = vals[1:2:2]
		hdr["X-Robots-Tag"] = vals[2:3:3]
		w.WriteHeader(status)
	}
	if h.clicks != nil {
		if e.set == nil {
			addr = clientip.Addr(r)
		}
		if c, ok := h.classify(r, addr, code, now, &t); ok {
			c.QR, c.Rule, c.Variant = qr, t.rule, t.variant
			if tracing.On(r.Context()) { // its flush links to this request
				h.traced.Note(r.Context())
				h.clicks.RecordTraced(r.Context(), c)
			} else {
				h.clicks.Record(c)
			}
		}
	}
	switch source {
	case sourceLocal:
		h.metrics.foundLocal.Inc()
	case sourceRedis:
		h.metrics.foundRedis.Inc()
	default:
		h.metrics.foundStore.Inc()
	}
	return nil
}

// fail answers a 404 or 410: written directly (an empty body, as Caddy's
// server would write it) when no error route could shape it, which keeps
// a scan of random codes as cheap as a redirect; otherwise returned as an
// error for handle_errors.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, status int, err error) error {
	if h.direct.Writes(r) {
		w.WriteHeader(status)
		return nil
	}
	return caddyhttp.Error(status, err)
}
