package ratelimit

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

// adminBansMax bounds the bans one list answers per handler.
const adminBansMax = 1000

// banEntry is one ban in force, as the admin API lists it.
type banEntry struct {
	Handler uint64 `json:"handler"`
	Zone    string `json:"zone"`
	// ID names the ban in DELETE /ratelimit/zones/<zone>/bans/<id>: the
	// store key after "<key_prefix>:<zone>:", the key's digest (after the
	// hash tag's, with hash_tag).
	ID string `json:"id"`
	// Key: the expanded key, when this instance saw the ban and the handler
	// has log_keys.
	Key          string `json:"key,omitempty"`
	RetryAfter   int64  `json:"retry_after"`    // whole seconds, as Retry-After
	RetryAfterMs int64  `json:"retry_after_ms"` // the ban's remainder
	Level        int64  `json:"level"`          // bans set on the key so far
}

// isBansPath reports whether path ("zones/...") is
// zones/<zone>/bans[/<id>], the zone a name without '/'.
func isBansPath(path string) bool {
	zone, rest, ok := strings.Cut(strings.TrimPrefix(path, "zones/"), "/bans")
	return ok && zone != "" && !strings.Contains(zone, "/") && (rest == "" || strings.HasPrefix(rest, "/"))
}

// serveBans answers /ratelimit/zones/<zone>/bans[/<id>].
func serveBans(w http.ResponseWriter, r *http.Request, zone, rest string) error {
	if rest == "" || rest == "/" {
		if err := allowMethods(w, r, http.MethodGet); err != nil {
			return err
		}
		return listBans(w, r, zone)
	}
	id, err := url.PathUnescape(strings.TrimPrefix(rest, "/"))
	if err != nil || id == "" || strings.Contains(id, "/") {
		return apiError(http.StatusBadRequest, "invalid ban id %q", rest)
	}
	if err := allowMethods(w, r, http.MethodDelete); err != nil {
		return err
	}
	return liftBan(w, r, zone, id)
}

// banner is the target's store as a limiter.Banner.
func (t zoneTarget) banner() (limiter.Banner, error) {
	b, ok := t.e.h.store.(limiter.Banner)
	if !ok {
		return nil, apiError(http.StatusNotImplemented, "zone %q: the store of handler %d has no bans", t.z.Name, t.e.id)
	}
	return b, nil
}

func listBans(w http.ResponseWriter, r *http.Request, zone string) error {
	targets, err := findZone(zone)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), adminTimeout)
	defer cancel()
	out := []banEntry{}
	for _, t := range targets {
		b, err := t.banner()
		if err != nil {
			return err
		}
		bans, err := b.Bans(ctx, t.e.h.prefix, zone, adminBansMax)
		if err != nil {
			return apiError(http.StatusServiceUnavailable, "zone %q: listing bans: %v", zone, err)
		}
		head := t.e.h.prefix + ":" + zone + ":"
		for _, ban := range bans {
			e := banEntry{
				Handler:      t.e.id,
				Zone:         zone,
				ID:           strings.TrimPrefix(ban.Key, head),
				RetryAfter:   retryAfterSeconds(ban.Left),
				RetryAfterMs: (ban.Left + time.Millisecond - 1).Milliseconds(),
				Level:        ban.Level,
			}
			if t.e.h.LogKeys && t.z.seen != nil {
				e.Key, _ = t.z.seen.keys.GetIfPresent(ban.Key)
			}
			out = append(out, e)
		}
	}
	return writeJSON(w, http.StatusOK, out)
}

// liftBan lifts the ban id in every loaded handler with the zone: the
// store forgets it, and this instance's deny cache too (other instances
// ask the store again within banDenyFor).
func liftBan(w http.ResponseWriter, r *http.Request, zone, id string) error {
	targets, err := findZone(zone)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), adminTimeout)
	defer cancel()
	handlers := []uint64{}
	for _, t := range targets {
		b, err := t.banner()
		if err != nil {
			return err
		}
		key := t.e.h.prefix + ":" + zone + ":" + id
		if err := b.LiftBan(ctx, key); err != nil {
			return apiError(http.StatusServiceUnavailable, "zone %q: lifting the ban: %v", zone, err)
		}
		if t.e.h.local != nil {
			_ = t.e.h.local.LiftBan(ctx, key) // in process: does not fail
		}
		t.e.h.forgetDenied(key)
		if t.z.setHere != nil {
			t.z.setHere.lifted(key)
		}
		handlers = append(handlers, t.e.id)
	}
	return writeJSON(w, http.StatusOK, map[string]any{"zone": zone, "id": id, "lifted": true, "handlers": handlers})
}
