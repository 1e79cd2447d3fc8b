package ratelimit

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/edgekit/caddy-edgekit/internal/redispool"
	"github.com/edgekit/caddy-edgekit/internal/testenv"
	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

// hostileKeys are key values an attacker controls (an API key header, a
// path): Redis key syntax, hash tags, line breaks, NUL and 1 MB.
func hostileKeys() []string {
	return []string{
		"", "a", "a:b", "a:b:c", ":", "::", "{", "}", "{}", "{a}", "a{b}c", "}{", "{{a}}",
		"a\r\nb", "a\nb", "a\rb", "\r\n", "a\x00b", "\x00", "*", "a*", "?", "[a-z]",
		"ratelimit:z:0123456789abcdef0123456789abcdef", // looks like a store key
		"\xff\xfe invalid utf-8", "ünïcode", "a b", " a", "a ",
		strings.Repeat("x", 1<<20), strings.Repeat("x", 1<<20) + "y", strings.Repeat("{:}\n", 1<<18),
	}
}

// Distinct values give distinct keys of bounded length, made only of the
// prefix, the zone and hex: nothing a client sends reaches Redis' key space.
func TestAttackKeysNoCollision(t *testing.T) {
	for _, tag := range []string{"", "tenant", "{evil}:tag\r\n"} {
		seen := map[string]string{}
		for _, v := range hostileKeys() {
			k := limiter.StoreKey("ratelimit", "api", tag, v)
			if prev, ok := seen[k]; ok {
				t.Errorf("hash tag %q: values %.20q and %.20q share the key %q", tag, prev, v, k)
			}
			seen[k] = v
			wantLen := len("ratelimit:api:") + limiter.DigestLen
			if tag != "" {
				wantLen += limiter.DigestLen + 2
			}
			if len(k) != wantLen {
				t.Errorf("StoreKey(%.20q) has length %d, want %d", v, len(k), wantLen)
			}
			rest := strings.TrimPrefix(k, "ratelimit:api:")
			rest = strings.NewReplacer("{", "", "}", "").Replace(rest)
			if strings.Trim(rest, "0123456789abcdef") != "" || strings.Count(k, "{") > 1 {
				t.Errorf("StoreKey(%.20q) = %q, want only hex after the zone", v, k)
			}
		}
	}
}

// attackRequests sends every hostile value twice through h (one zone of 1
// per minute keyed by X-API-Key and one keyed by the path): each value has
// its own quota, so the first is allowed and the second refused, and no
// decision fails (on_error closed would answer 503).
func attackRequests(t *testing.T, h *Handler) {
	t.Helper()
	next := new(statusHandler)
	for i, v := range hostileKeys() {
		for n, want := range []int{http.StatusOK, http.StatusTooManyRequests} {
			req := get(fmt.Sprintf("/item/%d", i))
			req.Header["X-Api-Key"] = []string{v} // raw: net/http on a real server would refuse CR/LF
			res := do(h, next, req)
			if res.status != want {
				t.Errorf("value #%d %.30q, request %d: status %d (%v), want %d", i, v, n+1, res.status, res.err, want)
			}
			for name, vals := range res.header {
				for _, hv := range vals {
					if strings.ContainsAny(hv, "\r\n") || strings.Contains(hv, "xxxx") {
						t.Errorf("value #%d: response header %s: %.40q echoes the key", i, name, hv)
					}
				}
			}
		}
	}
}

func attackHandler(cfg *redispool.Config) *Handler {
	return &Handler{
		Zones: []*Zone{
			{Name: "by_key", Key: "{http.request.header.X-API-Key}", Events: 1, Window: caddy.Duration(time.Minute)},
		},
		Redis:   cfg,
		Timeout: caddy.Duration(2 * time.Second),
		OnError: "closed",
	}
}

func TestAttackKeysRedis(t *testing.T) {
	h := attackHandler(sharedRedis(t))
	logs := provision(t, h)
	attackRequests(t, h)
	// Keys are not logged without log_keys.
	for _, e := range logs.All() {
		for k, v := range e.ContextMap() {
			if s, ok := v.(string); ok && (strings.Contains(s, "xxxxxxxx") || strings.Contains(s, "\r\n")) {
				t.Errorf("log %q field %s carries a key value", e.Message, k)
			}
		}
	}
}

// On Redis Cluster: no CROSSSLOT error, whatever the values, with and
// without a hash tag taken from a hostile header.
func TestAttackKeysCluster(t *testing.T) {
	_, prefix := testenv.RedisCluster(t)
	cfg := &redispool.Config{Addresses: testenv.RedisClusterAddrs(t), Cluster: true, KeyPrefix: prefix}
	t.Run("no hash tag", func(t *testing.T) {
		h := attackHandler(cfg)
		h.Zones = append(h.Zones, &Zone{Name: "by_path", Key: "{http.request.uri.path}{http.request.header.X-API-Key}",
			Events: 100, Window: caddy.Duration(time.Minute)})
		provision(t, h)
		attackRequests(t, h)
	})
	t.Run("hostile hash tag", func(t *testing.T) {
		c := *cfg
		c.KeyPrefix = prefix + "-tag"
		h := attackHandler(&c)
		h.HashTag = "{http.request.header.X-API-Key}"
		h.Zones = append(h.Zones, &Zone{Name: "by_path", Key: "{http.request.uri.path}{http.request.header.X-API-Key}",
			Events: 100, Window: caddy.Duration(time.Minute)})
		provision(t, h)
		attackRequests(t, h)
	})
}

// A flood of distinct keys cannot grow the memory store past its bound:
// the least recently used keys go, and a recent key keeps its state. The
// handler's in-process store (no redis) has the default bound.
func TestAttackMemoryStoreBounded(t *testing.T) {
	h := &Handler{Zones: []*Zone{zone("bounded", 1, time.Minute)}}
	provision(t, h)
	inProcess, ok := h.store.(*limiter.ZoneMemory)
	if !ok {
		t.Fatalf("handler without redis: store %T, want *limiter.ZoneMemory", h.store)
	}
	c := newClock()
	for _, tt := range []struct {
		name string
		s    interface {
			limiter.Store
			Len() int
		}
		prefix string
		zone   string
		bound  int
	}{
		{"max_keys 100", limiter.NewMemoryStore(c.Now, 100), "rl", "flood", 100},
		{"handler default", inProcess, h.prefix, "bounded", limiter.DefaultMaxKeys},
	} {
		limit := limiter.Limit{Algorithm: limiter.SlidingLog, Events: 1, Window: time.Hour}
		ctx := context.Background()
		flood := tt.bound + tt.bound/2
		for i := range flood {
			key := limiter.StoreKey(tt.prefix, tt.zone, "", fmt.Sprint(i))
			if _, err := tt.s.Decide(ctx, []limiter.Ask{{Key: key, Limit: limit, Cost: 1}}); err != nil {
				t.Fatal(err)
			}
		}
		if n := tt.s.Len(); n != tt.bound {
			t.Errorf("%s: the store holds %d keys after %d distinct ones, want %d", tt.name, n, flood, tt.bound)
		}
		last := limiter.StoreKey(tt.prefix, tt.zone, "", fmt.Sprint(flood-1))
		res, err := tt.s.Decide(ctx, []limiter.Ask{{Key: last, Limit: limit, Cost: 1}})
		if err != nil || res[0].Allowed {
			t.Errorf("%s: the most recent key after the flood: %+v (%v), want refused", tt.name, res, err)
		}
	}
}

// A client that is not a trusted proxy cannot choose its {client_ip} with
// X-Forwarded-For: the quota stays on the peer address.
func TestAttackSpoofedForwardedFor(t *testing.T) {
	tester, port := startCaddy(t, "", `
http://localhost:$PORT {
	ratelimit {
		zone per_ip {
			key {client_ip}
			events 2
			window 1m
		}
	}
	respond "{client_ip}"
}
`)
	var statuses []int
	for i, spoof := range []string{"203.0.113.1", "203.0.113.2", "198.51.100.7, 203.0.113.3", "::1"} {
		req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://localhost:%d/", port), nil)
		req.Header.Set("X-Forwarded-For", spoof)
		req.Header.Set("X-Real-IP", spoof)
		req.Header.Set("Forwarded", "for="+spoof)
		res, err := tester.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		statuses = append(statuses, res.StatusCode)
		if res.StatusCode == http.StatusOK && strings.Contains(string(body), "203.0.113") {
			t.Errorf("request %d: {client_ip} = %q, taken from a spoofed header", i+1, body)
		}
	}
	want := []int{200, 200, 429, 429}
	for i := range want {
		if statuses[i] != want[i] {
			t.Fatalf("statuses with a new X-Forwarded-For each time: %v, want %v (one quota for the peer)", statuses, want)
		}
	}
}
