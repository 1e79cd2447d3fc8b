package ratelimit

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

func TestCaddyfileUsage(t *testing.T) {
	for cfg, want := range map[string]string{
		"usage on":        "&{0}",
		"usage on keep 3": "&{3}",
		"usage off":       "<nil>",
	} {
		h, err := parse(t, "ratelimit {\n zone q {\n key k\n events 10\n algorithm fixed_window\n window 1mo calendar\n "+strings.ReplaceAll(cfg, "; ", "\n ")+"\n }\n}")
		if err != nil {
			t.Fatalf("%s: %v", cfg, err)
		}
		if got := fmt.Sprint(h.Zones[0].Usage); got != want {
			t.Errorf("%s: %s, want %s", cfg, got, want)
		}
	}
	checkZoneErrors(t, []zoneError{
		{"key k; events 10; window 1h; usage on", "usage needs algorithm fixed_window"},
		{"key k; events 10; window 1h; algorithm fixed_window; usage", "wrong argument count"},
		{"key k; events 10; window 1h; algorithm fixed_window; usage yes", "must be on or off"},
		{"key k; events 10; window 1h; algorithm fixed_window; usage on keep x", "invalid usage keep"},
		{"key k; events 10; window 1h; algorithm fixed_window; usage on keep 1001", "from 1 to 1000"},
		{"key k; events 10; window 1h; algorithm fixed_window; usage on forever", "only keep"},
		{"key k; events 10; window 1h; algorithm fixed_window; approximate 10ms; usage on", "approximate"},
		{"key k; events 10; algorithm fixed_window; window 1mo calendar; usage on keep 200", "at most"},
	})
}

// TestUsageAcceptance: 10,000 requests of costs 1-3 over 50 keys, sent by
// 100 goroutines to two instances sharing Redis: each key's usage in the
// admin API is exactly the units its allowed requests took; the CSV and
// the NDJSON export say the same.
func TestUsageAcceptance(t *testing.T) {
	cfg := sharedRedis(t)
	var hs []*Handler
	for range 2 {
		c := *cfg
		h := &Handler{Zones: []*Zone{{Name: "billing", Key: "{http.request.header.X-API-Key}", Events: 300,
			Cost: "{http.request.header.X-Cost}", Algorithm: limiter.FixedWindow, Calendar: "month", TZ: "Europe/Berlin",
			Usage: &ZoneUsage{}}}, Redis: &c, Timeout: caddy.Duration(10 * time.Second)}
		provision(t, h)
		hs = append(hs, h)
	}
	var mu sync.Mutex
	units, refused := map[string]int64{}, map[string]int64{}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 100 {
		wg.Go(func() {
			for i := int(next.Add(1)); i <= 10000; i = int(next.Add(1)) {
				key, cost := fmt.Sprintf("customer-%02d", i%50), i%3+1
				res := do(hs[i%2], new(statusHandler), get("/", "X-API-Key", key, "X-Cost", strconv.Itoa(cost)))
				mu.Lock()
				switch res.status {
				case http.StatusOK:
					units[key] += int64(cost)
				case http.StatusTooManyRequests:
					refused[key]++
				default:
					t.Errorf("status %d: %v", res.status, res.err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	var page struct {
		Keys []usageRow
		Next string
	}
	if status, body := adminCall(t, "GET", "/ratelimit/zones/billing/usage?limit=20"); status != 200 || json.Unmarshal(body, &page) != nil {
		t.Fatalf("usage: %d %s", status, body)
	}
	var rows []usageRow
	for {
		rows = append(rows, page.Keys...)
		if page.Next == "" {
			break
		}
		_, body := adminCall(t, "GET", "/ratelimit/zones/billing/usage?limit=20&after="+page.Next)
		page.Keys, page.Next = nil, ""
		if err := json.Unmarshal(body, &page); err != nil {
			t.Fatal(err)
		}
	}
	if len(rows) != 50 {
		t.Fatalf("%d keys in the pages, want 50", len(rows))
	}
	// Refusals the deny cache answers never reach the store: refused
	// counts those the store decided, at least one when there were any.
	for _, row := range rows {
		if row.Units != units[row.Key] || (row.Refused == 0) != (refused[row.Key] == 0) || row.Refused > refused[row.Key] {
			t.Errorf("%s: units %d refused %d, want %d and 1 to %d", row.Key, row.Units, row.Refused, units[row.Key], refused[row.Key])
		}
	}
	checkUsageExports(t, rows)
}

// checkUsageExports checks that the CSV and the NDJSON export hold rows.
func checkUsageExports(t *testing.T, rows []usageRow) {
	t.Helper()
	_, body := adminCall(t, "GET", "/ratelimit/zones/billing/usage?format=csv&limit=10000")
	records, err := csv.NewReader(bytes.NewReader(body)).ReadAll()
	if err != nil || len(records) != len(rows)+1 || strings.Join(records[0], ",") != "key,period_start,units,refused" {
		t.Fatalf("CSV %q: %v", body, err)
	}
	_, body = adminCall(t, "GET", "/ratelimit/zones/billing/usage?format=ndjson")
	sc := bufio.NewScanner(bytes.NewReader(body))
	for i := 0; sc.Scan(); i++ {
		var n usageRow
		if err := json.Unmarshal(sc.Bytes(), &n); err != nil || i >= len(rows) {
			t.Fatalf("NDJSON line %d %s: %v", i, sc.Bytes(), err)
		}
		want := rows[i]
		c := records[i+1]
		if n.Key != want.Key || n.Units != want.Units || n.Refused != want.Refused || n.PeriodStart != want.PeriodStart ||
			n.Zone != "billing" || n.PeriodEnd == "" ||
			c[0] != want.Key || c[1] != want.PeriodStart || c[2] != strconv.FormatInt(want.Units, 10) || c[3] != strconv.FormatInt(want.Refused, 10) {
			t.Errorf("row %d: NDJSON %+v, CSV %v, want %+v", i, n, c, want)
		}
	}
}
