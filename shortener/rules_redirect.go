package shortener

import (
	"net/http"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/edgekit/caddy-edgekit/shortener/urlpolicy"
)

// ruleStatus applies a live link's rules to one redirect and returns its
// status; 0 when the rules answered instead, with err to return: 404
// before valid_from (as an unknown code), 410 once max_clicks redirects
// were served (either a redirect to the link's fallback URL when it has
// one), 503 when the max_clicks counter cannot be reached.
func (h *Handler) ruleStatus(w http.ResponseWriter, r *http.Request, code string, e *entry, source string, now time.Time) (int, error) {
	rules := e.rules
	if rules.notYet(now.UnixNano()) {
		h.metrics.count(source, resultNotFound)
		return 0, h.failTo(w, r, e.fallback, http.StatusNotFound, errUnknownCode)
	}
	if rules.maxClicks > 0 {
		ok, err := h.cache.takeServe(r.Context(), code, e.fallback)
		if err != nil {
			h.metrics.count(source, resultError)
			if c := h.logger.Check(zapcore.WarnLevel, "max_clicks counter failed"); c != nil {
				c.Write(zap.Error(err))
			}
			return 0, caddyhttp.Error(http.StatusServiceUnavailable, errStoreDown)
		}
		if !ok {
			h.metrics.count(source, resultGone)
			return 0, h.failTo(w, r, e.fallback, http.StatusGone, errUsedUp)
		}
	}
	if rules.status != 0 {
		return rules.status, nil
	}
	return h.Status, nil
}

// forwards reports whether a redirect appends the request's query: the
// link's forward_query, else the handler's.
func (h *Handler) forwards(rules *entryRules) bool {
	if rules != nil && rules.forward != forwardDefault {
		return rules.forward == forwardOn
	}
	return h.ForwardQuery
}

// withQuery appends a request's raw query to a long URL: after its own
// query (joined with '&'), before its fragment. Bytes a URL may not hold
// as they are (controls, space, non-ASCII, '#') are percent-encoded. A
// result longer than MaxLongURL is the long URL alone.
func withQuery(long, query string) string {
	base, frag, hasFrag := strings.Cut(long, "#")
	var b strings.Builder
	b.Grow(len(long) + len(query) + 1)
	b.WriteString(base)
	switch {
	case !strings.Contains(base, "?"):
		b.WriteByte('?')
	case !strings.HasSuffix(base, "?") && !strings.HasSuffix(base, "&"):
		b.WriteByte('&')
	}
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(query); i++ {
		c := query[i]
		if c <= ' ' || c >= 0x7f || c == '#' {
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
			continue
		}
		b.WriteByte(c)
	}
	if hasFrag {
		b.WriteByte('#')
		b.WriteString(frag)
	}
	if b.Len() > urlpolicy.MaxLongURL {
		return long
	}
	return b.String()
}
