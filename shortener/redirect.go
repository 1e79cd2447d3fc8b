package shortener

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Errors behind the redirect path's caddyhttp.Error answers.
var (
	errInvalidCode = errors.New("not a valid short code")
	errUnknownCode = errors.New("unknown short code")
	errGoneCode    = errors.New("short link revoked or expired")
	errStoreDown   = errors.New("link store unavailable")
)

// storeTimeout bounds one store call (PostgreSQL also has its own
// statement_timeout).
const storeTimeout = 3 * time.Second

// sourceHeaders are the X-Shortener-Source values.
var sourceHeaders = map[string]string{
	sourceLocal: sourceLocal,
	sourceRedis: sourceRedis,
	sourceStore: sourceStore,
}

// codeOf returns the short code of a redirect request: the last segment of
// the path, so the handler works at the site root and under a prefix (with
// or without handle_path). ok is false for a path ending in "/".
func codeOf(path string) (string, bool) {
	code := path[strings.LastIndexByte(path, '/')+1:]
	return code, code != ""
}

// serveRedirect answers GET and HEAD /<code>. An L1 hit allocates once (the
// header values), see BenchmarkRedirectL1Hit.
func (h *Handler) serveRedirect(w http.ResponseWriter, r *http.Request, code string) error {
	if !ValidLookupCode(code) {
		h.metrics.count(sourceNone, resultInvalid)
		return h.fail(w, r, http.StatusNotFound, errInvalidCode)
	}
	if e, ok := h.cache.local(code); ok {
		return h.answer(w, r, code, e, sourceLocal)
	}
	if !h.cache.codes.mayExist(code) {
		return h.rejectUnknown(w, r)
	}
	e, source, err := h.lookup(r.Context(), code)
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
	return h.answer(w, r, code, e, source)
}

// answer writes the response for a cached or looked-up entry and, for a
// redirect, queues the click (no I/O, no allocation: see ClickRecorder).
func (h *Handler) answer(w http.ResponseWriter, r *http.Request, code string, e *entry, source string) error {
	hdr := w.Header()
	if h.SourceHeader {
		hdr["X-Shortener-Source"] = []string{sourceHeaders[source]}
	}
	if e.state == stateUnknown {
		h.metrics.count(source, resultNotFound)
		return h.fail(w, r, http.StatusNotFound, errUnknownCode)
	}
	now := h.now()
	if e.gone(now.UnixNano()) {
		h.metrics.count(source, resultGone)
		return h.fail(w, r, http.StatusGone, errGoneCode)
	}
	// One allocation for the three values: later handlers (a `header`
	// replacement) may edit values in place, so cached strings are copied
	// into a per-response array rather than shared.
	vals := make([]string, 3)
	vals[0], vals[1], vals[2] = e.location, h.cacheControl, "noindex"
	hdr["Location"] = vals[0:1:1]
	hdr["Cache-Control"] = vals[1:2:2]
	hdr["X-Robots-Tag"] = vals[2:3:3]
	w.WriteHeader(h.Status)
	if h.clicks != nil {
		if c, ok := ClassifyRequest(r, code, now); ok {
			h.clicks.Record(c)
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

type lookupResult struct {
	e      *entry
	source string
}

// lookup resolves an L1 miss: Redis, then the store. Concurrent misses of
// one code share a single call (Redis read and store query), detached from
// any one request's cancellation. A store error is returned, never cached.
func (h *Handler) lookup(ctx context.Context, code string) (*entry, string, error) {
	ch := h.flight.DoChan(code, func() (any, error) {
		// A flight that just ended has filled L1 for requests that missed
		// it a moment ago.
		if e, ok := h.cache.local(code); ok {
			return lookupResult{e, sourceLocal}, nil
		}
		ctx := context.WithoutCancel(ctx)
		epoch := h.cache.epoch(code)
		var redisErr error
		if h.cache.rdb != nil {
			e, err := h.cache.redisGet(ctx, code, redisTimeout)
			if err == nil && e != nil {
				h.cache.setLocal(code, e, epoch)
				return lookupResult{e, sourceRedis}, nil
			}
			if err != nil {
				redisErr = err
				if c := h.logger.Check(zapcore.DebugLevel, "redis lookup failed, asking the store"); c != nil {
					c.Write(zap.Error(err))
				}
			}
		}
		sctx, cancel := context.WithTimeout(ctx, storeTimeout)
		defer cancel()
		l, err := h.store.Get(sctx, code)
		var e *entry
		switch {
		case errors.Is(err, ErrNotFound):
			e = h.cache.unknown()
			h.cache.fill(ctx, code, nil)
		case err != nil:
			// The store is down and Redis was only slow: give Redis the
			// time the store did not use rather than fail a cached link.
			if redisErr != nil {
				if e, rerr := h.cache.redisGet(ctx, code, redisRetryTimeout); rerr == nil && e != nil {
					h.cache.setLocal(code, e, epoch)
					return lookupResult{e, sourceRedis}, nil
				}
			}
			return nil, err
		default:
			e = h.cache.fromLink(l)
			h.cache.fill(ctx, code, &l)
		}
		h.cache.setLocal(code, e, epoch)
		return lookupResult{e, sourceStore}, nil
	})
	select {
	case res := <-ch:
		if res.Err != nil {
			return nil, "", res.Err
		}
		lr := res.Val.(lookupResult)
		return lr.e, lr.source, nil
	case <-ctx.Done():
		return nil, "", ctx.Err()
	}
}
