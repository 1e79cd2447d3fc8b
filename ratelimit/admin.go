package ratelimit

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/edgekit/caddy-edgekit/internal/pgpool"
	"github.com/edgekit/caddy-edgekit/internal/strictjson"
	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
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

// zoneInfo is one loaded zone, as GET /ratelimit/zones lists it.
type zoneInfo struct {
	Handler     uint64        `json:"handler"` // the handler's number in this process
	Store       string        `json:"store"`   // redis, memory or custom
	Name        string        `json:"name"`
	Key         string        `json:"key"`
	Algorithm   string        `json:"algorithm"`
	Events      int64         `json:"events,omitempty"`
	Window      string        `json:"window,omitempty"`
	Burst       int64         `json:"burst,omitempty"`
	Cost        string        `json:"cost,omitempty"`
	Dynamic     *DynamicQuota `json:"dynamic,omitempty"`
	Plans       *plansInfo    `json:"plans,omitempty"`
	CountStatus []int         `json:"count_status,omitempty"`
	OnError     string        `json:"on_error"`
	DryRun      bool          `json:"dry_run,omitempty"`
	Brake       float64       `json:"brake"` // the factor the handler applies now
}

// plansInfo is a zone's plans source and what has been read of it.
type plansInfo struct {
	Postgres string    `json:"postgres"` // without its password
	Table    string    `json:"table"`
	Refresh  string    `json:"refresh"`
	PlanKey  string    `json:"plan_key"`
	Plans    int       `json:"plans"`              // rows loaded
	LoadedAt time.Time `json:"loaded_at,omitzero"` // last successful read
	Failures int64     `json:"failures,omitempty"` // failed reads since
}

func zoneInfos() []zoneInfo {
	out := []zoneInfo{}
	for _, e := range loadedHandlers() {
		for _, z := range e.h.Zones {
			info := zoneInfo{
				Handler:     e.id,
				Store:       storeName(e.h),
				Name:        z.Name,
				Key:         z.Key,
				Algorithm:   z.limit.Algorithm,
				Events:      z.Events,
				Burst:       z.Burst,
				Cost:        string(z.Cost),
				Dynamic:     z.Dynamic,
				CountStatus: z.CountStatus,
				OnError:     [...]string{"open", "closed", "local"}[z.onError],
				DryRun:      z.DryRun,
				Brake:       e.h.brake.factor(),
			}
			if z.Window > 0 {
				info.Window = time.Duration(z.Window).String()
			}
			if q := z.quota; q != nil && q.plans != nil && z.Plans != nil {
				p := &plansInfo{
					Postgres: redactDSN(z.Plans.Postgres),
					Table:    cmp.Or(z.Plans.Table, DefaultPlansTable),
					Refresh:  q.plans.refresh.String(),
					PlanKey:  q.planKey,
					Failures: q.plans.fails.Load(),
				}
				t := q.plans.table.Load()
				p.Plans, p.LoadedAt = len(t.byKey), t.loaded
				info.Plans = p
			}
			out = append(out, info)
		}
	}
	return out
}

// redactDSN hides the password of a DSN; a placeholder is shown as is.
func redactDSN(dsn string) string {
	if isTemplate(dsn) {
		return dsn
	}
	return pgpool.Redact(dsn)
}

func storeName(h *Handler) string {
	switch {
	case h.inProcess:
		return "memory"
	case h.client != nil:
		return "redis"
	}
	return "custom"
}

// keyState is a key's state in one handler's zone, read without charging.
type keyState struct {
	Handler   uint64  `json:"handler"`
	Zone      string  `json:"zone"`
	Algorithm string  `json:"algorithm"`
	Events    int64   `json:"events"` // the quota applied, after plans and brake
	Window    string  `json:"window"`
	Burst     int64   `json:"burst,omitempty"`
	Quota     string  `json:"quota"` // static, plan or dynamic
	Brake     float64 `json:"brake"`
	// Remaining units now (the next request at cost 1 leaves one less).
	Remaining int64 `json:"remaining"`
	// Allowed: whether a request at cost 1 would pass now.
	Allowed bool `json:"allowed"`
	// RetryAfter: when not allowed, the Retry-After a request would get
	// (whole seconds), and the exact wait in milliseconds.
	RetryAfter   int64 `json:"retry_after,omitempty"`
	RetryAfterMs int64 `json:"retry_after_ms,omitempty"`
	// Reset: the time until the quota is fully available again, in whole
	// seconds (RateLimit's t) and in milliseconds.
	Reset   int64     `json:"reset"`
	ResetMs int64     `json:"reset_ms"`
	Now     time.Time `json:"now,omitzero"` // the store's clock
	// Error: this handler's state could not be read (when several
	// handlers have the zone).
	Error string `json:"error,omitempty"`
}

// zoneTarget is one loaded handler's zone of a given name.
type zoneTarget struct {
	e *loadedHandler
	z *Zone
}

// findZone returns every loaded zone called name.
func findZone(name string) ([]zoneTarget, error) {
	var out []zoneTarget
	for _, e := range loadedHandlers() {
		for _, z := range e.h.Zones {
			if z.Name == name {
				out = append(out, zoneTarget{e, z})
			}
		}
	}
	if len(out) == 0 {
		return nil, apiError(http.StatusNotFound, "no loaded zone %q", name)
	}
	return out, nil
}

// storeKey is the store key of value in the target's zone.
func (t zoneTarget) storeKey(r *http.Request, value string) string {
	tag := ""
	if t.e.h.HashTag != "" {
		if tag = r.URL.Query().Get("hash_tag"); tag == "" {
			tag = t.e.h.HashTag // as ServeHTTP does for an empty expansion
		}
	}
	return limiter.StoreKey(t.e.h.prefix, t.z.Name, tag, value)
}

// limit is the quota a request with key value would get in the target's
// zone: its plan (query `plan`, or the key itself when the plan key is the
// zone's key), else its own quota with placeholders from the query, under
// the brake in force.
func (t zoneTarget) limit(q url.Values, value string) (limiter.Limit, quotaSource, error) {
	l, src := t.z.limit, sourceStatic
	if zq := t.z.quota; zq != nil {
		found := false
		if zq.plans != nil {
			pk, ok := q.Get("plan"), q.Has("plan")
			if !ok && zq.planKey == t.z.Key {
				pk, ok = value, true
			}
			var p plan
			if ok {
				p, found = zq.plans.lookup(pk)
			}
			if found {
				l, src = zq.planLimit(p), sourcePlan
			}
		}
		if !found && zq.dynamic != nil {
			var err error
			l, err = zq.expandLimit(func(field, tmpl string) (string, error) {
				if !q.Has(field) {
					return "", apiError(http.StatusBadRequest,
						"zone %q: %s is a placeholder (%s): pass its value as ?%s=", t.z.Name, field, tmpl, field)
				}
				return q.Get(field), nil
			})
			if err != nil {
				var ae caddy.APIError
				if errors.As(err, &ae) {
					return l, src, err
				}
				return l, src, apiError(http.StatusBadRequest, "%v", err)
			}
			src = sourceDynamic
		}
	}
	if f := t.e.h.brake.factor(); f < 1 {
		l = braked(l, f)
	}
	return l, src, nil
}

func inspectKey(w http.ResponseWriter, r *http.Request, zone, value string) error {
	targets, err := findZone(zone)
	if err != nil {
		return err
	}
	if id := r.URL.Query().Get("handler"); id != "" {
		targets = slices.DeleteFunc(targets, func(t zoneTarget) bool { return strconv.FormatUint(t.e.id, 10) != id })
		if len(targets) == 0 {
			return apiError(http.StatusNotFound, "no loaded zone %q in handler %s", zone, id)
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), adminTimeout)
	defer cancel()
	out := make([]keyState, 0, len(targets))
	for _, t := range targets {
		s, err := t.inspect(ctx, r, value)
		if err != nil {
			if len(targets) == 1 {
				return err
			}
			// Several handlers have the zone: report each.
			s = keyState{Handler: t.e.id, Zone: zone, Error: err.Error()}
		}
		out = append(out, s)
	}
	return writeJSON(w, http.StatusOK, out)
}

// inspect reads the state of key value in the target's zone.
func (t zoneTarget) inspect(ctx context.Context, r *http.Request, value string) (keyState, error) {
	l, src, err := t.limit(r.URL.Query(), value)
	if err != nil {
		return keyState{}, err
	}
	// Cost 0 reads the state and charges nothing.
	res, err := t.e.h.store.Decide(ctx, []limiter.Ask{{Key: t.storeKey(r, value), Limit: l}})
	if err == nil && len(res) != 1 {
		err = fmt.Errorf("store returned %d results for 1 zone", len(res))
	}
	if err != nil {
		return keyState{}, apiError(http.StatusServiceUnavailable, "zone %q: reading the store: %v", t.z.Name, err)
	}
	s := keyState{
		Handler:   t.e.id,
		Zone:      t.z.Name,
		Algorithm: l.Algorithm,
		Events:    l.Events,
		Window:    l.Window.String(),
		Burst:     l.Burst,
		Quota:     src.String(),
		Brake:     t.e.h.brake.factor(),
		Remaining: res[0].Remaining,
		Allowed:   res[0].Allowed,
		Reset:     ceilSeconds(res[0].Reset),
		ResetMs:   res[0].Reset.Milliseconds(),
		Now:       res[0].Now,
	}
	if !s.Allowed {
		s.RetryAfter = retryAfterSeconds(res[0].RetryAfter)
		s.RetryAfterMs = (res[0].RetryAfter + time.Millisecond - 1).Milliseconds()
	}
	return s, nil
}

func resetKey(w http.ResponseWriter, r *http.Request, zone, value string) error {
	targets, err := findZone(zone)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), adminTimeout)
	defer cancel()
	var handlers []uint64
	for _, t := range targets {
		key := t.storeKey(r, value)
		rs, ok := t.e.h.store.(limiter.Resetter)
		if !ok {
			return apiError(http.StatusNotImplemented, "zone %q: the store of handler %d cannot reset keys", zone, t.e.id)
		}
		if err := rs.Reset(ctx, key); err != nil {
			return apiError(http.StatusServiceUnavailable, "zone %q: resetting the key: %v", zone, err)
		}
		if t.e.h.local != nil {
			_ = t.e.h.local.Reset(ctx, key) // in process: does not fail
		}
		t.e.h.forgetDenied(key)
		handlers = append(handlers, t.e.id)
	}
	return writeJSON(w, http.StatusOK, map[string]any{"zone": zone, "reset": true, "handlers": handlers})
}

// brakeTarget is one place a brake lives, with the handlers it applies to.
type brakeTarget struct {
	store    brakeStore
	desc     string
	handlers []*loadedHandler
}

// brakeTargets groups the loaded handlers by where their brake lives.
func brakeTargets() []*brakeTarget {
	var out []*brakeTarget
	byID := map[string]*brakeTarget{}
	for _, e := range loadedHandlers() {
		if e.brakeStore == nil {
			continue
		}
		t := byID[e.brakeID]
		if t == nil {
			t = &brakeTarget{store: e.brakeStore, desc: e.brakeDesc}
			byID[e.brakeID] = t
			out = append(out, t)
		}
		t.handlers = append(t.handlers, e)
	}
	return out
}

// brakeInfo is one brake, as the brake endpoints report it.
type brakeInfo struct {
	Store    string   `json:"store"`
	Factor   float64  `json:"factor"`
	Handlers []uint64 `json:"handlers"`
	Error    string   `json:"error,omitempty"`
}

func getBrake(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), adminTimeout)
	defer cancel()
	out := []brakeInfo{}
	for _, t := range brakeTargets() {
		info := t.info()
		f, err := t.store.get(ctx)
		info.Factor = f
		if err != nil {
			info.Error = err.Error()
		}
		out = append(out, info)
	}
	return writeJSON(w, http.StatusOK, out)
}

func (t *brakeTarget) info() brakeInfo {
	info := brakeInfo{Store: t.desc, Factor: 1}
	for _, e := range t.handlers {
		info.Handlers = append(info.Handlers, e.id)
	}
	return info
}

// brakeRequest is the body of PUT /ratelimit/brake.
type brakeRequest struct {
	Factor float64        `json:"factor"`
	TTL    caddy.Duration `json:"ttl,omitempty"`
}

func setBrake(w http.ResponseWriter, r *http.Request) error {
	var req brakeRequest
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<16))
	if err != nil {
		return apiError(http.StatusBadRequest, "reading body: %v", err)
	}
	if err := strictjson.Decode(body, &req); err != nil {
		return apiError(http.StatusBadRequest, "invalid body: %v", err)
	}
	ttl := time.Duration(req.TTL)
	if ttl == 0 {
		ttl = DefaultBrakeTTL
	}
	if err := checkBrake(req.Factor, ttl); err != nil {
		return apiError(http.StatusBadRequest, "%v", err)
	}
	return applyBrake(w, r, func(ctx context.Context, s brakeStore) error { return s.set(ctx, req.Factor, ttl) },
		map[string]any{"factor": req.Factor, "ttl": ttl.String()})
}

func clearBrake(w http.ResponseWriter, r *http.Request) error {
	return applyBrake(w, r, func(ctx context.Context, s brakeStore) error { return s.clear(ctx) },
		map[string]any{"factor": 1})
}

// applyBrake runs op on every brake store, then refreshes the handlers of
// this process at once (other instances follow within a second).
func applyBrake(w http.ResponseWriter, r *http.Request, op func(context.Context, brakeStore) error, resp map[string]any) error {
	targets := brakeTargets()
	if len(targets) == 0 {
		return apiError(http.StatusConflict, "no ratelimit handler is loaded")
	}
	ctx, cancel := context.WithTimeout(r.Context(), adminTimeout)
	defer cancel()
	stores := make([]brakeInfo, 0, len(targets))
	var errs []string
	for _, t := range targets {
		info := t.info()
		if err := op(ctx, t.store); err != nil {
			info.Error = err.Error()
			errs = append(errs, t.desc+": "+err.Error())
		}
		for _, e := range t.handlers {
			e.brake.refresh(ctx)
		}
		info.Factor = t.handlers[0].brake.factor()
		stores = append(stores, info)
	}
	if len(errs) > 0 {
		return apiError(http.StatusBadGateway, "brake not applied everywhere: %s", strings.Join(errs, "; "))
	}
	resp["stores"] = stores
	return writeJSON(w, http.StatusOK, resp)
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
