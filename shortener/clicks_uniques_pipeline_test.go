package shortener

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/edgekit/caddy-edgekit/internal/redispool"
	"github.com/edgekit/caddy-edgekit/internal/testenv"
	"github.com/edgekit/caddy-edgekit/shortener/clicks"
)

// Unique visitors counted through the whole pipeline: redirects served by
// the handler, the recorder's writer hashing address and user agent under
// the day's salt, the Redis stream, the consumer and the sink (issue 17:
// 10,000 distinct visitors within 2%).

// visitFrom runs one redirect of code from addr with user agent ua and
// returns its status.
func visitFrom(h *Handler, code string, addr netip.Addr, ua string) int {
	r := httptest.NewRequest("GET", "http://sho.rt/"+code, nil)
	r.RemoteAddr = netip.AddrPortFrom(addr, 40000).String()
	r.Header.Set("User-Agent", ua)
	r = r.WithContext(context.WithValue(r.Context(), caddy.ReplacerCtxKey, caddy.NewReplacer()))
	w := httptest.NewRecorder()
	if err := h.ServeHTTP(w, r, nextHandler); err != nil {
		return -1
	}
	return w.Code
}

// testVisitor is visitor i of a deterministic crowd: a distinct address
// (IPv4 in 198.18.0.0/15, every eighth one IPv6 in 2001:db8::/32) and one
// of 1,000 browser user agents.
func testVisitor(i int) (netip.Addr, string) {
	addr := netip.AddrFrom4([4]byte{198, 18 + byte(i>>16), byte(i >> 8), byte(i)})
	if i%8 == 0 {
		addr = netip.MustParseAddr(fmt.Sprintf("2001:db8::%x:%x", i>>16, i&0xffff))
	}
	ua := fmt.Sprintf("Mozilla/5.0 (X11; Linux x86_64; rv:%d.0) Gecko/20100101 Firefox/%d.0", 100+i%1000/40, 100+i%1000)
	return addr, ua
}

// pipelineHandlers returns the configurations of the two real stores, each
// with the Redis stream between the recorder and the sink.
func pipelineHandlers(t *testing.T) map[string]func(*Handler) {
	t.Helper()
	return map[string]func(*Handler){
		"embedded+redis": func(h *Handler) {
			_, prefix := testenv.Redis(t)
			h.Store, h.Path = "embedded", filepath.Join(t.TempDir(), "links.db")
			h.Redis = &redispool.Config{URL: testenv.RedisURL(t), KeyPrefix: prefix}
		},
		"postgres+redis": func(h *Handler) {
			_, prefix := testenv.Redis(t)
			h.Store, h.DSN = "postgres", testenv.Postgres(t)
			h.Redis = &redispool.Config{URL: testenv.RedisURL(t), KeyPrefix: prefix}
		},
	}
}

// TestUniquesThroughPipeline: 10,000 distinct visitors (a third of them
// clicking twice) on one link give uniques within 2% of 10,000, in the
// window and in its day bucket; on a second link 4 visitors (two user
// agents on one address, an IPv6 client, repeats) and a bot give exactly 4.
func TestUniquesThroughPipeline(t *testing.T) {
	now := time.Date(2026, 11, 29, 10, 30, 0, 0, time.UTC)
	for name, store := range pipelineHandlers(t) {
		t.Run(name, func(t *testing.T) {
			h := newHandler(t, nil, func(h *Handler) {
				store(h)
				h.now = func() time.Time { return now }
				h.ClicksInterval = caddy.Duration(20 * time.Millisecond)
			})
			many := create(t, h, `{"long_url":"https://example.com/many"}`).Code
			few := create(t, h, `{"long_url":"https://example.com/few"}`).Code

			const visitors, workers = 10000, 8
			var wg sync.WaitGroup
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := w; i < visitors; i += workers {
						addr, ua := testVisitor(i)
						for range 1 + btoi(i%3 == 0) {
							if s := visitFrom(h, many, addr, ua); s != http.StatusFound {
								t.Errorf("visitor %d: redirect = %d", i, s)
								return
							}
						}
					}
				}()
			}
			a, b := netip.MustParseAddr("192.0.2.10"), netip.MustParseAddr("192.0.2.11")
			v6 := netip.MustParseAddr("2001:db8:feed::1")
			for _, v := range []struct {
				addr netip.Addr
				ua   string
			}{{a, testBrowserUA}, {a, "MyApp/2.1 (iOS)"}, {b, testBrowserUA}, {b, testBrowserUA}, {v6, testBrowserUA},
				{a, testBrowserUA}, {v6, testBrowserUA}, {b, "Googlebot/2.1 (+http://www.google.com/bot.html)"}} {
				if s := visitFrom(h, few, v.addr, v.ua); s != http.StatusFound {
					t.Fatalf("redirect = %d", s)
				}
			}
			wg.Wait()
			const clickList = visitors + (visitors+2)/3
			var got, gotFew int64
			for deadline := time.Now().Add(60 * time.Second); got < clickList || gotFew < 8; time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("counted %d and %d clicks, want %d and 8", got, gotFew, clickList)
				}
				got, gotFew = apiTotal(t, h, many).Total, apiTotal(t, h, few).Total
			}
			var st clicks.StatsAnswer
			getJSON(t, h, "/api/links/"+many+"/stats?from=2026-11-29T00:00:00Z&to=2026-11-30T00:00:00Z", http.StatusOK, &st)
			if st.Total != clickList || len(st.Timeseries) != 1 || st.Timeseries[0].Uniques == nil {
				t.Fatalf("stats = total %d, series %+v; want %d clicks in one day bucket with uniques", st.Total, st.Timeseries, clickList)
			}
			day := *st.Timeseries[0].Uniques
			t.Logf("%d distinct visitors, %d clicks: uniques %d, day bucket %d (%+.2f%%)", visitors, st.Total, st.Uniques, day,
				100*float64(st.Uniques-visitors)/visitors)
			if math.Abs(float64(st.Uniques-visitors)) > 0.02*visitors || day != st.Uniques {
				t.Errorf("uniques %d, day bucket %d; want %d within 2%%, the same in both", st.Uniques, day, visitors)
			}
			csv := serve(t, h, "GET", "/api/links/"+many+"/stats?from=2026-11-28T00:00:00Z&to=2026-11-30T00:00:00Z&format=csv", "", auth()...)
			t.Logf("GET .../stats?from=2026-11-28T00:00:00Z&to=2026-11-30T00:00:00Z&format=csv:\n%s", csv.Body)
			getJSON(t, h, "/api/links/"+few+"/stats?from=2026-11-29T00:00:00Z&to=2026-11-30T00:00:00Z", http.StatusOK, &st)
			if st.Total != 8 || st.Bots != 1 || st.Uniques != 4 || *st.Timeseries[0].Uniques != 4 {
				t.Errorf("small link: total %d bots %d uniques %d (day %d), want 8, 1, exactly 4", st.Total, st.Bots, st.Uniques, *st.Timeseries[0].Uniques)
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
