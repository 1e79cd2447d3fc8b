package webhook_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
	"github.com/edgekit/caddy-edgekit/shortener/clicks"
	"github.com/edgekit/caddy-edgekit/shortener/link"
	"github.com/edgekit/caddy-edgekit/shortener/store"
	"github.com/edgekit/caddy-edgekit/shortener/webhook"
)

// instanceEnv holds the DSN a child instance (TestWebhookInstance) runs on.
const instanceEnv = "EDGEKIT_WEBHOOK_INSTANCE_DSN"

// TestWebhookInstance is the body of the other instances of
// TestWebhooksSurviveCrashes, run as child processes of this test binary:
// a dispatcher on the DSN in instanceEnv until it is killed. Run by
// itself (no DSN), it has nothing to do.
func TestWebhookInstance(t *testing.T) {
	dsn := os.Getenv(instanceEnv)
	if dsn == "" {
		return
	}
	pool, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	s, err := store.OpenPostgres(context.Background(), pool)
	if err != nil {
		t.Fatal(err)
	}
	d := &webhook.Dispatcher{Store: s, Log: s, Owner: os.Getenv("EDGEKIT_WEBHOOK_OWNER"), Render: renderAny,
		Client:   &webhook.Client{Timeout: time.Second, Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}},
		LeaseFor: 3 * time.Second, Poll: 50 * time.Millisecond, Concurrency: 16,
		Retry: func(n int, now time.Time, _ time.Duration) (time.Time, bool) {
			return now.Add(50 * time.Millisecond), true
		}}
	d.Run(context.Background()) // until killed
}

// renderAny renders link events by their code and click events as
// recorded.
func renderAny(_ context.Context, e link.Event) (webhook.Rendered, error) {
	r := webhook.Rendered{Type: e.Type, At: e.At, Code: e.Code, Data: e.Data}
	if e.Type != clicks.EventType {
		r.Data, _ = json.Marshal(map[string]string{"code": e.Code})
	}
	return r, nil
}

// crashReceiver counts the events it receives per endpoint, by their
// link's code, and the ids they came under; two requests of one message
// at once are an error.
type crashReceiver struct {
	t        *testing.T
	mu       sync.Mutex
	ids      map[string]map[string]bool // endpoint path and event key → message ids
	inFlight map[string]bool
	total    int
}

func (rc *crashReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	id := r.Header.Get(webhook.HeaderID)
	rc.mu.Lock()
	if rc.inFlight[id] {
		rc.t.Errorf("message %s sent by two instances at once", id)
	}
	rc.inFlight[id] = true
	rc.mu.Unlock()
	time.Sleep(200 * time.Microsecond) // a receiver's work: a window for a double send to show
	var p struct {
		Type string `json:"type"`
		Data struct {
			Code string `json:"code"`
		} `json:"data"`
	}
	_ = json.Unmarshal(body, &p)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	delete(rc.inFlight, id)
	if r.Context().Err() != nil {
		return // the sender died: not delivered
	}
	key := r.URL.Path + " " + p.Type + " " + p.Data.Code
	if rc.ids[key] == nil {
		rc.ids[key] = map[string]bool{}
		rc.total++
	}
	rc.ids[key][id] = true
}

func (rc *crashReceiver) delivered() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.total
}

// TestWebhooksSurviveCrashes is issue 36's delivery acceptance: two
// instances (child processes) deliver to two endpoints while 1,000 links
// and 10,000 clicks are recorded; one instance is killed with SIGKILL
// mid-delivery and a third started, and PostgreSQL is restarted once.
// Every event arrives at each endpoint, under one message id (repeats
// only with it), never sent twice at the same moment.
func TestWebhooksSurviveCrashes(t *testing.T) {
	if os.Getenv(instanceEnv) != "" {
		return
	}
	pg := testenv.StartPostgres(t)
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	s, err := store.OpenPostgres(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	s.Events = true
	sink := store.NewPostgresClickSink(pool, 0)
	sink.Events.Store(true)
	rc := &crashReceiver{t: t, ids: map[string]map[string]bool{}, inFlight: map[string]bool{}}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	for _, path := range []string{"/a", "/b"} {
		now := time.Now()
		e := webhook.Endpoint{ID: webhook.NewEndpointID(), URL: srv.URL + path, Types: []string{webhook.TypeLinkCreated, webhook.TypeClick},
			Keys: []webhook.Key{{Secret: webhook.NewSecret()}}, CreatedAt: now, UpdatedAt: now}
		if err := s.CreateEndpoint(ctx, e, link.EventCursor{}); err != nil {
			t.Fatal(err)
		}
	}
	start := func(owner string) *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^TestWebhookInstance$", "-test.count=1")
		cmd.Env = append(os.Environ(), instanceEnv+"="+pg.DSN(), "EDGEKIT_WEBHOOK_OWNER="+owner)
		cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	instances := map[string]*exec.Cmd{"a": start("a"), "b": start("b")}
	const links, clickCount = 1000, 10000
	want := 2 * (links + clickCount)
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		produce(t, s, sink, links, clickCount)
	}()
	waitFor(t, rc, want/5, 60*time.Second)
	// Mid-delivery, kill the instance holding the first endpoint's lease.
	var holder string
	if err := pool.QueryRow(ctx, `SELECT lease_owner FROM shortener_webhook_endpoints ORDER BY url LIMIT 1`).Scan(&holder); err != nil || instances[holder] == nil {
		t.Fatalf("the lease holder: %q, %v", holder, err)
	}
	_ = instances[holder].Process.Signal(syscall.SIGKILL)
	start("c")
	waitFor(t, rc, want/2, 60*time.Second)
	pg.Restart()
	<-produced
	waitFor(t, rc, want, 120*time.Second)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for key, ids := range rc.ids {
		if len(ids) != 1 {
			t.Errorf("%s arrived under %d message ids", key, len(ids))
		}
	}
}

// produce records links and clicks as the handler would, retrying through
// the PostgreSQL restart.
func produce(t *testing.T, s *store.PostgresStore, sink *store.PostgresClickSink, links, clickCount int) {
	ctx := context.Background()
	retry := func(what string, f func() error) {
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			err := f()
			if err == nil || strings.Contains(fmt.Sprint(err), "taken") {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("%s: %v", what, err)
				return
			}
		}
	}
	for i := range links {
		retry("create", func() error {
			return s.Create(ctx, link.Link{Code: fmt.Sprintf("wl-%04d", i), LongURL: "https://example.com/"})
		})
		if i%100 == 99 {
			batch := clicks.Batch{ID: fmt.Sprintf("b-%d", i)}
			for j := range clickCount / 10 {
				batch.Clicks = append(batch.Clicks, clicks.Click{Code: fmt.Sprintf("wc-%05d", i/100*(clickCount/10)+j),
					At: time.Now(), Class: clicks.ClassBrowser})
			}
			retry("clicks", func() error { _, err := sink.ApplyClicks(ctx, []clicks.Batch{batch}); return err })
		}
	}
}

func waitFor(t *testing.T, rc *crashReceiver, n int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for rc.delivered() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d events delivered within %v", rc.delivered(), n, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
