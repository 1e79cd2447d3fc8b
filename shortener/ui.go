package shortener

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/edgekit/caddy-edgekit/internal/clientip"
	"github.com/edgekit/caddy-edgekit/internal/strictjson"
)

// The dashboard (ui <path>): pages served from assets embedded in the
// module (ui_assets.go) that call the management API with a session
// cookie (ui_session.go) instead of a Bearer key.

// uiConfig is a provisioned dashboard.
type uiConfig struct {
	path     string // e.g. /admin
	reserved string // its first segment: not a custom code
	maxAge   time.Duration
	idle     time.Duration
	secret   secretCache
	limit    *signinLimiter
}

// provisionUI sets up the dashboard once the store is open, and reports a
// link whose code the dashboard's path shadows.
func (h *Handler) provisionUI(ctx caddy.Context) {
	path := "/" + strings.Trim(h.UI, "/")
	u := &uiConfig{path: path, maxAge: time.Duration(h.UISessionMaxAge), idle: time.Duration(h.UISessionIdle),
		limit: newSigninLimiter()}
	u.reserved, _, _ = strings.Cut(path[1:], "/")
	u.secret = secretCache{name: uiSessionSecret}
	u.secret.src, _ = unshared(h.store).(secretKeeper)
	h.ui = u
	lctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := h.store.Get(lctx, u.reserved); err == nil {
		h.logger.Warn("a link has the code of the dashboard's first path segment: the dashboard answers its path, the link no longer redirects",
			zap.String("code", u.reserved), zap.String("ui", path))
	}
}

// uiDefaults fills the session lifetimes' defaults.
func (h *Handler) uiDefaults() {
	if h.UI == "" {
		return
	}
	if h.UISessionMaxAge == 0 {
		h.UISessionMaxAge = caddy.Duration(DefaultUISessionMaxAge)
	}
	if h.UISessionIdle == 0 {
		h.UISessionIdle = caddy.Duration(min(DefaultUISessionIdle, time.Duration(h.UISessionMaxAge)))
	}
}

// validateUI judges the dashboard's path and session lifetimes.
func (h *Handler) validateUI(pos positions) error {
	if h.UI == "" {
		if h.UISessionMaxAge != 0 || h.UISessionIdle != 0 {
			return pos.at("ui_session_max_age", errors.New("session lifetimes without ui"))
		}
		return nil
	}
	ui := "/" + strings.Trim(h.UI, "/")
	switch {
	case h.UI[0] != '/' || ui == "/":
		return pos.at("ui", fmt.Errorf("invalid ui path '%s': must start with / and not be /", h.UI))
	case h.API == "":
		return pos.at("ui", errors.New("the ui needs the api (api <path> and a key): the dashboard calls it"))
	case pathWithin(ui, "/"+strings.Trim(h.API, "/")) || pathWithin("/"+strings.Trim(h.API, "/"), ui):
		return pos.at("ui", fmt.Errorf("ui path '%s' and api path '%s' overlap", h.UI, h.API))
	}
	maxAge, idle := time.Duration(h.UISessionMaxAge), time.Duration(h.UISessionIdle)
	if maxAge != 0 && (maxAge < minUISessionLifetime || maxAge > maxUISessionMaxAge) {
		return pos.at("ui_session_max_age", fmt.Errorf("invalid session_max_age %s: want %s to %s", maxAge, minUISessionLifetime, maxUISessionMaxAge))
	}
	if idle != 0 && (idle < minUISessionLifetime || maxAge != 0 && idle > maxAge || idle > maxUISessionMaxAge) {
		return pos.at("ui_session_idle", fmt.Errorf("invalid session_idle %s: want %s to session_max_age", idle, minUISessionLifetime))
	}
	return nil
}

// pathWithin reports whether path is base or below it.
func pathWithin(path, base string) bool {
	return path == base || strings.HasPrefix(path, base) && path[len(base)] == '/'
}

// serveUI answers the dashboard's paths; rest is the path after its mount.
func (h *Handler) serveUI(w http.ResponseWriter, r *http.Request, rest string) error {
	if rest == "/session" {
		h.answerAPI(w, h.serveSession(w, r))
		return nil
	}
	if rest == "" {
		http.Redirect(w, r, h.ui.path+"/", http.StatusPermanentRedirect)
		return nil
	}
	serveUIAsset(w, r, rest)
	return nil
}

// sessionAnswer is the body of POST and GET <ui>/session.
type sessionAnswer struct {
	API       string    `json:"api"` // the API's mount, which the pages call
	Scope     string    `json:"scope"`
	CSRFToken string    `json:"csrf_token"`
	ExpiresAt time.Time `json:"expires_at"`
}

// serveSession signs in (POST {"key": ...}), tells the session (GET) and
// signs out (DELETE).
func (h *Handler) serveSession(w http.ResponseWriter, r *http.Request) error {
	switch r.Method {
	case http.MethodPost:
		return h.signIn(w, r)
	case http.MethodGet, http.MethodHead:
		s, secret, err := h.cookieSession(w, r)
		if err != nil {
			return err
		}
		if s == nil {
			return apiErr(http.StatusUnauthorized, "not signed in")
		}
		writeJSON(w, http.StatusOK, h.sessionAnswer(s, secret))
		return nil
	case http.MethodDelete:
		if err := checkOrigin(r); err != nil {
			return err
		}
		h.ui.setSessionCookie(w, r, nil, nil)
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	w.Header().Set("Allow", "GET, HEAD, POST, DELETE")
	return apiErr(http.StatusMethodNotAllowed, "method %s not allowed on session", r.Method)
}

func (h *Handler) sessionAnswer(s *session, secret []byte) sessionAnswer {
	u := h.ui
	sc := "read"
	if s.scope == scopeWrite {
		sc = "write"
	}
	return sessionAnswer{API: h.API, Scope: sc, CSRFToken: csrfToken(secret, s.sid),
		ExpiresAt: time.Unix(s.issued, 0).Add(u.maxAge).UTC()}
}

// maxSignInBody bounds a sign-in body: a key of any sane length.
const maxSignInBody = 1024

// signIn exchanges an API key for a session cookie.
func (h *Handler) signIn(w http.ResponseWriter, r *http.Request) error {
	if err := checkOrigin(r); err != nil {
		return err
	}
	if !h.ui.limit.allow(clientip.Addr(r)) {
		w.Header().Set("Retry-After", fmt.Sprint(int(signinRetryAfter/time.Second)))
		return apiErr(http.StatusTooManyRequests, "too many sign-in attempts: wait and try again")
	}
	body, err := readBody(w, r, maxSignInBody)
	if err != nil {
		return err
	}
	var req struct {
		Key string `json:"key"`
	}
	if err := strictjson.Decode(body, &req); err != nil {
		return apiErr(http.StatusBadRequest, "invalid JSON body: %v", err)
	}
	if req.Key == "" {
		return apiErr(http.StatusBadRequest, "key is required")
	}
	d := keyDigest(req.Key)
	sc := h.scopeOfDigest(d)
	if sc == scopeNone {
		return apiErr(http.StatusUnauthorized, "invalid API key")
	}
	secret, err := h.ui.secret.get(r.Context())
	if err != nil {
		h.logger.Error("dashboard session secret", zap.Error(err))
		return apiErr(http.StatusServiceUnavailable, "sign-in unavailable: the link store does not answer")
	}
	s := newSession(sc, d, h.now())
	h.ui.setSessionCookie(w, r, secret, s)
	writeJSON(w, http.StatusOK, h.sessionAnswer(s, secret))
	return nil
}

// cookieSession is the request's valid session (nil: none), re-issued
// when its last use is older than sessionRefresh.
func (h *Handler) cookieSession(w http.ResponseWriter, r *http.Request) (*session, []byte, error) {
	if h.ui == nil {
		return nil, nil, nil
	}
	c, err := r.Cookie(cookieName(r))
	if err != nil || c.Value == "" {
		return nil, nil, nil
	}
	secret, err := h.ui.secret.get(r.Context())
	if err != nil {
		h.logger.Error("dashboard session secret", zap.Error(err))
		return nil, nil, apiErr(http.StatusServiceUnavailable, "sessions unavailable: the link store does not answer")
	}
	s, ok := decodeSession(secret, c.Value)
	if !ok {
		return nil, nil, nil
	}
	now := h.now()
	if s.scope = h.ui.current(s, h.apiKeys, now); s.scope == scopeNone {
		return nil, nil, nil
	}
	if now.Unix()-s.seen >= int64(sessionRefresh/time.Second) {
		s.seen = now.Unix()
		h.ui.setSessionCookie(w, r, secret, s)
	}
	return s, secret, nil
}
