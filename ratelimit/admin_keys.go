package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

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
