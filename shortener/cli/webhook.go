package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// The webhook API's wire shapes, as shortener/webhookapi writes them. They
// are written here again because that package brings the delivery engine
// with it; webhook_wire_test.go checks that every field the server sends
// is one of these.

// Webhook is a webhook endpoint as the API answers it (GET
// <api>/webhooks/<id>); Secret only in the answers of create and rotate.
type Webhook struct {
	ID             string       `json:"id"`
	URL            string       `json:"url"`
	Description    string       `json:"description"`
	Types          []string     `json:"types"`
	Tags           []string     `json:"tags"`
	Codes          []string     `json:"codes"`
	Disabled       bool         `json:"disabled"`
	DisabledReason string       `json:"disabled_reason,omitempty"`
	Batch          int          `json:"batch"`
	BatchWaitMS    int64        `json:"batch_wait_ms"`
	Keys           []WebhookKey `json:"keys"`
	CreatedAt      time.Time    `json:"created_at"`
	UpdatedAt      time.Time    `json:"updated_at"`
	Version        int64        `json:"version"`
	Secret         string       `json:"secret,omitempty"`
}

// WebhookKey is one signing key of an endpoint: the current one (Until
// nil) or one rotated out and still signing until then.
type WebhookKey struct {
	Until *time.Time `json:"until"`
}

// WebhookMessage is one message of an endpoint: Body and Attempts only
// when read alone (GET <api>/webhooks/<id>/messages/<msg>).
type WebhookMessage struct {
	ID         string           `json:"id"`
	Type       string           `json:"type"`
	At         time.Time        `json:"at"`
	Events     int              `json:"events"`
	State      string           `json:"state"`
	Attempts   int              `json:"attempts"`
	NextAt     *time.Time       `json:"next_at"`
	Body       string           `json:"body,omitempty"`
	AttemptLog []WebhookAttempt `json:"attempt_log,omitempty"`
}

// WebhookAttempt is one delivery attempt of a message.
type WebhookAttempt struct {
	N         int       `json:"n"`
	At        time.Time `json:"at"`
	Status    int       `json:"status"` // 0: no answer
	LatencyMS float64   `json:"latency_ms"`
	Body      string    `json:"body"`
	Error     string    `json:"error,omitempty"`
}

// Bounds the API sets on an endpoint (shortener/webhook's), checked here
// only to spare a request: the API judges every value.
var webhookTypes = []string{"link.created", "link.updated", "link.revoked", "link.expired", "link.max_clicks_reached",
	"click", "ratelimit.exceeded", "ratelimit.ban_set", "ratelimit.threshold"}

const (
	maxWebhookBatch     = 1000
	maxWebhookBatchWait = time.Minute
	maxWebhookGrace     = 7 * 24 * time.Hour
	maxWebhookMessages  = 200 // a page of messages
)

// mergePatch is the Content-Type of a PATCH: a JSON Merge Patch.
var mergePatch = http.Header{"Content-Type": {"application/merge-patch+json"}}

// sendAndPrint sends req as JSON (nil: no body) with method and hdr to path
// and prints the answer with print.
func sendAndPrint[T any](cmd *cobra.Command, g *globals, method, path string, req any, hdr http.Header,
	print func(*cobra.Command, *raw[T]) error) error {
	c, err := g.client()
	if err != nil {
		return err
	}
	var body []byte
	if req != nil {
		body, _ = json.Marshal(req)
	}
	var v raw[T]
	if _, err := c.getJSON(ctxOf(cmd), method, path, nil, body, hdr, &v); err != nil {
		return err
	}
	return print(cmd, &v)
}

// raw is a value with the JSON it was read from, printed as is by --json.
type raw[T any] struct {
	v   T
	raw json.RawMessage
}

func (r *raw[T]) UnmarshalJSON(b []byte) error {
	r.raw = append(r.raw[:0], b...)
	return json.Unmarshal(b, &r.v)
}

// webhookPath is the path of one endpoint's resource (the id
// path-escaped).
func webhookPath(id string, rest ...string) string {
	return "/webhooks/" + url.PathEscape(id) + strings.Join(rest, "")
}

// state is an endpoint's state as list shows it: enabled, or disabled
// and why.
func (w *Webhook) state() string {
	switch {
	case !w.Disabled:
		return "enabled"
	case w.DisabledReason != "":
		return "disabled (" + w.DisabledReason + ")"
	}
	return "disabled"
}

// keys says how many keys sign and until when the rotated-out ones do.
func (w *Webhook) keys() string {
	var until []string
	for _, k := range w.Keys {
		if k.Until != nil {
			until = append(until, cellTime(k.Until))
		}
	}
	if len(until) == 0 {
		return strconv.Itoa(len(w.Keys))
	}
	return fmt.Sprintf("%d (rotated out, signing until %s)", len(w.Keys), strings.Join(until, ", "))
}
