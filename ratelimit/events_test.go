package ratelimit

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
)

func init() {
	caddy.RegisterModule(eventRecorder{})
}

// recorded are the events eventRecorder saw, by the recorder's name.
var recorded sync.Map // name -> *eventLog

type eventLog struct {
	mu     sync.Mutex
	events []caddy.Event
}

func eventsOf(name string) []caddy.Event {
	v, _ := recorded.LoadOrStore(name, &eventLog{})
	l := v.(*eventLog)
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]caddy.Event(nil), l.events...)
}

// eventRecorder is an events handler module that records every event it
// gets under its name: `on <event> edgekit_test_record <name>`.
type eventRecorder struct {
	Name string `json:"name"`
}

func (eventRecorder) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "events.handlers.edgekit_test_record", New: func() caddy.Module { return new(eventRecorder) }}
}

func (r *eventRecorder) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next()
	if !d.NextArg() {
		return d.ArgErr()
	}
	r.Name = d.Val()
	return nil
}

func (r *eventRecorder) Handle(_ context.Context, e caddy.Event) error {
	v, _ := recorded.LoadOrStore(r.Name, &eventLog{})
	l := v.(*eventLog)
	l.mu.Lock()
	l.events = append(l.events, e)
	l.mu.Unlock()
	return nil
}

// TestEventsOncePerKeyAndWindow: 10,000 requests of 4 keys in two zones
// (one with a ban), sent by 64 clients to three handler instances (three
// sites, one Redis), nearly all refused, raise exactly one
// ratelimit_exceeded per zone and key and one ratelimit_ban_set per key of
// the zone with a ban, with the zone and the store key, and no expanded key
// without log_keys.
func TestEventsOncePerKeyAndWindow(t *testing.T) {
	_, prefix := testenv.Redis(t)
	name := "once-" + prefix
	tester, ports := startSites(t, 3, fmt.Sprintf("\tevents {\n\t\ton ratelimit_exceeded edgekit_test_record %[1]s\n\t\ton ratelimit_ban_set edgekit_test_record %[1]s\n\t}\n", name), func(addr string) string {
		return fmt.Sprintf(`%[1]s {
	ratelimit /a {
		zone api {
			key {http.request.header.X-Key}
			events 5
			window 1h
		}
		redis {
			url %[2]s
			key_prefix %[3]s
		}
		timeout 5s
	}
	ratelimit /b {
		zone banned {
			key {http.request.header.X-Key}
			events 3
			window 1h
			algorithm fixed_window
			ban 1h after 3
		}
		redis {
			url %[2]s
			key_prefix %[3]s
		}
		timeout 5s
	}
	respond "ok"
}
`, addr, testenv.RedisURL(t), prefix)
	})

	keys := []string{"k0", "k1", "k2", "k3"}
	var next, refused atomic.Int64
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for {
				n := next.Add(1)
				if n > 10000 {
					return
				}
				path := [2]string{"/a", "/b"}[n/4%2]
				req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://localhost:%d%s", ports[n%3], path), nil)
				req.Header.Set("X-Key", keys[n%4])
				res, err := tester.Client.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				res.Body.Close()
				if res.StatusCode == http.StatusTooManyRequests {
					refused.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if want := int64(10000 - 4*5 - 4*3); refused.Load() != want {
		t.Fatalf("%d refused, want %d", refused.Load(), want)
	}
	counts := map[string]map[string]int{} // event -> store key -> count
	for _, e := range eventsOf(name) {
		data := e.Data
		if _, ok := data["key"]; ok {
			t.Errorf("event %s carries the key without log_keys: %v", e.Name(), data)
		}
		zone, _ := data["zone"].(string)
		sk, _ := data["store_key"].(string)
		if !strings.HasPrefix(sk, prefix+":"+zone+":") {
			t.Errorf("event %s: store key %q not of zone %q", e.Name(), sk, zone)
		}
		if counts[e.Name()] == nil {
			counts[e.Name()] = map[string]int{}
		}
		counts[e.Name()][zone+" "+sk]++
	}
	for ev, want := range map[string]int{EventExceeded: 8, EventBanSet: 4} {
		if len(counts[ev]) != want {
			t.Errorf("%s for %d zone keys, want %d: %v", ev, len(counts[ev]), want, counts[ev])
		}
		for k, n := range counts[ev] {
			if n != 1 {
				t.Errorf("%s %s: %d events, want 1", ev, k, n)
			}
		}
	}
}
