package shortener

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"go.opentelemetry.io/otel/attribute"
	"go.uber.org/zap"

	"github.com/edgekit/caddy-edgekit/internal/strictjson"
	"github.com/edgekit/caddy-edgekit/internal/tracing"
	"github.com/edgekit/caddy-edgekit/shortener/link"
	"github.com/edgekit/caddy-edgekit/shortener/urlpolicy"
)

// maxBody is the largest API request body (a link: 16 KiB of fields and
// up to 64 KiB of rules and variants, targeting.MaxJSON); larger ones get
// 413.
const maxBody = 96 << 10

// maxCodeAttempts is how many random codes of one length are tried before
// the length grows by one.
const maxCodeAttempts = 5

type apiError struct {
	status int
	msg    string
}

func (e apiError) Error() string { return e.msg }

func apiErr(status int, format string, args ...any) error {
	return apiError{status, fmt.Sprintf(format, args...)}
}

// serveAPI answers the management API; rest is the path after the API mount.
// Every answer is JSON, errors as {"error": "..."}. A request Caddy's
// `tracing` handler traces is answered under a `shortener.api.<operationId>`
// span (see apiOperation); an untraced one starts none.
func (h *Handler) serveAPI(w http.ResponseWriter, r *http.Request, rest string) error {
	if !tracing.On(r.Context()) {
		h.answerAPI(w, h.routeAPI(w, r, rest))
		return nil
	}
	h.traced.Note(r.Context()) // for the webhook deliveries' spans
	ctx, span := tracing.Start(r.Context(), tracerScope, "shortener.api."+apiOperation(r.Method, rest))
	defer span.End()
	err := h.routeAPI(w, r.WithContext(ctx), rest)
	if err == nil {
		return nil
	}
	ae := h.apiErrorOf(err)
	span.SetAttributes(attribute.Int("shortener.api.status", ae.status))
	if ae.status >= http.StatusInternalServerError {
		tracing.Fail(span, err)
	}
	writeAPIError(w, ae)
	return nil
}

// answerAPI writes err, if any, as the API's JSON error (see apiErrorOf).
func (h *Handler) answerAPI(w http.ResponseWriter, err error) {
	if err != nil {
		writeAPIError(w, h.apiErrorOf(err))
	}
}

func writeAPIError(w http.ResponseWriter, ae apiError) {
	if ae.status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="shortener"`)
	}
	writeJSON(w, ae.status, map[string]string{"error": ae.msg})
}

// apiErrorOf is the answer to err: its own status and message, or a 500
// for one that is not an apiError, logged.
func (h *Handler) apiErrorOf(err error) apiError {
	var ae apiError
	var se interface{ HTTPStatus() int }
	if errors.As(err, &se) {
		ae = apiError{se.HTTPStatus(), err.Error()}
	} else if !errors.As(err, &ae) {
		h.logger.Error("shortener api", zap.Error(err))
		ae = apiError{http.StatusInternalServerError, "internal error"}
	}
	return ae
}

func (h *Handler) routeAPI(w http.ResponseWriter, r *http.Request, rest string) error {
	if rest == "/openapi.json" {
		return h.serveOpenAPI(w, r)
	}
	r, err := h.authorize(w, r)
	if err != nil {
		return err
	}
	if err := checkQuery(r.URL.RawQuery); err != nil {
		return err
	}
	if rest == "/links" || strings.HasPrefix(rest, "/links/") {
		if r, err = h.withAPIDomain(r); err != nil {
			return err
		}
	}
	switch {
	case rest == "/links":
		switch r.Method {
		case http.MethodPost:
			return h.apiCreate(w, r)
		case http.MethodGet, http.MethodHead:
			return h.apiList(w, r)
		}
		w.Header().Set("Allow", "GET, HEAD, POST")
		return apiErr(http.StatusMethodNotAllowed, "method %s not allowed on %s", r.Method, "links")
	case rest == "/links/export":
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			return apiErr(http.StatusMethodNotAllowed, "method %s not allowed on %s", r.Method, "links/export")
		}
		return h.apiExport(w, r)
	case rest == "/links/batch":
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			return apiErr(http.StatusMethodNotAllowed, "method %s not allowed on %s", r.Method, "links/batch")
		}
		return h.apiBatch(w, r)
	case rest == "/rules/preview":
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			return apiErr(http.StatusMethodNotAllowed, "method %s not allowed on rules/preview", r.Method)
		}
		return h.apiPreview(w, r)
	case rest == "/webhooks" || strings.HasPrefix(rest, "/webhooks/"):
		return h.serveWebhooks(w, r, rest)
	case rest == "/domains" || strings.HasPrefix(rest, "/domains/"):
		return h.serveDomains(w, r, rest)
	case rest == "/stats":
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			return apiErr(http.StatusMethodNotAllowed, "method %s not allowed on stats", r.Method)
		}
		if h.keyDomains(r) != nil {
			return apiErr(http.StatusForbidden, "the overview spans every link domain: a key scoped to domains reads its links' stats (links/<code>/stats?domain=)")
		}
		return h.apiOverview(w, r)
	case strings.HasPrefix(rest, "/links/") && strings.HasSuffix(rest, "/stats") && strings.Count(rest, "/") == 3:
		return getOnly(w, r, "stats", func() error { return h.apiStats(w, r, linkKey(r, rest[len("/links/"):len(rest)-len("/stats")])) })
	case strings.HasPrefix(rest, "/links/") && strings.HasSuffix(rest, "/qr") && strings.Count(rest, "/") == 3:
		return getOnly(w, r, "qr", func() error { return h.apiQR(w, r, linkKey(r, rest[len("/links/"):len(rest)-len("/qr")])) })
	case strings.HasPrefix(rest, "/links/") && strings.HasSuffix(rest, "/history") && strings.Count(rest, "/") == 3:
		return getOnly(w, r, "history", func() error { return h.apiHistory(w, r, linkKey(r, rest[len("/links/"):len(rest)-len("/history")])) })
	case strings.HasPrefix(rest, "/links/") && strings.Count(rest, "/") == 2:
		code := linkKey(r, rest[len("/links/"):])
		switch r.Method {
		case http.MethodGet, http.MethodHead:
			return h.apiGet(w, r, code)
		case http.MethodPatch:
			return h.apiPatch(w, r, code)
		case http.MethodDelete:
			return h.apiDelete(w, r, code)
		}
		w.Header().Set("Allow", "GET, HEAD, PATCH, DELETE")
		return apiErr(http.StatusMethodNotAllowed, "method %s not allowed on a link", r.Method)
	}
	return apiErr(http.StatusNotFound, "no such API endpoint")
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (h *Handler) shortURL(r *http.Request, code string) string {
	if h.baseURL != nil {
		return h.baseURL.String() + "/" + code
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host + "/" + code
}

// getOnly runs f for GET and HEAD, else answers 405 naming what.
func getOnly(w http.ResponseWriter, r *http.Request, what string, f func() error) error {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		return apiErr(http.StatusMethodNotAllowed, "method %s not allowed on %s", r.Method, what)
	}
	return f()
}

// linkKey is the key of the link with code on the request's link domain.
func linkKey(r *http.Request, code string) string {
	return link.DomainKey(domainIn(r.Context()), code)
}

// linkURL is the short URL of the link stored under key: on the default
// domain, shortURL's; on a link domain, https (http when base_url is)
// and the domain's host.
func (h *Handler) linkURL(r *http.Request, key string) string {
	host, code := link.SplitDomainKey(key)
	switch {
	case host == "":
		return h.shortURL(r, code)
	case h.baseURL != nil && h.baseURL.Scheme == "http":
		return "http://" + host + "/" + code
	}
	return "https://" + host + "/" + code
}

func (h *Handler) response(r *http.Request, l link.Link) link.Response {
	host, code := link.SplitDomainKey(l.Code)
	out := link.Response{Code: code, Domain: host, ShortURL: h.linkURL(r, l.Code), LongURL: l.LongURL, CreatedAt: l.CreatedAt.UTC()}
	out.ExpiresAt, out.RevokedAt = link.UTCOrNil(l.ExpiresAt), link.UTCOrNil(l.RevokedAt)
	out.Title, out.Notes = link.TextOrNil(l.Title), link.TextOrNil(l.Notes)
	out.Tags = link.TagsOrNil(l.Tags)
	out.RuleResponse = link.RulesResponse(l)
	out.TargetingResponse = link.TargetingOf(l)
	return out
}

// apiTimeout bounds one API call's store work, waiting for a pooled
// connection included (PostgreSQL's statement_timeout bounds each statement).
const apiTimeout = 10 * time.Second

// storeErr logs a store failure and answers 503.
func (h *Handler) storeErr(err error) error {
	h.logger.Warn("shortener api: store failed", zap.Error(err))
	return apiError{http.StatusServiceUnavailable, "link store unavailable, nothing was changed"}
}

// createErr answers a failed Create. A write that timed out may still
// commit on the server after we gave up (a stalled database runs the
// INSERT late), so the client is told the outcome is unknown rather than
// "nothing was changed".
func (h *Handler) createErr(err error) error {
	if !pgconn.Timeout(err) && !errors.Is(err, context.DeadlineExceeded) {
		return h.storeErr(err)
	}
	h.logger.Warn("shortener api: store did not answer in time; the link may have been created", zap.Error(err))
	return apiError{http.StatusServiceUnavailable, "link store did not answer in time: the link may have been created; retry with the same Idempotency-Key (or the same custom code: 409 means it exists)"}
}

// apiCreate answers POST <api>/links.
func (h *Handler) apiCreate(w http.ResponseWriter, r *http.Request) error {
	key, err := idemKey(r)
	if err != nil {
		return err
	}
	body, err := readBody(w, r, maxBody)
	if err != nil {
		return err
	}
	claim := idemClaimOf(r, key, body)
	req, err := decodeLinkRequest(body)
	if claim != nil || (err == nil && req.Reuse) {
		return h.apiCreateTx(w, r, claim, req, err)
	}
	if err != nil {
		return err
	}
	l, mode, err := h.newLink(r, req)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), apiTimeout)
	defer cancel()
	switch {
	case req.Code != "":
		if err := h.checkCustomCode(req.Code); err != nil {
			return err
		}
		l.Code, l.Custom = link.DomainKey(domainIn(ctx), req.Code), true
		if err := h.store.Create(ctx, l); errors.Is(err, link.ErrCodeTaken) {
			return apiErr(http.StatusConflict, "code '%s' is already taken", req.Code)
		} else if err != nil {
			return h.createErr(err)
		}
	case mode == "sequential":
		if err := h.createSequential(ctx, &l); err != nil {
			return err
		}
	default:
		if err := h.createRandom(ctx, &l); err != nil {
			return err
		}
	}
	w.Header().Set("ETag", link.ETag(l))
	// The link is committed. Write it through to Redis (replacing any
	// negative entry) and drop it from every L1; a Redis failure here only
	// delays the first redirect until negative entries expire.
	if err := h.cache.publishLink(ctx, l); err != nil {
		h.logger.Warn("writing new link to redis", zap.Error(err))
	}
	writeJSON(w, http.StatusCreated, h.response(r, l))
	return nil
}

// readBody reads a request body of at most limit bytes (413 beyond).
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, apiErr(http.StatusRequestEntityTooLarge, "body larger than %d bytes", limit)
		}
		return nil, apiErr(http.StatusBadRequest, "reading body: %v", err)
	}
	return body, nil
}

// decodeLinkRequest decodes the body of POST <api>/links.
func decodeLinkRequest(body []byte) (link.CreateRequest, error) {
	var req link.CreateRequest
	if err := strictjson.Decode(body, &req); err != nil {
		return req, apiErr(http.StatusBadRequest, "invalid JSON body: %v", err)
	}
	if field := link.InvalidUTF8Field(body); field != "" {
		return req, apiErr(http.StatusBadRequest, "%s is not valid UTF-8", field)
	}
	return req, nil
}

// newLink judges a create request: the link to store (without its code)
// and the code mode, or a 400.
func (h *Handler) newLink(r *http.Request, req link.CreateRequest) (link.Link, string, error) {
	long, err := h.policy.Check(req.LongURL, h.selfHosts(r)...)
	if err != nil {
		return link.Link{}, "", apiErr(http.StatusBadRequest, "%v", err)
	}
	if err := link.CheckMetadata(req.Title, req.Tags, req.Notes); err != nil {
		return link.Link{}, "", apiErr(http.StatusBadRequest, "%v", err)
	}
	now := h.now()
	l := link.Link{LongURL: long, CreatedAt: now.UTC().Truncate(time.Microsecond),
		Title: req.Title, Tags: link.TagsOrNil(req.Tags), Notes: req.Notes}
	if req.ExpiresAt != "" {
		t, err := link.ParseTime(req.ExpiresAt)
		if err != nil {
			return link.Link{}, "", apiErr(http.StatusBadRequest, "expires_at must be an RFC 3339 time")
		}
		if !t.After(now) {
			return link.Link{}, "", apiErr(http.StatusBadRequest, "expires_at is in the past")
		}
		l.ExpiresAt = t.UTC()
	}
	if err := req.ApplyRules(&l); err != nil {
		return link.Link{}, "", apiErr(http.StatusBadRequest, "%v", err)
	}
	if field, err := h.judgeTargeting(r, req.TargetingRequest, &l); err != nil {
		return link.Link{}, "", apiErr(http.StatusBadRequest, "%s", targetingMessage(field, err))
	}
	mode := h.Codes
	switch req.Codes {
	case "":
	case "random", "sequential":
		mode = req.Codes
	default:
		return link.Link{}, "", apiErr(http.StatusBadRequest, "codes must be random or sequential")
	}
	return l, mode, nil
}

// createRandom draws codes until one is free: maxCodeAttempts per length,
// then one character longer.
func (h *Handler) createRandom(ctx context.Context, l *link.Link) error {
	n := h.CodeLength
	for length := n; length < n+3; length++ {
		for range maxCodeAttempts {
			code, err := link.RandomCode(length)
			if err != nil {
				return err
			}
			l.Code = link.DomainKey(domainIn(ctx), code)
			err = h.store.Create(ctx, *l)
			if err == nil {
				return nil
			}
			if !errors.Is(err, link.ErrCodeTaken) {
				return h.createErr(err)
			}
			h.metrics.retries.Inc()
		}
	}
	return apiErr(http.StatusServiceUnavailable, "no free code found")
}

// createSequential takes the next ID of the current block; an ID whose code
// is taken (by a custom code) is skipped.
func (h *Handler) createSequential(ctx context.Context, l *link.Link) error {
	for range maxCodeAttempts {
		id, err := h.blocks.Next(ctx, h.store, int64(h.BlockSize))
		if err != nil {
			return h.storeErr(err)
		}
		l.Code = link.DomainKey(domainIn(ctx), link.SequentialCode(id))
		err = h.store.Create(ctx, *l)
		if err == nil {
			return nil
		}
		if !errors.Is(err, link.ErrCodeTaken) {
			return h.createErr(err)
		}
		h.metrics.retries.Inc()
	}
	return apiErr(http.StatusServiceUnavailable, "no free code found")
}

// selfHosts are the hosts a long URL must not point to.
func (h *Handler) selfHosts(r *http.Request) []string {
	hosts := []string{urlpolicy.HostOnly(r.Host)}
	if h.baseURL != nil {
		hosts = append(hosts, h.baseURL.Hostname())
	}
	return hosts
}

// apiGet answers GET <api>/links/<code>.
func (h *Handler) apiGet(w http.ResponseWriter, r *http.Request, code string) error {
	if !validKey(code) {
		return apiErr(http.StatusNotFound, "link not found")
	}
	ctx, cancel := context.WithTimeout(r.Context(), apiTimeout)
	defer cancel()
	l, err := h.store.Get(ctx, code)
	if errors.Is(err, link.ErrNotFound) {
		return apiErr(http.StatusNotFound, "link not found")
	}
	if err != nil {
		return h.storeErr(err)
	}
	w.Header().Set("ETag", link.ETag(l))
	out := h.response(r, l)
	if h.clicks != nil {
		if n, err := h.clicks.Total(ctx, code); err == nil {
			out.Clicks = &n
		} else {
			h.logger.Warn("shortener api: reading the click total failed", zap.Error(err))
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// apiDelete answers DELETE <api>/links/<code>: the link is revoked in the
// store, its Redis entry replaced by a gone marker and every instance told
// to drop it from L1.
func (h *Handler) apiDelete(w http.ResponseWriter, r *http.Request, code string) error {
	if !validKey(code) {
		return apiErr(http.StatusNotFound, "link not found")
	}
	ctx, cancel := context.WithTimeout(r.Context(), apiTimeout)
	defer cancel()
	now := h.now().UTC()
	err := h.store.Revoke(ctx, code, now)
	if errors.Is(err, link.ErrNotFound) {
		return apiErr(http.StatusNotFound, "link not found")
	}
	if err != nil {
		return h.storeErr(err)
	}
	if err := h.cache.publishLink(ctx, link.Link{Code: code, RevokedAt: now}); err != nil {
		// Other instances would keep redirecting from Redis: say so, so the
		// client retries (revoking again is harmless).
		h.logger.Warn("publishing revocation to redis", zap.Error(err))
		return apiErr(http.StatusServiceUnavailable, "link revoked in the store, but the shared cache could not be updated; retry the DELETE")
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
