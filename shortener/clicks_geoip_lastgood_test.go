package shortener

import (
	"fmt"
	"log/slog"
	"net/http"
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

// corruptGeoDB rewrites the file at path in place with bytes that are not
// a MaxMind DB.
func corruptGeoDB(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(strings.Repeat("corrupt ", 500)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A config reload (a new handler provisioned while the old one runs)
// whose clicks_geoip file went corrupt after the old config loaded it
// provisions: the new handler derives from the last good file, and takes
// the next good file its watcher finds.
func TestGeoIPCorruptFileNeverBlocksReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "GeoLite2-City.mmdb")
	writeGeoDB(t, path, "GeoLite2-City", countryNets("US"))
	configure := func(h *Handler) {
		h.ClicksInterval = caddy.Duration(10 * time.Millisecond)
		h.ClicksGeoIP, h.geoPoll = path, time.Millisecond
	}
	newGeoStore := func() *geoClickStore {
		return &geoClickStore{memStore: newMemStore(), memClickSink: new(memClickSink), byBatch: map[string][]clicks.Click{}}
	}
	newHandler(t, newGeoStore(), configure) // the running config
	corruptGeoDB(t, path)

	s := newGeoStore()
	h := newHandler(t, s, configure) // the reload: Provision must not fail
	if bad := h.clicks.Geo.Bad.Load(); bad < 1 {
		t.Errorf("rejected files = %d, want at least 1", bad)
	}
	if n := clicks.OpenGeoIPs(path); n != 2 {
		t.Errorf("OpenGeoIPs = %d, want 2 (the old and the new config)", n)
	}
	code := create(t, h, `{"long_url":"https://example.com/geo"}`).Code
	redirectMany(t, h, code, 25)
	waitCodeTotal(t, s, code, 8*25)
	if got := s.countriesOf(code); got["US"] != 8*25 {
		t.Errorf("clicks after a reload with a corrupt file: %v, want %d US (the last good file)", got, 8*25)
	}

	writeGeoDB(t, path, "GeoLite2-City", countryNets("NZ"))
	eventually(t, 10*time.Second, "the new good file loaded", func() bool { return h.clicks.Geo.Loads.Load() >= 1 })
	next := create(t, h, `{"long_url":"https://example.com/geo2"}`).Code
	if st := redirectFrom(h, next, "198.51.100.7:4000"); st != http.StatusFound {
		t.Fatalf("GET /%s = %d", next, st)
	}
	waitCodeTotal(t, s, next, 1)
	if got := s.countriesOf(next); got["NZ"] != 1 {
		t.Errorf("clicks after the good file came back: %v, want NZ", got)
	}
}

// Recorders opened on a corrupt file while one that read a good file
// runs (200 at once) all start with that file, each logging a warning
// with the path, the error and the file kept. Once every recorder of the
// path is closed the good file is dropped: a first load with a corrupt
// file fails, naming the path.
func TestGeoIPCorruptAtStartKeepsLastGood(t *testing.T) {
	path := filepath.Join(t.TempDir(), "geo.mmdb")
	writeGeoDB(t, path, "GeoLite2-Country", countryNets("US"))
	core, logs := observer.New(zap.InfoLevel)
	sink := &geoClickStore{memStore: newMemStore(), memClickSink: new(memClickSink), byBatch: map[string][]clicks.Click{}}
	cfg := clicks.Config{Sink: sink, GeoIP: path, GeoIPPoll: time.Hour, BatchSize: 10, BatchInterval: 10 * time.Millisecond,
		Logger: slog.New(zapslog.NewHandler(core))}
	first, err := clicks.NewRecorder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	corruptGeoDB(t, path)

	const n = 200
	recs, errs := make([]*clicks.Recorder, n), make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { recs[i], errs[i] = clicks.NewRecorder(cfg) })
	}
	wg.Wait()
	for i, rec := range recs {
		if errs[i] != nil {
			t.Fatalf("recorder %d on a corrupt file: %v, want the last good file", i, errs[i])
		}
		rec.Record(clicks.Click{Code: fmt.Sprintf("c%04d", i), At: time.Now(), Class: clicks.ClassBrowser,
			Addr: netip.MustParseAddr("198.51.100.1"), UA: canaryUA})
	}
	if got := clicks.OpenGeoIPs(path); got != n+1 {
		t.Errorf("OpenGeoIPs = %d, want %d", got, n+1)
	}
	for i, rec := range recs {
		closeRecorder(t, rec)
		if got := sink.countriesOf(fmt.Sprintf("c%04d", i)); got["US"] != 1 {
			t.Errorf("recorder %d: countries %v, want one US click", i, got)
		}
	}
	warns := logs.FilterMessage("GeoIP database not loaded; the last good one stays").All()
	if len(warns) != n {
		t.Fatalf("%d warnings, want %d", len(warns), n)
	}
	for _, w := range warns {
		f := w.ContextMap()
		if w.Level != zap.WarnLevel || f["path"] != path || !strings.Contains(f["error"].(string), "not a MaxMind DB file") || f["type"] != "GeoLite2-Country" {
			t.Fatalf("warning %v %v: want warn, the path, the error and the type of the file kept", w.Level, f)
		}
	}

	closeRecorder(t, first)
	if got := clicks.OpenGeoIPs(path); got != 0 {
		t.Errorf("OpenGeoIPs after every recorder closed = %d, want 0", got)
	}
	if _, err := clicks.NewRecorder(cfg); err == nil || !strings.Contains(err.Error(), `clicks_geoip "`+path+`"`) {
		t.Errorf("first load with a corrupt file = %v, want an error naming clicks_geoip and the path", err)
	}
}
