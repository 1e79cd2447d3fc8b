package ratelimit

import (
	"context"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/edgekit/caddy-edgekit/internal/strictjson"
)

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
