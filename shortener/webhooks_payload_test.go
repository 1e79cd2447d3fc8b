package shortener

import (
	"testing"

	"github.com/edgekit/caddy-edgekit/internal/openapitest"
)

// checkWebhookPayload validates a message's body against the schema the
// document's webhooks section gives its type.
func checkWebhookPayload(t testing.TB, typ string, body []byte) {
	t.Helper()
	openapitest.CheckWebhookPayload(t, openAPIDocument, typ, body)
}
