package shortener

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/edgekit/caddy-edgekit/shortener/webhook"
)

// delivery is one request a test receiver got.
type delivery struct {
	path   string
	header http.Header
	body   []byte
}

// TestUIBrowserWebhooks is issue 36's dashboard acceptance in a real
// browser (e2e/webhooks.mjs): a write session creates an endpoint for
// link.created pointing at a receiver here (a private URL and no event
// type refused first, each named beside the form), reads and copies the
// secret shown once, creates a link, sees the message delivered and its
// attempt (200), replays it and every message since an hour ago, rotates
// the secret, edits, disables the endpoint and deletes another; a read
// session has no Webhooks page; every page fits 360 px. Here: the
// receiver got the link's message three times under one webhook-id, each
// signed with the secret the page showed (and, once rotated, with the new
// one), and the store holds the endpoint disabled with what was saved.
func TestUIBrowserWebhooks(t *testing.T) {
	needBrowser(t)
	var mu sync.Mutex
	var got []delivery
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, delivery{r.URL.Path, r.Header.Clone(), body})
		mu.Unlock()
		_, _ = w.Write([]byte("ok"))
	}))
	defer rc.Close()
	st := embeddedStore(t)
	h := newHandler(t, st, func(h *Handler) {
		h.UI, h.APIReadKeys = "/admin", []string{testReadKey}
		h.Webhooks = &WebhooksConfig{AllowPrivate: []string{"127.0.0.0/8"}, Timeout: caddy.Duration(2 * time.Second)}
	})
	srv := dashboardServer(t, h, nil)
	out := runNode(t, "webhooks.mjs", 150*time.Second,
		"BASE="+srv.URL, "UI=/admin/", "WRITE_KEY="+testKey, "READ_KEY="+testReadKey, "RECEIVER="+rc.URL)
	var res struct{ ID, Msg, Code, Secret1, Secret2 string }
	decodeResult(t, out, &res)

	s1, err := webhook.ParseSecret(res.Secret1)
	if err != nil {
		t.Fatalf("the secret the page showed: %v", err)
	}
	s2, err := webhook.ParseSecret(res.Secret2)
	if err != nil {
		t.Fatalf("the rotated secret the page showed: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	var mine []delivery
	for _, d := range got {
		if d.path == "/in" {
			mine = append(mine, d)
		}
	}
	if len(mine) != 3 {
		t.Fatalf("the receiver got %d messages at /in, want 3 (delivered, replayed, replayed since)", len(mine))
	}
	for i, d := range mine {
		if id := d.header.Get(webhook.HeaderID); id != res.Msg {
			t.Errorf("message %d: webhook-id %q, want %q (the page's message)", i, id, res.Msg)
		}
		// The first two were sent before the rotation, under the first
		// secret alone; the third after it, under both.
		at := time.Now()
		if err := webhook.Verify(d.header, d.body, at, s1); err != nil {
			t.Errorf("message %d does not verify with the secret the page showed: %v", i, err)
		}
		err := webhook.Verify(d.header, d.body, at, s2)
		if i < 2 && err == nil || i == 2 && err != nil {
			t.Errorf("message %d with the rotated secret: %v (signatures %q)", i, err, d.header.Get(webhook.HeaderSignature))
		}
		if !sameJSON(string(d.body), string(mine[0].body)) {
			t.Errorf("message %d body %s, want the first's %s", i, d.body, mine[0].body)
		}
	}
	var p struct {
		Type string
		Data struct{ Code string }
	}
	if err := json.Unmarshal(mine[0].body, &p); err != nil || p.Type != webhook.TypeLinkCreated || p.Data.Code != res.Code {
		t.Errorf("the message: %s", mine[0].body)
	}
	e, err := st.Endpoint(context.Background(), res.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !e.Disabled || e.Description != "the test receiver" || len(e.Tags) != 1 || e.Tags[0] != "print" || len(e.Types) != 2 {
		t.Errorf("the stored endpoint: %+v", e)
	}
	eps, err := st.Endpoints(context.Background())
	if err != nil || len(eps) != 1 {
		t.Errorf("endpoints after deleting the other: %d, %v", len(eps), err)
	}
}
