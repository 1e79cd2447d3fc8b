package shortener

import (
	"cmp"
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
	"github.com/edgekit/caddy-edgekit/shortener/store"
)

// The dashboard (ui <path>): pages served from assets embedded in the
// module (ui_assets.go) that call the management API with a session
// cookie (ui_session.go) instead of a Bearer key.

// uiConfig is a provisioned dashboard.
type uiConfig struct {
	path     string // e.g. /admin
	api      string // the API's mount, which the session cookie is also scoped to
	reserved string // its first segment: not a custom code
	maxAge   time.Duration
	idle     time.Duration
	keys     signingKeys
	sessions sessionStore
	limit    *signinLimiter
}

// provisionUI sets up the dashboard once the store is open, and reports a
// link whose code the dashboard's path shadows.
func (h *Handler) provisionUI(ctx caddy.Context, repl *caddy.Replacer) error {
	path := "/" + strings.Trim(h.UI, "/")
	u := &uiConfig{path: path, api: h.API, maxAge: time.Duration(h.UISessionMaxAge), idle: time.Duration(h.UISessionIdle),
		limit: newSigninLimiter()}
	u.reserved, _, _ = strings.Cut(path[1:], "/")
	var ok bool
	if u.sessions, ok = unshared(h.store).(sessionStore); !ok {
		return fmt.Errorf("shortener: the ui needs a store that keeps sessions (postgres or embedded), not %T", unshared(h.store))
	}
	var err error
	if u.keys, err = h.loadSigningKeys(repl, cmp.Or(h.dataDir, caddy.AppDataDir())); err != nil {
		return err
	}
	h.ui = u
	registerUI(h)
	lctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := h.store.Get(lctx, u.reserved); err == nil {
		h.logger.Warn("a link has the code of the dashboard's first path segment: the dashboard answers its path, the link no longer redirects",
			zap.String("code", u.reserved), zap.String("ui", path))
	}
	return nil
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
		if h.UISecret != "" || h.UISecretFile != "" || h.UIPreviousSecret != "" {
			return pos.at("ui_secret", errors.New("a ui secret without ui"))
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
	return h.validateUISecrets(pos)
}

// validateUISecrets judges the signing secrets as configured; one with
// placeholders is judged again once expanded, at provision.
func (h *Handler) validateUISecrets(pos positions) error {
	switch {
	case h.UISecret != "" && h.UISecretFile != "":
		return pos.at("ui_secret_file", errors.New("secret and secret_file both set: give one"))
	case h.UIPreviousSecret != "" && h.UISecret == "" && h.UISecretFile == "":
		return pos.at("ui_previous_secret", errors.New("previous_secret needs the new secret (secret or secret_file)"))
	case h.UIPreviousSecret != "" && h.UIPreviousSecret == h.UISecret:
		return pos.at("ui_previous_secret", errors.New("previous_secret is the same as secret"))
	}
	for _, f := range []struct{ field, v string }{{"ui_secret", h.UISecret}, {"ui_previous_secret", h.UIPreviousSecret}} {
		if f.v != "" && !strings.Contains(f.v, "{") {
			if err := checkUISecret(strings.TrimPrefix(f.field, "ui_"), []byte(f.v)); err != nil {
				return pos.at(f.field, err)
			}
		}
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
		s, csrfKey, err := h.cookieSession(w, r)
		if err != nil {
			return err
		}
		if s == nil {
			return apiErr(http.StatusUnauthorized, "not signed in")
		}
		writeJSON(w, http.StatusOK, h.sessionAnswer(s, csrfKey))
		return nil
	case http.MethodDelete:
		return h.signOut(w, r)
	}
	w.Header().Set("Allow", "GET, HEAD, POST, DELETE")
	return apiErr(http.StatusMethodNotAllowed, "method %s not allowed on session", r.Method)
}

func (h *Handler) sessionAnswer(s *session, csrfKey []byte) sessionAnswer {
	sc := "read"
	if s.scope == scopeWrite {
		sc = "write"
	}
	return sessionAnswer{API: h.API, Scope: sc, CSRFToken: csrfToken(csrfKey, s.sid),
		ExpiresAt: s.created.Add(h.ui.maxAge).UTC()}
}

// maxSignInBody bounds a sign-in body: a key of any sane length.
const maxSignInBody = 1024

// signIn exchanges an API key for a session and its cookie. The client's
// sign-in limit is charged first; only a wrong key counts against the
// limit of all clients (ui_signin_limit.go).
func (h *Handler) signIn(w http.ResponseWriter, r *http.Request) error {
	if err := checkOrigin(r); err != nil {
		return err
	}
	client, ok := h.ui.limit.client(clientip.Addr(r))
	if !ok {
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
		h.ui.limit.failed(client)
		return apiErr(http.StatusUnauthorized, "invalid API key")
	}
	s := h.ui.newSession(sc, d, h.now())
	ctx, cancel := context.WithTimeout(r.Context(), sessionTimeout)
	defer cancel()
	if err := h.ui.sessions.CreateSession(ctx, h.ui.record(s)); err != nil {
		h.logger.Error("dashboard sign-in", zap.Error(err))
		return apiErr(http.StatusServiceUnavailable, "sign-in unavailable: the link store does not answer")
	}
	h.ui.setSessionCookie(w, r, s)
	writeJSON(w, http.StatusOK, h.sessionAnswer(s, h.ui.csrfKey(s)))
	return nil
}

// signOut ends the request's session in the store, so that no copy of its
// cookie works any more, and clears the cookie.
func (h *Handler) signOut(w http.ResponseWriter, r *http.Request) error {
	if err := checkOrigin(r); err != nil {
		return err
	}
	h.ui.setSessionCookie(w, r, nil)
	if id, _, ok := h.ui.cookieID(r); ok {
		ctx, cancel := context.WithTimeout(r.Context(), sessionTimeout)
		defer cancel()
		if _, err := h.ui.sessions.DeleteSession(ctx, id); err != nil {
			h.logger.Error("dashboard sign-out", zap.Error(err))
			return apiErr(http.StatusServiceUnavailable, "sign-out unavailable: the link store does not answer; the session lasts until it expires")
		}
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// cookieSession is the request's valid session (nil: none) and its CSRF
// key: the cookie's signature first, then one store read. A use over
// sessionRefresh after the last one is recorded and re-issues the cookie,
// as does a cookie signed with the previous key.
func (h *Handler) cookieSession(w http.ResponseWriter, r *http.Request) (*session, []byte, error) {
	if h.ui == nil {
		return nil, nil, nil
	}
	u := h.ui
	id, key, ok := u.cookieID(r)
	if !ok {
		return nil, nil, nil
	}
	ctx, cancel := context.WithTimeout(r.Context(), sessionTimeout)
	defer cancel()
	rec, err := u.sessions.GetSession(ctx, id)
	if errors.Is(err, store.ErrSessionNotFound) {
		return nil, nil, nil
	}
	if err != nil {
		h.logger.Error("dashboard session", zap.Error(err))
		return nil, nil, apiErr(http.StatusServiceUnavailable, "sessions unavailable: the link store does not answer")
	}
	s, ok := sessionOfRecord(rec)
	// The previous key verifies only the cookies of sessions it began.
	if !ok || key != 0 && s.signer != u.keys.previous.id {
		return nil, nil, nil
	}
	now := h.now()
	if s.scope = u.current(s, h.apiKeys, now); s.scope == scopeNone {
		return nil, nil, nil
	}
	if now.Sub(s.seen) >= sessionRefresh || key != 0 {
		if err := u.sessions.TouchSession(ctx, id, now); err != nil {
			h.logger.Warn("dashboard session: recording its use", zap.Error(err))
		}
		s.seen = now
		u.setSessionCookie(w, r, s)
	}
	return s, u.csrfKey(s), nil
}
