package shortener

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/edgekit/caddy-edgekit/shortener/store"
)

func init() {
	caddy.RegisterModule(SessionsAdmin{})
}

// SessionsAdmin is the `admin.api.shortener` module: the dashboard
// sessions of the loaded handlers on Caddy's admin API (never on the
// shortener's own API), to list them and end them before they expire:
//
//	GET    /shortener/sessions[?key=<fingerprint>]   live sessions, per store
//	DELETE /shortener/sessions/<id>                  end one session
//	DELETE /shortener/sessions?key=<fingerprint>     end every session of a key
//
// `<fingerprint>` names an API key as the link history does (16 hex
// digits: `printf %s "$KEY" | sha256sum | cut -c1-16`); `<id>` is a
// session's, from the list (32 hex digits). Handlers on one store share
// its sessions and are listed together. Errors are JSON: {"error": "..."}.
type SessionsAdmin struct{}

// CaddyModule returns the Caddy module information.
func (SessionsAdmin) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "admin.api.shortener",
		New: func() caddy.Module { return new(SessionsAdmin) },
	}
}

// Routes returns the /shortener/ routes.
func (SessionsAdmin) Routes() []caddy.AdminRoute {
	return []caddy.AdminRoute{{Pattern: "/shortener/", Handler: caddy.AdminHandlerFunc(serveSessionsAdmin)}}
}

// The handlers with a dashboard, for the admin API: registered at
// provision, unregistered at cleanup (during a reload both configs' are
// briefly present).
var uiRegistry = struct {
	sync.Mutex
	next     uint64
	handlers map[*Handler]uint64
}{handlers: map[*Handler]uint64{}}

func registerUI(h *Handler) {
	uiRegistry.Lock()
	defer uiRegistry.Unlock()
	uiRegistry.next++
	uiRegistry.handlers[h] = uiRegistry.next
}

func unregisterUI(h *Handler) {
	uiRegistry.Lock()
	defer uiRegistry.Unlock()
	delete(uiRegistry.handlers, h)
}

// sessionGroup is the handlers on one store.
type sessionGroup struct {
	store    sessionStore
	handlers []uiHandlerInfo
	ui       *uiConfig // the first handler's, which judges idle sessions
	now      func() time.Time
}

// uiHandlerInfo is a loaded handler with a dashboard.
type uiHandlerInfo struct {
	Handler uint64 `json:"handler"` // its number in this process
	UI      string `json:"ui"`
}

// sessionGroups are the loaded handlers' stores, in provisioning order.
func sessionGroups() []*sessionGroup {
	uiRegistry.Lock()
	defer uiRegistry.Unlock()
	var out []*sessionGroup
	byStore := map[sessionStore]*sessionGroup{}
	hs := make([]*Handler, 0, len(uiRegistry.handlers))
	for h := range uiRegistry.handlers {
		hs = append(hs, h)
	}
	slices.SortFunc(hs, func(a, b *Handler) int { return int(uiRegistry.handlers[a]) - int(uiRegistry.handlers[b]) })
	for _, h := range hs {
		g := byStore[h.ui.sessions]
		if g == nil {
			g = &sessionGroup{store: h.ui.sessions, ui: h.ui, now: h.now}
			byStore[h.ui.sessions] = g
			out = append(out, g)
		}
		g.handlers = append(g.handlers, uiHandlerInfo{uiRegistry.handlers[h], h.ui.path})
	}
	return out
}

// adminSession is a session as the admin API lists it.
type adminSession struct {
	ID         string    `json:"id"`
	Key        string    `json:"key"` // the API key's fingerprint
	Scope      string    `json:"scope"`
	CreatedAt  time.Time `json:"created_at"`
	LastSeenAt time.Time `json:"last_seen_at"`
	ExpiresAt  time.Time `json:"expires_at"` // when it ends unless used again
}

// sessionsListing is one store's sessions.
type sessionsListing struct {
	Handlers  []uiHandlerInfo `json:"handlers"`
	Sessions  []adminSession  `json:"sessions"`
	Truncated bool            `json:"truncated,omitempty"` // more than maxListedSessions
}

// maxListedSessions bounds the sessions listed per store.
const maxListedSessions = 1000

// sessionsAdminTimeout bounds the store calls of one admin request.
const sessionsAdminTimeout = 5 * time.Second

func serveSessionsAdmin(w http.ResponseWriter, r *http.Request) error {
	rest, ok := strings.CutPrefix(r.URL.Path, "/shortener/sessions")
	if !ok || rest != "" && rest[0] != '/' {
		return adminErr(http.StatusNotFound, "not found: use /shortener/sessions")
	}
	key := r.URL.Query().Get("key")
	if key != "" && !isHex(key, 8) {
		return adminErr(http.StatusBadRequest, "invalid key '%s': want an API key's fingerprint, 16 hex digits", key)
	}
	ctx, cancel := context.WithTimeout(r.Context(), sessionsAdminTimeout)
	defer cancel()
	switch {
	case rest == "" && r.Method == http.MethodGet:
		return listSessions(ctx, w, key)
	case rest == "" && r.Method == http.MethodDelete:
		if key == "" {
			return adminErr(http.StatusBadRequest, "key is required: DELETE /shortener/sessions?key=<fingerprint> or /shortener/sessions/<id>")
		}
		return revokeKeySessions(ctx, w, key)
	case rest != "" && r.Method == http.MethodDelete:
		return revokeSession(ctx, w, rest[1:])
	case rest == "":
		w.Header().Set("Allow", "GET, DELETE")
	default:
		w.Header().Set("Allow", "DELETE")
	}
	return adminErr(http.StatusMethodNotAllowed, "method %s not allowed", r.Method)
}

func listSessions(ctx context.Context, w http.ResponseWriter, key string) error {
	out := []sessionsListing{}
	for _, g := range sessionGroups() {
		now := g.now()
		list, err := g.store.ListSessions(ctx, key, now, maxListedSessions+1)
		if err != nil {
			return adminErr(http.StatusServiceUnavailable, "listing sessions: the link store does not answer")
		}
		l := sessionsListing{Handlers: g.handlers, Sessions: []adminSession{}, Truncated: len(list) > maxListedSessions}
		for _, rec := range list[:min(len(list), maxListedSessions)] {
			s, ok := sessionOfRecord(rec)
			if !ok || !g.ui.alive(s, now) {
				continue // ended: idle, or its record is not one of ours
			}
			sc := "read"
			if s.scope == scopeWrite {
				sc = "write"
			}
			l.Sessions = append(l.Sessions, adminSession{ID: hex.EncodeToString(rec.ID[:]), Key: rec.Key, Scope: sc,
				CreatedAt: rec.CreatedAt.UTC(), LastSeenAt: rec.LastSeen.UTC(),
				ExpiresAt: g.ui.ends(s).UTC()})
		}
		out = append(out, l)
	}
	return writeAdminJSON(w, http.StatusOK, out)
}

func revokeSession(ctx context.Context, w http.ResponseWriter, idHex string) error {
	var id [store.SessionIDLen]byte
	if !isHex(idHex, len(id)) {
		return adminErr(http.StatusBadRequest, "invalid session id '%.64s': want 32 hex digits", idHex)
	}
	_, _ = hex.Decode(id[:], []byte(idHex))
	found := false
	for _, g := range sessionGroups() {
		ok, err := g.store.DeleteSession(ctx, id)
		if err != nil {
			return adminErr(http.StatusServiceUnavailable, "ending the session: the link store does not answer")
		}
		found = found || ok
	}
	if !found {
		return adminErr(http.StatusNotFound, "no session %s", idHex)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func revokeKeySessions(ctx context.Context, w http.ResponseWriter, key string) error {
	n := 0
	for _, g := range sessionGroups() {
		k, err := g.store.DeleteKeySessions(ctx, key)
		if err != nil {
			return adminErr(http.StatusServiceUnavailable, "ending the key's sessions: the link store does not answer")
		}
		n += k
	}
	return writeAdminJSON(w, http.StatusOK, map[string]int{"ended": n})
}

// isHex reports whether s is n bytes in lowercase hex.
func isHex(s string, n int) bool {
	if len(s) != 2*n {
		return false
	}
	for _, c := range []byte(s) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func adminErr(status int, format string, args ...any) error {
	return caddy.APIError{HTTPStatus: status, Err: fmt.Errorf(format, args...)}
}

func writeAdminJSON(w http.ResponseWriter, status int, v any) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	return json.NewEncoder(w).Encode(v)
}

var (
	_ caddy.Module      = (*SessionsAdmin)(nil)
	_ caddy.AdminRouter = (*SessionsAdmin)(nil)
)
