package shortener

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"
	"go.uber.org/zap/exp/zapslog"
	"go.uber.org/zap/zaptest/observer"

	"github.com/edgekit/caddy-edgekit/shortener/clicks"
)

// countryNets is a database placing the test addresses in country cc.
func countryNets(cc string) []geoNet {
	return []geoNet{{"198.51.100.0/24", cityRecord(cc, "", "")}, {"2001:db8::/32", cityRecord(cc, "", "")}}
}

// The watcher's check, step by step: a file replaced by rename, an
// invalid replacement (logged once with path and error, the loaded file
// stays), a file rewritten in place, a file removed. The writer swaps a
// loaded file in before its next lookup.
func TestGeoIPCheckReloads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "geo.mmdb")
	writeGeoDB(t, path, "GeoLite2-Country", countryNets("US"))
	core, logs := observer.New(zap.InfoLevel)
	g, err := clicks.OpenGeoIP(path, time.Hour, slog.New(zapslog.NewHandler(core)))
	if err != nil {
		t.Fatal(err)
	}
	r := &clicks.Recorder{Ua: clicks.NewUAParser(), Geo: g}
	country := func() string { return deriveGeo(r, "198.51.100.1")[0] }
	step := func(what, want string, loads, bad int64) {
		t.Helper()
		g.Check()
		if got := country(); got != want || g.Loads.Load() != loads || g.Bad.Load() != bad {
			t.Errorf("%s: country %q, loads %d, rejected %d; want %q, %d, %d", what, got, g.Loads.Load(), g.Bad.Load(), want, loads, bad)
		}
	}
	step("unchanged", "US", 1, 0)

	writeGeoDB(t, path, "GeoLite2-Country", countryNets("NZ"))
	step("replaced by rename", "NZ", 2, 0)

	junk := filepath.Join(filepath.Dir(path), "junk")
	if err := os.WriteFile(junk, []byte(strings.Repeat("junk", 1000)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(junk, path); err != nil {
		t.Fatal(err)
	}
	step("invalid replacement", "NZ", 2, 1)
	step("invalid replacement, unchanged", "NZ", 2, 1)
	writeGeoDB(t, path, "GeoLite2-ASN", countryNets("JP"))
	step("ASN database", "NZ", 2, 2)

	valid := filepath.Join(t.TempDir(), "valid.mmdb")
	writeGeoDB(t, valid, "GeoLite2-City", countryNets("JP"))
	data, err := os.ReadFile(valid)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil { // in place: same inode
		t.Fatal(err)
	}
	step("rewritten in place", "JP", 3, 2)

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	step("removed", "JP", 3, 2)

	warns := logs.FilterMessage("GeoIP database not reloaded; the loaded one stays").All()
	if len(warns) != 3 {
		t.Fatalf("%d warnings, want 3 (junk, ASN, removed): %v", len(warns), warns)
	}
	for i, want := range []string{"not a MaxMind DB file", `database type "GeoLite2-ASN" has no country`, "no such file or directory"} {
		f := warns[i].ContextMap()
		if warns[i].Level != zap.WarnLevel || f["path"] != path || !strings.Contains(f["error"].(string), want) {
			t.Errorf("warning %d: %v %v, want path %s and an error containing %q", i, warns[i].Level, f, path, want)
		}
	}
	if n := logs.FilterMessage("GeoIP database reloaded").Len(); n != 2 {
		t.Errorf("%d reload lines, want 2", n)
	}
}

// geoClickStore keeps links in memory and, besides counting clicks, the
// countries of each batch's clicks per code.
type geoClickStore struct {
	*memStore
	*memClickSink
	mu      sync.Mutex
	byBatch map[string][]clicks.Click // batch ID: a batch applied twice counts once
}

func (s *geoClickStore) ApplyClicks(ctx context.Context, batches []clicks.Batch) (int, error) {
	s.mu.Lock()
	for _, b := range batches {
		s.byBatch[b.ID] = b.Clicks
	}
	s.mu.Unlock()
	return s.memClickSink.ApplyClicks(ctx, batches)
}

// countriesOf returns, for code, how many clicks each country has.
func (s *geoClickStore) countriesOf(code string) map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := map[string]int{}
	for _, clicks := range s.byBatch {
		for _, c := range clicks {
			if c.Code == code {
				n[c.Country]++
			}
		}
	}
	return n
}

// redirectFrom sends a redirect request for code from addr.
func redirectFrom(h *Handler, code, addr string) int {
	r := httptest.NewRequest("GET", "http://sho.rt/"+code, nil)
	r.RemoteAddr = addr
	r.Header.Set("User-Agent", canaryUA)
	r = r.WithContext(context.WithValue(r.Context(), caddy.ReplacerCtxKey, caddy.NewReplacer()))
	w := httptest.NewRecorder()
	if err := h.ServeHTTP(w, r, nextHandler); err != nil {
		return 599
	}
	return w.Code
}

// redirectMany runs n redirects for code from each of 8 goroutines,
// alternating an IPv4 and an IPv6 client.
func redirectMany(t *testing.T, h *Handler, code string, n int) {
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range n {
				addr := "198.51.100.9:4000"
				if (g+i)%2 == 1 {
					addr = "[2001:db8::9]:4000"
				}
				if st := redirectFrom(h, code, addr); st != http.StatusFound {
					t.Errorf("GET /%s = %d, want 302", code, st)
					return
				}
			}
		})
	}
	wg.Wait()
}

// A real handler serving redirects from many goroutines while its GeoIP
// file is replaced by rename: every click gets the old or the new
// country, those derived after the reload the new one; an invalid
// replacement keeps it; a file rewritten in place is picked up too.
func TestGeoIPReloadWhileRedirecting(t *testing.T) {
	path := filepath.Join(t.TempDir(), "GeoLite2-City.mmdb")
	writeGeoDB(t, path, "GeoLite2-City", countryNets("US"))
	s := &geoClickStore{memStore: newMemStore(), memClickSink: new(memClickSink), byBatch: map[string][]clicks.Click{}}
	h := newHandler(t, s, func(h *Handler) {
		h.ClicksInterval = caddy.Duration(10 * time.Millisecond)
		h.ClicksGeoIP, h.geoPoll = path, time.Millisecond
	})
	g := h.clicks.Geo
	codes := make([]string, 4)
	for i := range codes {
		codes[i] = create(t, h, `{"long_url":"https://example.com/geo"}`).Code
	}
	const n = 250 // per goroutine: 2,000 clicks per code

	// During: the file replaced by rename while 8 goroutines redirect.
	done := make(chan struct{})
	go func() {
		defer close(done)
		redirectMany(t, h, codes[0], n)
	}()
	writeGeoDB(t, path, "GeoLite2-City", countryNets("NZ"))
	<-done
	eventually(t, 10*time.Second, "the renamed file loaded", func() bool { return g.Loads.Load() == 2 })
	redirectMany(t, h, codes[1], n)
	waitCodeTotal(t, s, codes[1], 8*n) // derived before the next change

	// An invalid replacement: the loaded file stays.
	junk := filepath.Join(filepath.Dir(path), "junk")
	if err := os.WriteFile(junk, []byte("not a database"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(junk, path); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the invalid file rejected", func() bool { return g.Bad.Load() >= 1 })
	redirectMany(t, h, codes[2], n)
	waitCodeTotal(t, s, codes[2], 8*n)

	// Rewritten in place.
	valid := filepath.Join(t.TempDir(), "valid.mmdb")
	writeGeoDB(t, valid, "GeoLite2-City", countryNets("JP"))
	data, err := os.ReadFile(valid)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the rewritten file loaded", func() bool { return g.Loads.Load() >= 3 })
	redirectMany(t, h, codes[3], n)

	for i, code := range codes {
		waitCodeTotal(t, s, code, 8*n)
		got := s.countriesOf(code)
		switch i {
		case 0:
			if got["US"]+got["NZ"] != 8*n {
				t.Errorf("clicks during the rename: %v, want %d of US and NZ", got, 8*n)
			}
		case 1, 2:
			if got["NZ"] != 8*n {
				t.Errorf("clicks after the rename (step %d): %v, want %d NZ", i, got, 8*n)
			}
		case 3:
			if got["JP"] != 8*n {
				t.Errorf("clicks after the rewrite in place: %v, want %d JP", got, 8*n)
			}
		}
	}
	if l := g.Loads.Load(); l < 3 {
		t.Errorf("%d loads, want at least 3", l)
	}
}

// Close stops the watcher and closes the files once the writer's last
// lookup is done, a file loaded but never swapped in included.
func TestGeoIPStopsOnClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "geo.mmdb")
	writeGeoDB(t, path, "GeoLite2-Country", countryNets("US"))
	rec := newTestRecorder(t, clicks.Config{Sink: new(memClickSink), GeoIP: path, GeoIPPoll: time.Millisecond})
	g := rec.Geo
	writeGeoDB(t, path, "GeoLite2-Country", countryNets("NZ")) // loaded; no click swaps it in
	eventually(t, 10*time.Second, "the new file loaded", func() bool { return g.Loads.Load() == 2 })
	next := g.Next.Load()
	closeRecorder(t, rec)
	select {
	case <-g.Done:
	default:
		t.Fatal("the watcher still runs after Close")
	}
	for _, db := range []*clicks.GeoDB{g.Cur, next} {
		var rec clicks.GeoRecord
		if err := db.R.Lookup(netip.MustParseAddr("198.51.100.1")).Decode(&rec); err == nil {
			t.Errorf("a file is still open after Close")
		}
	}
}
