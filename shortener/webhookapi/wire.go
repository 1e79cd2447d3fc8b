package webhookapi

import (
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/link"
	"github.com/edgekit/caddy-edgekit/shortener/webhook"
)

// EndpointRequest is the body of POST <api>/webhooks: url and types are
// required.
type EndpointRequest struct {
	URL         string   `json:"url"`
	Description string   `json:"description,omitempty"`
	Types       []string `json:"types"`
	Tags        []string `json:"tags,omitempty"`
	Codes       []string `json:"codes,omitempty"`
	Disabled    bool     `json:"disabled,omitempty"`
	Batch       int      `json:"batch,omitempty"`
	BatchWaitMS int64    `json:"batch_wait_ms,omitempty"`
}

// EndpointResponse is an endpoint as the API shows it: never its secrets
// (Secret only in the answers of create and rotate).
type EndpointResponse struct {
	ID             string        `json:"id"`
	URL            string        `json:"url"`
	Description    string        `json:"description"`
	Types          []string      `json:"types"`
	Tags           []string      `json:"tags"`
	Codes          []string      `json:"codes"`
	Disabled       bool          `json:"disabled"`
	DisabledReason string        `json:"disabled_reason,omitempty"`
	Batch          int           `json:"batch"`
	BatchWaitMS    int64         `json:"batch_wait_ms"`
	Keys           []KeyResponse `json:"keys"`
	CreatedAt      time.Time     `json:"created_at"`
	UpdatedAt      time.Time     `json:"updated_at"`
	Version        int64         `json:"version"`
	Secret         string        `json:"secret,omitempty"`
}

// KeyResponse is one signing key, without the secret: the current one
// (until null) or one rotated out and still signing until then.
type KeyResponse struct {
	Until *time.Time `json:"until"`
}

func responseOf(e webhook.Endpoint) EndpointResponse {
	out := EndpointResponse{ID: e.ID, URL: e.URL, Description: e.Description, Types: e.Types, Tags: orEmpty(e.Tags),
		Codes: orEmpty(e.Codes), Disabled: e.Disabled, DisabledReason: e.DisabledReason, Batch: e.Batch,
		BatchWaitMS: e.BatchWait.Milliseconds(), CreatedAt: e.CreatedAt.UTC(), UpdatedAt: e.UpdatedAt.UTC(),
		Version: e.Version, Keys: make([]KeyResponse, len(e.Keys))}
	for i, k := range e.Keys {
		out.Keys[i].Until = link.UTCOrNil(k.Until)
	}
	return out
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// MessageResponse is one message in a listing: its body only when read
// alone.
type MessageResponse struct {
	ID       string     `json:"id"`
	Type     string     `json:"type"`
	At       time.Time  `json:"at"`
	Events   int        `json:"events"`
	State    string     `json:"state"`
	Attempts int        `json:"attempts"`
	NextAt   *time.Time `json:"next_at"` // pending ones only
}

func messageOf(m webhook.Message) MessageResponse {
	out := MessageResponse{ID: m.ID, Type: m.Type, At: m.At.UTC(), Events: m.Events, State: string(m.State), Attempts: m.Attempts}
	if m.State == webhook.StatePending {
		out.NextAt = link.UTCOrNil(m.NextAt)
	}
	return out
}

// AttemptResponse is one attempt of a message.
type AttemptResponse struct {
	N         int       `json:"n"`
	At        time.Time `json:"at"`
	Status    int       `json:"status"` // 0: no answer
	LatencyMS float64   `json:"latency_ms"`
	Body      string    `json:"body"` // the answer's first 1 KiB, as text (invalid UTF-8 replaced)
	Error     string    `json:"error,omitempty"`
}
