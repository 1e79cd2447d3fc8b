package ratelimit

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
)

func init() {
	caddy.RegisterModule(AdminAPI{})
}

// AdminAPI is the `admin.api.ratelimit` module: endpoints on Caddy's admin
// API to see the loaded zones, inspect and reset a key, and set or clear
// the global brake. Caddy loads every `admin.api.*` module, so a build
// with this package serves them on the admin endpoint:
//
//	GET    /ratelimit/zones                      the loaded zones and their config
//	GET    /ratelimit/zones/<zone>/keys/<key>    a key's state, read without charging it
//	DELETE /ratelimit/zones/<zone>/keys/<key>    reset the key: its full quota is back
//	GET    /ratelimit/zones/<zone>/bans          the zone's bans in force
//	DELETE /ratelimit/zones/<zone>/bans/<id>     lift one (id: from the list)
//	GET    /ratelimit/zones/<zone>/usage         each key's usage in a period (see admin_usage.go)
//	GET    /ratelimit/brake                      the brake of each store
//	PUT    /ratelimit/brake {"factor": 0.1, "ttl": "10m"}
//	DELETE /ratelimit/brake
//
// `<key>` is the expanded key value (an API key, an IP...), path-escaped.
// Key endpoints accept the query parameters `hash_tag` (the request's
// expanded `hash_tag`, when the handler has one), `plan` (the plan key of
// a zone with plans; default: the key itself when `plan_key` is the zone's
// key), `events`, `burst`, `window` (values of placeholder quotas) and
// `handler` (one handler's number, from GET /ratelimit/zones). A zone name
// used by several loaded handlers (routes) answers for each.
// Errors are JSON: {"error": "..."}.
type AdminAPI struct{}

// CaddyModule returns the Caddy module information.
func (AdminAPI) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "admin.api.ratelimit",
		New: func() caddy.Module { return new(AdminAPI) },
	}
}

// Routes returns the /ratelimit/ routes.
func (a AdminAPI) Routes() []caddy.AdminRoute {
	return []caddy.AdminRoute{{Pattern: "/ratelimit/", Handler: caddy.AdminHandlerFunc(a.serve)}}
}

// adminTimeout bounds the store calls of one admin request.
const adminTimeout = 5 * time.Second

func (a AdminAPI) serve(w http.ResponseWriter, r *http.Request) error {
	path := strings.TrimPrefix(r.URL.EscapedPath(), "/ratelimit/")
	switch {
	case path == "zones" || path == "zones/":
		if err := allowMethods(w, r, http.MethodGet); err != nil {
			return err
		}
		return writeJSON(w, http.StatusOK, zoneInfos())
	case strings.HasPrefix(path, "zones/") && isUsagePath(path):
		zone := strings.TrimSuffix(strings.TrimPrefix(path, "zones/"), "/usage")
		return serveUsage(w, r, zone)
	case strings.HasPrefix(path, "zones/") && isBansPath(path):
		zone, rest, _ := strings.Cut(strings.TrimPrefix(path, "zones/"), "/bans")
		return serveBans(w, r, zone, rest)
	case strings.HasPrefix(path, "zones/"):
		zone, key, ok := strings.Cut(strings.TrimPrefix(path, "zones/"), "/keys/")
		if !ok || zone == "" || strings.Contains(zone, "/") {
			return apiError(http.StatusNotFound, "not found: use /ratelimit/zones/<zone>/keys/<key>")
		}
		k, err := url.PathUnescape(key)
		if err != nil {
			return apiError(http.StatusBadRequest, "invalid key escape: %v", err)
		}
		if err := allowMethods(w, r, http.MethodGet, http.MethodDelete); err != nil {
			return err
		}
		if r.Method == http.MethodDelete {
			return resetKey(w, r, zone, k)
		}
		return inspectKey(w, r, zone, k)
	case path == "brake":
		if err := allowMethods(w, r, http.MethodGet, http.MethodPut, http.MethodDelete); err != nil {
			return err
		}
		switch r.Method {
		case http.MethodPut:
			return setBrake(w, r)
		case http.MethodDelete:
			return clearBrake(w, r)
		}
		return getBrake(w, r)
	}
	return apiError(http.StatusNotFound, "not found: %s", r.URL.Path)
}

// allowMethods answers 405 (with Allow) unless r's method is one of methods.
func allowMethods(w http.ResponseWriter, r *http.Request, methods ...string) error {
	for _, m := range methods {
		if r.Method == m {
			return nil
		}
	}
	w.Header().Set("Allow", strings.Join(methods, ", "))
	return apiError(http.StatusMethodNotAllowed, "method %s not allowed", r.Method)
}

func apiError(status int, format string, args ...any) error {
	return caddy.APIError{HTTPStatus: status, Err: fmt.Errorf(format, args...)}
}

func writeJSON(w http.ResponseWriter, status int, v any) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	return json.NewEncoder(w).Encode(v)
}

var (
	_ caddy.Module      = (*AdminAPI)(nil)
	_ caddy.AdminRouter = (*AdminAPI)(nil)
)
