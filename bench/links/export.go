package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/edgekit/caddy-edgekit/shortener"
)

const benchKey = "bench-key-0123456789abcdef"

// exporter runs GET <api>/links/export through a provisioned handler on
// the bench schema, as Caddy would.
type exporter struct {
	h      *shortener.Handler
	cancel context.CancelFunc
}

func newExporter(dsn string) (*exporter, error) {
	h := &shortener.Handler{Store: "postgres", DSN: dsn, API: "/api", APIKeys: []string{benchKey}, CodeFilterOff: true}
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	if err := h.Provision(ctx); err != nil {
		cancel()
		return nil, err
	}
	return &exporter{h: h, cancel: cancel}, nil
}

func (e *exporter) close() {
	_ = e.h.Cleanup()
	e.cancel()
}

// countingWriter discards the export, counting its lines.
type countingWriter struct {
	header http.Header
	status int
	lines  int
}

func (w *countingWriter) Header() http.Header { return w.header }
func (w *countingWriter) WriteHeader(s int)   { w.status = s }
func (w *countingWriter) Write(b []byte) (int, error) {
	w.lines += bytes.Count(b, []byte{'\n'})
	return len(b), nil
}
func (w *countingWriter) Flush() {}

// run exports every link as NDJSON and returns how many, how long it took
// and the process's peak RSS meanwhile (VmHWM after resetting it).
func (e *exporter) run() (int, time.Duration, int64, error) {
	debug.FreeOSMemory()
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) // reset VmHWM to the current RSS
	r := httptest.NewRequest("GET", "http://sho.rt/api/links/export?format=ndjson", nil)
	r.Header.Set("Authorization", "Bearer "+benchKey)
	r = r.WithContext(context.WithValue(r.Context(), caddy.ReplacerCtxKey, caddy.NewReplacer()))
	w := &countingWriter{header: http.Header{}}
	start := time.Now()
	next := caddyhttp.HandlerFunc(func(http.ResponseWriter, *http.Request) error { return nil })
	if err := e.h.ServeHTTP(w, r, next); err != nil || w.status != http.StatusOK {
		return 0, 0, 0, fmt.Errorf("export: %d %v", w.status, err)
	}
	took := time.Since(start)
	return w.lines, took, peakRSS(), nil
}

// peakRSS reads VmHWM from /proc/self/status, in bytes.
func peakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return -1
}
