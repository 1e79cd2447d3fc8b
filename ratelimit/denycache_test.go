package ratelimit

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/edgekit/caddy-edgekit/internal/redispool"
	"github.com/edgekit/caddy-edgekit/internal/testenv"
	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

// The rules of the deny cache, on synthetic store answers.
func TestDenyCacheRules(t *testing.T) {
	z := &Zone{Name: "api"}
	dry := &Zone{Name: "dry", DryRun: true}
	other := &Zone{Name: "ip"}
	limit := limiter.Limit{Algorithm: limiter.TokenBucket, Events: 10, Window: time.Minute}
	t0 := time.Unix(1_800_000_000, 0)
	sent, got := t0, t0.Add(2*time.Millisecond)
	refusal := limiter.Result{Remaining: 0, RetryAfter: 6 * time.Second, Reset: time.Minute, Now: t0.Add(time.Millisecond)}
	refused := func(zn *Zone, key string, cost int64, state decisionState) zoneDecision {
		return zoneDecision{zone: zn, ask: limiter.Ask{Key: key, Limit: limit, Cost: cost}, res: refusal, state: state}
	}
	ask := func(zn *Zone, key string, l limiter.Limit, cost int64) zoneDecision {
		return zoneDecision{zone: zn, ask: limiter.Ask{Key: key, Limit: l, Cost: cost}}
	}
	smaller := limit
	smaller.Events = 5

	tests := []struct {
		name     string
		learn    []zoneDecision
		ask      []zoneDecision
		at       time.Time
		answered bool
	}{
		{"same ask, before the retry time", []zoneDecision{refused(z, "k", 1, stateStore)},
			[]zoneDecision{ask(z, "k", limit, 1)}, sent.Add(5 * time.Second), true},
		{"a larger cost", []zoneDecision{refused(z, "k", 1, stateStore)},
			[]zoneDecision{ask(z, "k", limit, 3)}, sent.Add(time.Second), true},
		{"a check (cost 0) learned, a check asked", []zoneDecision{refused(z, "k", 0, stateStore)},
			[]zoneDecision{ask(z, "k", limit, 0)}, sent.Add(time.Second), true},
		{"at sent + RetryAfter: the store may allow", []zoneDecision{refused(z, "k", 1, stateStore)},
			[]zoneDecision{ask(z, "k", limit, 1)}, sent.Add(6 * time.Second), false},
		{"a smaller cost", []zoneDecision{refused(z, "k", 2, stateStore)},
			[]zoneDecision{ask(z, "k", limit, 1)}, sent.Add(time.Second), false},
		{"another limit (plan, brake)", []zoneDecision{refused(z, "k", 1, stateStore)},
			[]zoneDecision{ask(z, "k", smaller, 1)}, sent.Add(time.Second), false},
		{"another key", []zoneDecision{refused(z, "k", 1, stateStore)},
			[]zoneDecision{ask(z, "k2", limit, 1)}, sent.Add(time.Second), false},
		{"the local fallback's refusal", []zoneDecision{refused(z, "k", 1, stateLocal)},
			[]zoneDecision{ask(z, "k", limit, 1)}, sent.Add(time.Second), false},
		{"a dry_run zone's refusal", []zoneDecision{refused(dry, "k", 1, stateStore)},
			[]zoneDecision{ask(dry, "k", limit, 1)}, sent.Add(time.Second), false},
		{"two zones, one known", []zoneDecision{refused(z, "k", 1, stateStore)},
			[]zoneDecision{ask(z, "k", limit, 1), ask(other, "ip", limit, 1)}, sent.Add(time.Second), false},
		{"two zones, both known", []zoneDecision{refused(z, "k", 1, stateStore), refused(other, "ip", 1, stateStore)},
			[]zoneDecision{ask(z, "k", limit, 1), ask(other, "ip", limit, 1)}, sent.Add(time.Second), true},
		{"a known zone and a dry_run zone", []zoneDecision{refused(z, "k", 1, stateStore), refused(dry, "d", 1, stateStore)},
			[]zoneDecision{ask(z, "k", limit, 1), ask(dry, "d", limit, 1)}, sent.Add(time.Second), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &denyCache{tables: map[*Zone]*denyTable{z: newDenyTable(), dry: newDenyTable(), other: newDenyTable()}}
			c.remember(tt.learn, sent, got)
			ds := append([]zoneDecision(nil), tt.ask...)
			if answered := (&Handler{deny: c}).decideDenied(ds, tt.at); answered != tt.answered {
				t.Fatalf("answer = %v, want %v", answered, tt.answered)
			}
			for i := range ds {
				d := &ds[i]
				if !tt.answered {
					if d.res != (limiter.Result{}) {
						t.Errorf("zone %d: res = %+v after no answer, want zero", i, d.res)
					}
					continue
				}
				if !d.decided() || d.res.Allowed {
					t.Errorf("zone %d: state %d, allowed %v; want a refusal from the store", i, d.state, d.res.Allowed)
				}
				// The wait counts from when the answer came back: never
				// earlier than the real retry time.
				age := tt.at.Sub(got)
				if want := refusal.RetryAfter - age; d.res.RetryAfter != want {
					t.Errorf("zone %d: RetryAfter = %v, want %v", i, d.res.RetryAfter, want)
				}
				if want := refusal.Now.Add(age); !d.res.Now.Equal(want) {
					t.Errorf("zone %d: Now = %v, want %v (the store's clock, aged)", i, d.res.Now, want)
				}
			}
		})
	}
}

// A refused key is answered without Redis until its retry time; an admin
// reset (forgetDenied) reaches the store's next answer at once.
func TestDenyCacheRedis(t *testing.T) {
	c, prefix := testenv.Redis(t)
	h := &Handler{
		Zones:   []*Zone{zone("api", 2, time.Hour)},
		Redis:   &redispool.Config{URL: testenv.RedisURL(t), KeyPrefix: prefix},
		Timeout: caddy.Duration(5 * time.Second),
		OnError: "closed",
	}
	provision(t, h)
	if h.deny == nil {
		t.Fatal("no deny cache on a single Redis")
	}
	next := new(statusHandler)
	send := func() response { return do(h, next, get("/", "X-API-Key", "k1")) }
	for i := range 2 {
		if res := send(); res.status != http.StatusOK {
			t.Fatalf("request %d: status %d, want 200", i+1, res.status)
		}
	}
	fromStore := send()
	if fromStore.status != http.StatusTooManyRequests {
		t.Fatalf("request 3: status %d, want 429", fromStore.status)
	}

	// The key's state disappears behind the cache's back: a request that
	// went to Redis would now pass. The cache answers: still 429, with
	// the store's headers.
	key := limiter.StoreKey(prefix, "api", "", "k1")
	if err := c.Del(context.Background(), key).Err(); err != nil {
		t.Fatal(err)
	}
	local := send()
	if local.status != http.StatusTooManyRequests {
		t.Fatalf("request 4 (deny cache): status %d, want 429", local.status)
	}
	for _, name := range []string{"Retry-After", "RateLimit", "RateLimit-Policy", "X-RateLimit-Limit", "X-RateLimit-Remaining"} {
		if g, w := local.header.Get(name), fromStore.header.Get(name); g != w {
			t.Errorf("%s = %q from the deny cache, %q from the store", name, g, w)
		}
	}
	retry, _ := strconv.Atoi(local.header.Get("Retry-After"))
	if retry < 1799 || retry > 1800 { // 2 per hour: a token every 30 minutes
		t.Errorf("Retry-After = %d, want about 1800", retry)
	}
	if z, _ := local.repl.Get("http.ratelimit.zone"); z != "api" {
		t.Errorf("{http.ratelimit.zone} = %v, want api", z)
	}
	if next.Calls() != 2 {
		t.Errorf("next saw %d requests, want 2", next.Calls())
	}
	if n, err := c.Exists(context.Background(), key).Result(); err != nil || n != 0 {
		t.Errorf("the deny cache's answer wrote to Redis (EXISTS = %d, %v)", n, err)
	}

	h.forgetDenied(key)
	if res := send(); res.status != http.StatusOK {
		t.Errorf("after forgetDenied: status %d, want 200 (the store has no state)", res.status)
	}
}

// The cache never holds a key past the time the store would allow it: on
// a bucket refilling one token every 300ms, hammering after a refusal
// gets the next token as soon as the store gives it, and only that one.
func TestDenyCacheReleasesAtRetryTime(t *testing.T) {
	_, prefix := testenv.Redis(t)
	h := &Handler{
		Zones:   []*Zone{zone("tick", 1, 300*time.Millisecond)},
		Redis:   &redispool.Config{URL: testenv.RedisURL(t), KeyPrefix: prefix},
		Timeout: caddy.Duration(5 * time.Second),
		OnError: "closed",
	}
	provision(t, h)
	next := new(statusHandler)
	send := func() int { return do(h, next, get("/", "X-API-Key", "k")).status }
	if s := send(); s != http.StatusOK {
		t.Fatalf("first request: status %d, want 200", s)
	}
	if s := send(); s != http.StatusTooManyRequests {
		t.Fatalf("second request: status %d, want 429", s)
	}
	e, ok := h.deny.tables[h.Zones[0]].entries.GetIfPresent(limiter.StoreKey(prefix, "tick", "", "k"))
	if !ok {
		t.Fatal("the refusal was not remembered")
	}
	if e.res.RetryAfter <= 0 || e.res.RetryAfter > 300*time.Millisecond {
		t.Fatalf("RetryAfter = %v, want (0, 300ms]", e.res.RetryAfter)
	}

	// 8 clients hammer until one passes.
	var (
		mu      sync.Mutex
		passed  int
		passAt  time.Time
		stop    = make(chan struct{})
		stopped sync.Once
		wg      sync.WaitGroup
	)
	deadline := e.until.Add(2 * time.Second)
	for range 8 {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				select {
				case <-stop:
					return
				default:
				}
				if send() == http.StatusOK {
					mu.Lock()
					passed++
					if passAt.IsZero() {
						passAt = time.Now()
					}
					mu.Unlock()
					stopped.Do(func() { close(stop) })
				}
			}
		})
	}
	wg.Wait()
	if passed != 1 {
		t.Fatalf("%d requests passed after the refusal, want exactly 1 (one token)", passed)
	}
	// The token is back at the latest when the answer came back plus
	// RetryAfter; generous slack for a loaded machine.
	if late := passAt.Sub(e.got.Add(e.res.RetryAfter)); late > 250*time.Millisecond {
		t.Errorf("the next token passed %v after the store's retry time", late)
	}
	if passAt.Before(e.until) {
		t.Errorf("a request passed %v before the cached retry time", e.until.Sub(passAt))
	}
}
