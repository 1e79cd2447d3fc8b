package ratelimit

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

// adminCall serves one admin API request in process.
func adminCall(t *testing.T, method, path string) (int, []byte) {
	t.Helper()
	rec := httptest.NewRecorder()
	err := AdminAPI{}.serve(rec, httptest.NewRequest(method, path, nil))
	if err != nil {
		var ae caddy.APIError
		if errors.As(err, &ae) {
			return ae.HTTPStatus, []byte(ae.Err.Error())
		}
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return rec.Code, rec.Body.Bytes()
}

// TestAdminBansListAndLift: two handler instances on one Redis. A key
// banned through one is listed (its key shown, log_keys on), both refuse
// it; the ban lifted in the store by another process (no call to these
// handlers' deny caches) reaches both within 1s; the admin API's DELETE
// lifts a ban at once; bans_set_total counts the ban once.
func TestAdminBansListAndLift(t *testing.T) {
	zoneName := "bans" + testenv.RandomID(4)
	hs := banHandlers(t, 2, func(z *Zone) {
		z.Name, z.Algorithm, z.Events, z.Window = zoneName, limiter.TokenBucket, 1, caddy.Duration(200*time.Millisecond)
		z.Ban, z.BanAfter, z.BanMax = caddy.Duration(time.Hour), 1, 0
	})
	for _, h := range hs {
		h.LogKeys = true
	}
	next := new(statusHandler)
	key := "k-" + testenv.RandomID(6)
	send := func(h *Handler) response { return do(h, next, get("/", "X-API-Key", key)) }
	setBefore := bansSetTotal(zoneName)
	send(hs[0])
	if r := send(hs[0]); r.header.Get("Retry-After") != "3600" {
		t.Fatalf("second request: Retry-After %q, want the 1h ban", r.header.Get("Retry-After"))
	}
	if got := bansSetTotal(zoneName) - setBefore; got != 1 {
		t.Errorf("bans_set_total grew by %v, want 1", got)
	}
	if got := bansInForceNow(t, zoneName); got != 1 {
		t.Errorf("bans_in_force %v, want 1", got)
	}
	time.Sleep(250 * time.Millisecond) // the quota is back; the ban is not
	for i, h := range hs {
		if r := send(h); r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") == "1" {
			t.Fatalf("instance %d during the ban: status %d, Retry-After %q", i, r.status, r.header.Get("Retry-After"))
		}
	}

	status, body := adminCall(t, http.MethodGet, "/ratelimit/zones/"+zoneName+"/bans")
	var list []banEntry
	if status != http.StatusOK || json.Unmarshal(body, &list) != nil || len(list) != 2 {
		t.Fatalf("list: %d %s; want the ban once per handler", status, body)
	}
	t.Logf("GET /ratelimit/zones/%s/bans: %s", zoneName, body)
	storeKey := limiter.StoreKey(hs[0].prefix, zoneName, "", key)
	for _, e := range list {
		if e.Key != key || hs[0].prefix+":"+zoneName+":"+e.ID != storeKey || e.RetryAfter != 3600 || e.Level != 1 {
			t.Errorf("listed %+v, want key %s, id of %s, 3600s left, level 1", e, key, storeKey)
		}
	}

	// Lifted by another process: both instances let the key pass within 1s.
	c := redis.NewClient(&redis.Options{Addr: testenv.RedisAddr(t)})
	defer c.Close()
	if err := limiter.NewRedisStore(c).LiftBan(t.Context(), storeKey); err != nil {
		t.Fatal(err)
	}
	lifted := time.Now()
	for i, h := range hs {
		for send(h).status != http.StatusOK {
			if time.Since(lifted) > 1100*time.Millisecond {
				t.Fatalf("instance %d still refuses %s after the lift", i, time.Since(lifted))
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Logf("instance %d: the lift reached it after %s", i, time.Since(lifted).Round(time.Millisecond))
	}

	if got := bansInForceNow(t, zoneName); got != 0 {
		t.Errorf("bans_in_force %v after the lift, want 0 (the instance that set it saw the key pass)", got)
	}

	// Banned again, lifted through the admin API: passes at once.
	send(hs[1])
	if r := send(hs[1]); r.header.Get("Retry-After") != "3600" {
		t.Fatalf("banned again: Retry-After %q, want 3600 (a lift forgets the level)", r.header.Get("Retry-After"))
	}
	time.Sleep(250 * time.Millisecond)
	status, body = adminCall(t, http.MethodDelete, "/ratelimit/zones/"+zoneName+"/bans/"+url.PathEscape(list[0].ID))
	if status != http.StatusOK {
		t.Fatalf("lift: %d %s", status, body)
	}
	t.Logf("DELETE: %s", body)
	for i, h := range hs {
		if r := send(h); r.status != http.StatusOK {
			t.Errorf("instance %d right after the admin lift: status %d", i, r.status)
		}
		time.Sleep(250 * time.Millisecond)
	}
	if status, body := adminCall(t, http.MethodGet, "/ratelimit/zones/"+zoneName+"/bans"); status != http.StatusOK || string(body) != "[]\n" {
		t.Errorf("list after the lift: %d %s, want []", status, body)
	}
	if status, _ := adminCall(t, http.MethodPut, "/ratelimit/zones/"+zoneName+"/bans"); status != http.StatusMethodNotAllowed {
		t.Errorf("PUT bans: %d, want 405", status)
	}
}

// bansSetTotal reads caddy_ratelimit_bans_set_total for zone.
func bansSetTotal(zone string) float64 {
	var m dto.Metric
	if err := metrics.bansSet.WithLabelValues(zone).Write(&m); err != nil {
		panic(err)
	}
	return m.GetCounter().GetValue()
}

// bansInForceNow collects caddy_ratelimit_bans_in_force for zone.
func bansInForceNow(t *testing.T, zone string) float64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 100)
	bansInForceCollector.Collect(ch)
	close(ch)
	n := 0.0
	for m := range ch {
		var d dto.Metric
		if err := m.Write(&d); err != nil {
			t.Fatal(err)
		}
		if d.GetLabel()[0].GetValue() == zone {
			n += d.GetGauge().GetValue()
		}
	}
	return n
}
