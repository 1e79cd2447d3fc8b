package webhook_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/link"
	"github.com/edgekit/caddy-edgekit/shortener/store"
	"github.com/edgekit/caddy-edgekit/shortener/webhook"
)

// receiver answers each message 500 three times, stalls past the
// client's timeout once, then answers 200; it checks every signature and
// records each message's id by the link it announces.
type receiver struct {
	t      *testing.T
	secret webhook.Secret
	stall  time.Duration

	mu        sync.Mutex
	tries     map[string]int    // message id → requests
	delivered map[string]string // message id → code, on its 200
	inFlight  map[string]bool
	headers   []http.Header // every request's, for an independent check
	bodies    [][]byte
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	id := r.Header.Get(webhook.HeaderID)
	if err := webhook.Verify(r.Header, body, time.Now(), rc.secret); err != nil {
		rc.t.Errorf("message %s: %v", id, err)
	}
	rc.mu.Lock()
	if rc.inFlight[id] {
		rc.t.Errorf("message %s sent twice at once", id)
	}
	rc.inFlight[id] = true
	rc.headers, rc.bodies = append(rc.headers, r.Header.Clone()), append(rc.bodies, body)
	rc.tries[id]++
	n := rc.tries[id]
	rc.mu.Unlock()
	defer func() { rc.mu.Lock(); delete(rc.inFlight, id); rc.mu.Unlock() }()
	switch {
	case n <= 3:
		w.WriteHeader(http.StatusInternalServerError)
		return
	case n == 4: // the client gives up on it: no longer in flight
		rc.mu.Lock()
		delete(rc.inFlight, id)
		rc.mu.Unlock()
		select {
		case <-time.After(rc.stall):
		case <-r.Context().Done():
		}
		return
	}
	var p struct {
		Type string `json:"type"`
		Data struct {
			Code string `json:"code"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &p); err != nil || p.Type != webhook.TypeLinkCreated {
		rc.t.Errorf("message %s: %s, %v", id, body, err)
	}
	rc.mu.Lock()
	rc.delivered[id] = p.Data.Code
	rc.mu.Unlock()
}

// TestDispatcherDelivers: 30 link events through a receiver that fails
// each message three times and stalls once arrive, each under one id,
// signed (every request verified by the npm standardwebhooks package as
// well as ours), never sent twice at once; every message's attempt log is
// the five attempts in order, and it ends delivered.
func TestDispatcherDelivers(t *testing.T) {
	s := openOutboxStore(t)
	secret := webhook.NewSecret()
	rc := &receiver{t: t, secret: secret, stall: 500 * time.Millisecond, tries: map[string]int{},
		delivered: map[string]string{}, inFlight: map[string]bool{}}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	now := time.Now()
	ep := webhook.Endpoint{ID: webhook.NewEndpointID(), URL: srv.URL, Types: []string{webhook.TypeLinkCreated},
		Keys: []webhook.Key{{Secret: secret}}, CreatedAt: now, UpdatedAt: now}
	if err := s.CreateEndpoint(ctx, ep, link.EventCursor{}); err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		if err := s.Create(ctx, link.Link{Code: fmt.Sprintf("hook-%02d", i), LongURL: "https://example.com/"}); err != nil {
			t.Fatal(err)
		}
	}
	d := &webhook.Dispatcher{Store: s, Log: s, Owner: "test",
		Client: &webhook.Client{Timeout: 200 * time.Millisecond, Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}},
		Render: renderLink, Poll: 20 * time.Millisecond,
		Retry: func(n int, now time.Time, _ time.Duration) (time.Time, bool) {
			return now.Add(10 * time.Millisecond), n < webhook.MaxAttempts
		},
		OnError: func(_ string, err error) { t.Errorf("dispatcher: %v", err) }}
	done := make(chan struct{})
	go func() { d.Run(ctx); close(done) }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		rc.mu.Lock()
		n := len(rc.delivered)
		rc.mu.Unlock()
		if n == 30 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 30 delivered", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // the last Settle
	cancel()
	<-done
	codes := map[string]bool{}
	for id, code := range rc.delivered {
		if codes[code] {
			t.Errorf("link %s announced under two ids", code)
		}
		codes[code] = true
		logs, err := s.Attempts(context.Background(), ep.ID, id)
		var got []int
		for _, a := range logs {
			got = append(got, a.Status)
		}
		if err != nil || fmt.Sprint(got) != "[500 500 500 0 200]" {
			t.Errorf("message %s attempts %v, %v", id, got, err)
		}
	}
	if msgs, _ := s.Messages(context.Background(), ep.ID, webhook.StateDelivered, "", 100); len(msgs) != 30 {
		t.Errorf("%d messages delivered in the store", len(msgs))
	}
	for i, bad := range webhook.VerifyWithStandardWebhooks(t, secret, rc.headers, rc.bodies) {
		if bad != "" {
			t.Errorf("request %d (%s): the npm standardwebhooks package refuses it: %s", i, rc.headers[i].Get(webhook.HeaderID), bad)
		}
	}
	if len(rc.bodies) < 150 {
		t.Errorf("%d requests, want 5 per message at least", len(rc.bodies))
	}
}

func renderLink(_ context.Context, e link.Event) (webhook.Rendered, error) {
	data, err := json.Marshal(map[string]string{"code": e.Link.Code})
	return webhook.Rendered{Type: e.Type, At: e.At, Data: data, Code: e.Code, Tags: e.Link.Tags}, err
}

// TestDispatcherThrottles: a receiver answering 429 to everything sees
// fewer deliveries at once, down to one.
func TestDispatcherThrottles(t *testing.T) {
	s := openOutboxStore(t)
	var mu sync.Mutex
	inFlight, most, requests := 0, 0, 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		inFlight++
		requests++
		if requests > 200 { // after the pace has had rounds to fall
			most = max(most, inFlight)
		}
		mu.Unlock()
		time.Sleep(2 * time.Millisecond)
		mu.Lock()
		inFlight--
		mu.Unlock()
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	now := time.Now()
	ep := webhook.Endpoint{ID: webhook.NewEndpointID(), URL: srv.URL, Types: []string{webhook.TypeLinkCreated},
		Keys: []webhook.Key{{Secret: webhook.NewSecret()}}, CreatedAt: now, UpdatedAt: now}
	if err := s.CreateEndpoint(ctx, ep, link.EventCursor{}); err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		if err := s.Create(ctx, link.Link{Code: fmt.Sprintf("slow-%02d", i), LongURL: "https://example.com/"}); err != nil {
			t.Fatal(err)
		}
	}
	d := &webhook.Dispatcher{Store: s, Log: s, Owner: "test", Concurrency: 16, Render: renderLink, Poll: 5 * time.Millisecond,
		Client: &webhook.Client{Timeout: time.Second, Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}},
		Retry:  func(n int, now time.Time, _ time.Duration) (time.Time, bool) { return now, true }}
	go d.Run(ctx)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		n := requests
		mu.Unlock()
		if n >= 400 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d requests in 20 s", n)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if most != 1 {
		t.Errorf("a throttling receiver still got %d deliveries at once", most)
	}
}

// TestDispatcherReleasesAtStop: a dispatcher that stops (an instance
// shutting down, a config reload) gives its leases up, so that the next
// one delivers at once rather than after the lease (a minute) runs out;
// also when it stops in the middle of a delivery, whose message the next
// one sends again.
func TestDispatcherReleasesAtStop(t *testing.T) {
	for _, midSend := range []bool{false, true} {
		t.Run(fmt.Sprintf("mid-send=%v", midSend), func(t *testing.T) { testReleaseAtStop(t, midSend) })
	}
}

func testReleaseAtStop(t *testing.T, midSend bool) {
	s := openOutboxStore(t)
	var mu sync.Mutex
	got := map[string]bool{} // the codes delivered
	inFlight := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p struct {
			Data struct {
				Code string `json:"code"`
			} `json:"data"`
		}
		_ = json.NewDecoder(r.Body).Decode(&p)
		mu.Lock()
		stall := midSend && p.Data.Code == "handover-0" && !got["stalled"]
		got["stalled"] = got["stalled"] || stall
		got[p.Data.Code] = got[p.Data.Code] || !stall
		mu.Unlock()
		if stall { // the first delivery hangs until its sender gives up
			inFlight <- struct{}{}
			<-r.Context().Done()
		}
	}))
	defer srv.Close()
	now := time.Now()
	ep := webhook.Endpoint{ID: webhook.NewEndpointID(), URL: srv.URL, Types: []string{webhook.TypeLinkCreated},
		Keys: []webhook.Key{{Secret: webhook.NewSecret()}}, CreatedAt: now, UpdatedAt: now}
	if err := s.CreateEndpoint(context.Background(), ep, link.EventCursor{}); err != nil {
		t.Fatal(err)
	}
	delivered := func(code string) bool {
		mu.Lock()
		defer mu.Unlock()
		return got[code]
	}
	for i, owner := range []string{"first", "second"} {
		code := fmt.Sprintf("handover-%d", i)
		if err := s.Create(context.Background(), link.Link{Code: code, LongURL: "https://example.com/"}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		d := &webhook.Dispatcher{Store: s, Log: s, Owner: owner, LeaseFor: time.Minute, Poll: 20 * time.Millisecond,
			Client: &webhook.Client{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}, Render: renderLink,
			OnError: func(_ string, err error) { t.Errorf("dispatcher %s: %v", owner, err) }}
		done := make(chan struct{})
		go func() { d.Run(ctx); close(done) }()
		if midSend && i == 0 {
			<-inFlight
		} else {
			waitDelivered(t, owner, func() bool { return delivered(code) && delivered("handover-0") })
			time.Sleep(50 * time.Millisecond) // the Settle
		}
		cancel()
		<-done
	}
}

func waitDelivered(t *testing.T, owner string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("dispatcher %s did not deliver in 10s (its lease a minute)", owner)
		}
	}
}

// openOutboxStore is an embedded store of a fresh file with its outbox on,
// closed when the test ends.
func openOutboxStore(t *testing.T) *store.EmbeddedStore {
	t.Helper()
	s, err := store.OpenEmbedded(filepath.Join(t.TempDir(), "links.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	s.Events = true
	return s
}
