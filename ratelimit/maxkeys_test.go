package ratelimit

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

func TestMaxKeysCaddyfile(t *testing.T) {
	d := caddyfile.NewTestDispenser(`ratelimit {
		zone ip {
			key {client_ip}
			events 1
			window 1m
		}
		max_keys 5000
	}`)
	var h Handler
	if err := h.UnmarshalCaddyfile(d); err != nil {
		t.Fatal(err)
	}
	if h.MaxKeys != 5000 {
		t.Errorf("MaxKeys = %d, want 5000", h.MaxKeys)
	}
}

// A flood of distinct keys through the handler keeps at most max_keys in the
// in-process store; the newest keys keep their state.
func TestMaxKeysBoundsTheInProcessStore(t *testing.T) {
	h := &Handler{
		Zones: []*Zone{{
			Name: "user", Key: "{http.request.header.X-User}",
			Events: 1, Window: caddy.Duration(time.Hour),
		}},
		MaxKeys: 50,
	}
	provision(t, h)
	next := &statusHandler{}
	for i := range 1000 {
		if got := do(h, next, get("/", "X-User", fmt.Sprint(i))).status; got != http.StatusOK {
			t.Fatalf("first request of user %d: status %d, want 200", i, got)
		}
	}
	if n := h.store.(*limiter.ZoneMemory).Len(); n != 50 {
		t.Errorf("store holds %d keys, want max_keys = 50 (one zone)", n)
	}
	if got := do(h, next, get("/", "X-User", "999")).status; got != http.StatusTooManyRequests {
		t.Errorf("second request of the newest user: status %d, want 429", got)
	}
}
