package shortener

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// memStore is a small in-memory Store for handler tests that need no
// database; the store contract itself is tested against the real stores.
type memStore struct {
	mu    sync.Mutex
	links map[string]link.Link
	seq   int64
	down  atomic.Bool // every call fails, like a stopped database
}

var errDown = errors.New("store down")

func newMemStore() *memStore { return &memStore{links: map[string]link.Link{}} }

func (s *memStore) Get(ctx context.Context, code string) (link.Link, error) {
	if s.down.Load() {
		return link.Link{}, errDown
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.links[code]
	if !ok {
		return link.Link{}, link.ErrNotFound
	}
	return l, nil
}

func (s *memStore) Create(ctx context.Context, l link.Link) error {
	if s.down.Load() {
		return errDown
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.links[l.Code]; ok {
		return link.ErrCodeTaken
	}
	s.links[l.Code] = l
	return nil
}

func (s *memStore) Revoke(ctx context.Context, code string, at time.Time) error {
	if s.down.Load() {
		return errDown
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.links[code]
	if !ok {
		return link.ErrNotFound
	}
	if l.RevokedAt.IsZero() {
		l.RevokedAt = at
		s.links[code] = l
	}
	return nil
}

func (s *memStore) NextBlock(ctx context.Context, size int64) (int64, error) {
	if s.down.Load() {
		return 0, errDown
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	first := s.seq + 1
	s.seq += size
	return first, nil
}

func (s *memStore) Close() error { return nil }

func (s *memStore) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.links)
}

// countingStore counts the calls reaching the wrapped store.
type countingStore struct {
	link.Store
	gets, creates, blocks atomic.Int64
}

func (c *countingStore) Get(ctx context.Context, code string) (link.Link, error) {
	c.gets.Add(1)
	return c.Store.Get(ctx, code)
}

func (c *countingStore) Create(ctx context.Context, l link.Link) error {
	c.creates.Add(1)
	return c.Store.Create(ctx, l)
}

func (c *countingStore) NextBlock(ctx context.Context, size int64) (int64, error) {
	c.blocks.Add(1)
	return c.Store.NextBlock(ctx, size)
}

// Close leaves the wrapped store open: tests close what they opened.
func (c *countingStore) Close() error { return nil }

const testKey = "test-key-0123456789"

// newHandler provisions a handler with store s (not opened by Provision),
// after configure adjusts its fields; Cleanup runs at test end.
func newHandler(t testing.TB, s link.Store, configure func(*Handler)) *Handler {
	t.Helper()
	h := &Handler{API: "/api", APIKeys: []string{testKey}}
	if configure != nil {
		configure(h)
	}
	if h.dataDir == "" {
		h.dataDir = t.TempDir() // the dashboard's generated secret
	}
	h.store = s
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	if err := h.Provision(ctx); err != nil {
		cancel()
		t.Fatalf("Provision: %v", err)
	}
	if err := h.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	t.Cleanup(func() {
		if err := h.Cleanup(); err != nil {
			t.Errorf("Cleanup: %v", err)
		}
		cancel()
	})
	return h
}

// nextHandler marks requests the shortener passed on.
var nextHandler = caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("X-Next", "1")
	w.WriteHeader(http.StatusTeapot)
	return nil
})

// serve runs one request through h like Caddy would, turning a returned
// caddyhttp.HandlerError into its status. header is name, value pairs,
// each setting its header; a name ending in "+" adds a value instead.
func serve(t testing.TB, h *Handler, method, target, body string, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	var rb io.Reader
	if body != "" {
		rb = strings.NewReader(body)
	}
	if strings.HasPrefix(target, "/") {
		target = "http://sho.rt" + target
	}
	r := httptest.NewRequest(method, target, rb)
	for i := 0; i+1 < len(header); i += 2 {
		if name, ok := strings.CutSuffix(header[i], "+"); ok {
			r.Header.Add(name, header[i+1]) // "Name+": one more value, not a replacement
		} else {
			r.Header.Set(header[i], header[i+1])
		}
	}
	repl := caddy.NewReplacer()
	r = r.WithContext(context.WithValue(r.Context(), caddy.ReplacerCtxKey, repl))
	sent := r.Header.Clone()
	w := httptest.NewRecorder()
	if err := h.ServeHTTP(w, r, nextHandler); err != nil {
		var he caddyhttp.HandlerError
		if !errors.As(err, &he) {
			t.Fatalf("%s %s: non-HTTP error %v", method, target, err)
		}
		w.Code = he.StatusCode
	}
	if rest, ok := strings.CutPrefix(r.URL.Path, h.API+"/"); ok && h.API != "" && w.Header().Get("X-Next") == "" {
		checkExchange(t, method, r.URL, "/"+rest, sent, body, w)
	}
	return w
}

func auth() []string { return []string{"Authorization", "Bearer " + testKey} }

// create makes a link through the API and returns its code.
func create(t testing.TB, h *Handler, body string) link.Response {
	t.Helper()
	w := serve(t, h, "POST", "http://sho.rt/api/links", body, auth()...)
	if w.Code != http.StatusCreated {
		t.Fatalf("POST %s = %d %s, want 201", body, w.Code, w.Body)
	}
	var out link.Response
	if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
		t.Fatalf("decoding %s: %v", w.Body, err)
	}
	return out
}

func redirectsMetric(h *Handler, source, result string) float64 {
	return counterValue(h.metrics.redirects.WithLabelValues(source, result))
}

func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return -1
	}
	return m.GetCounter().GetValue()
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", within, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
