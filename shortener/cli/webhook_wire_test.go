package cli

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/webhook"
	"github.com/edgekit/caddy-edgekit/shortener/webhookapi"
)

// The CLI's copies of the webhook API's shapes and bounds (webhook.go)
// agree with the server's: every field the server writes is read back
// whole, and the known types and bounds are the server's.
func TestWebhookWireMatchesServer(t *testing.T) {
	at := time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC)
	for name, tc := range map[string]struct {
		server any
		cli    any
	}{
		"endpoint": {webhookapi.EndpointResponse{ID: "ep_1", URL: "https://example.com/in", Description: "d", Types: []string{"click"},
			Tags: []string{"t"}, Codes: []string{"c"}, Disabled: true, DisabledReason: "r", Batch: 2, BatchWaitMS: 3,
			Keys: []webhookapi.KeyResponse{{}, {Until: &at}}, CreatedAt: at, UpdatedAt: at, Version: 4, Secret: "whsec_x"}, &Webhook{}},
		"message": {webhookapi.MessageResponse{ID: "msg_1", Type: "click", At: at, Events: 1, State: "pending", Attempts: 2, NextAt: &at},
			&WebhookMessage{}},
		"attempt": {webhookapi.AttemptResponse{N: 1, At: at, Status: 500, LatencyMS: 1.5, Body: "b", Error: "e"}, &WebhookAttempt{}},
	} {
		want, _ := json.Marshal(tc.server)
		dec := json.NewDecoder(bytes.NewReader(want))
		dec.DisallowUnknownFields()
		if err := dec.Decode(tc.cli); err != nil {
			t.Errorf("%s: the CLI cannot read %s: %v", name, want, err)
			continue
		}
		if got, _ := json.Marshal(tc.cli); !bytes.Equal(got, want) {
			t.Errorf("%s: read back as %s, want %s", name, got, want)
		}
	}
	if !slices.Equal(webhookTypes, webhook.EventTypes) {
		t.Errorf("webhookTypes = %v, want webhook.EventTypes %v", webhookTypes, webhook.EventTypes)
	}
	if maxWebhookBatch != webhook.MaxBatch || maxWebhookBatchWait != webhook.MaxBatchWait ||
		maxWebhookGrace != webhookapi.MaxGraceSeconds*time.Second || maxWebhookMessages != webhookapi.MaxMessages {
		t.Errorf("bounds differ from the server's")
	}
}
