package ratelimit

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

func TestCaddyfileNotify(t *testing.T) {
	h, err := parse(t, "ratelimit { zone q { key k; events 1000; algorithm fixed_window; window 1mo calendar; notify 80% 100% } }")
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(h.Zones[0].Notify); got != "[80 100]" {
		t.Fatalf("notify %s, want [80 100]", got)
	}
	checkZoneErrors(t, []zoneError{
		{"key k; events 10; window 1h; notify 80%", "notify needs algorithm fixed_window"},
		{"key k; events 10; window 1h; algorithm fixed_window; notify", "wrong argument count"},
		{"key k; events 10; window 1h; algorithm fixed_window; notify eighty", "invalid notify threshold 'eighty'"},
		{"key k; events 10; window 1h; algorithm fixed_window; notify 100% 80%", "rising"},
		{"key k; events 10; window 1h; algorithm fixed_window; notify 0%", "from 1% to 100%"},
		{"key k; events 10; window 1h; algorithm fixed_window; notify 101%", "from 1% to 100%"},
		{"key k; events 10; window 1h; algorithm fixed_window; notify 1 2 3 4 5 6 7 8 9", "at most 8"},
		{"key k; events 10; window 1h; algorithm fixed_window; approximate 10ms; notify 50%", "approximate"},
	})
}

// zoneError is a zone's lines ("; " between them) and a part of the error
// they must fail to load with.
type zoneError struct{ zone, want string }

// checkZoneErrors checks that each zone fails to load with its error.
func checkZoneErrors(t *testing.T, cases []zoneError) {
	t.Helper()
	for _, c := range cases {
		_, err := parse(t, "ratelimit {\n zone q {\n"+strings.ReplaceAll(c.zone, "; ", "\n")+"\n }\n}")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("zone { %s }: %v, want an error with %q", c.zone, err, c.want)
		}
	}
}

func TestMarksFor(t *testing.T) {
	z := &Zone{Notify: []int{50, 80, 100}}
	for _, c := range []struct {
		events int64
		want   string
	}{
		{1000, "[500 800 1000]"},
		{3, "[2 3]"}, // 80% and 100% share 3
		{1, "[1]"},
		{limiter.MaxEvents, fmt.Sprint([]int64{limiter.MaxEvents / 2, (limiter.MaxEvents*80 + 99) / 100, limiter.MaxEvents})},
	} {
		if got := fmt.Sprint(z.marksFor(c.events)); got != c.want {
			t.Errorf("marks of %d: %s, want %s", c.events, got, c.want)
		}
	}
	if got := fmt.Sprint(z.percentsAt(3, 3)); got != "[80 100]" {
		t.Errorf("percentages at 3 of 3: %s, want [80 100]", got)
	}
}

// TestThresholdsLogged: without a subscriber, a crossing is an info log
// with the event's data, once.
func TestThresholdsLogged(t *testing.T) {
	h := &Handler{Zones: []*Zone{{Name: "monthly", Key: "{http.request.header.X-API-Key}", Events: 10,
		Algorithm: limiter.FixedWindow, Calendar: "month", TZ: "Europe/Berlin", Notify: []int{80}}}, Redis: sharedRedis(t)}
	logs := provision(t, h)
	for range 12 {
		do(h, new(statusHandler), get("/", "X-API-Key", "alice"))
	}
	got := logs.FilterMessage("rate limit threshold crossed").All()
	if len(got) != 1 {
		t.Fatalf("%d threshold logs, want 1", len(got))
	}
	m := got[0].ContextMap()
	start, end := limiter.Calendar{Unit: limiter.CalendarMonth, Loc: mustLoc(t, "Europe/Berlin")}.Period(time.Now())
	if m["threshold"] != int64(80) || m["used"] != int64(8) || m["quota"] != int64(10) ||
		m["period_start"] != start.UTC().Format(time.RFC3339) || m["period_end"] != end.UTC().Format(time.RFC3339) || m["key"] != nil {
		t.Errorf("threshold log %v", m)
	}
}

func mustLoc(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// TestThresholdEventsOnce: three instances (three sites, one Redis) racing
// 64 clients past 80% and 100% of a monthly calendar quota per key, on a
// zone charged at admission and on one charged after the response
// (cost_after), raise exactly one ratelimit_threshold per threshold, zone
// and key.
func TestThresholdEventsOnce(t *testing.T) {
	_, prefix := testenv.Redis(t)
	name := "thresholds-" + prefix
	tester, ports := startSites(t, 3, fmt.Sprintf("\tevents {\n\t\ton ratelimit_threshold edgekit_test_record %s\n\t}\n", name), func(addr string) string {
		return fmt.Sprintf(`%[1]s {
	header X-Tokens-Used 3
	ratelimit /calls {
		zone calls {
			key {http.request.header.X-Key}
			events 100
			algorithm fixed_window
			window 1mo calendar tz Europe/Berlin
			notify 80%% 100%%
		}
		redis {
			url %[2]s
			key_prefix %[3]s
		}
		timeout 5s
	}
	ratelimit /tokens {
		zone tokens {
			key {http.request.header.X-Key}
			events 100
			algorithm fixed_window
			window 1d calendar tz America/New_York
			cost_after {http.response.header.X-Tokens-Used}
			notify 50%% 100%%
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
	keys := []string{"k0", "k1", "k2", "k3", "k4"}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for n := next.Add(1); n <= 1500; n = next.Add(1) {
				path := [3]string{"/calls", "/calls", "/tokens"}[n%3]
				req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://localhost:%d%s", ports[n%3], path), nil)
				req.Header.Set("X-Key", keys[n/3%5])
				res, err := tester.Client.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				res.Body.Close()
			}
		})
	}
	wg.Wait()
	checkThresholdEvents(t, eventsOf(name), prefix)
}

// checkThresholdEvents checks one event per zone, key and threshold, with
// the zone's quota and a count at or past the threshold.
func checkThresholdEvents(t *testing.T, events []caddy.Event, prefix string) {
	t.Helper()
	counts := map[string]int{}
	for _, e := range events {
		d := e.Data
		zone, _ := d["zone"].(string)
		sk, _ := d["store_key"].(string)
		p, _ := d["threshold"].(int)
		used, _ := d["used"].(int64)
		if !strings.HasPrefix(sk, prefix+":"+zone+":") || d["quota"] != int64(100) || used < int64(p) || d["key"] != nil {
			t.Errorf("event %v", d)
		}
		start, _ := time.Parse(time.RFC3339, fmt.Sprint(d["period_start"]))
		end, _ := time.Parse(time.RFC3339, fmt.Sprint(d["period_end"]))
		if !start.Before(time.Now()) || !end.After(time.Now()) || end.Sub(start) < 23*time.Hour {
			t.Errorf("event %v: period %s to %s does not hold now", d, start, end)
		}
		counts[fmt.Sprintf("%s %s %d", zone, sk, p)]++
	}
	if len(counts) != 20 {
		t.Errorf("events for %d zone keys and thresholds, want 20 (2 zones × 5 keys × 2): %v", len(counts), counts)
	}
	for k, n := range counts {
		if n != 1 {
			t.Errorf("%s: %d events, want 1", k, n)
		}
	}
}
