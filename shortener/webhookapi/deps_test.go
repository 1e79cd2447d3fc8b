package webhookapi

import (
	"testing"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
)

// The webhook API is a library below the module: it imports nothing of
// Caddy or zap, and of this module only the webhook and link models, the
// URL policy they use, and strict JSON decoding.
func TestImportsNoCaddyZapOrModule(t *testing.T) {
	testenv.LibraryDeps(t, "github.com/edgekit/caddy-edgekit/shortener/webhook", "github.com/edgekit/caddy-edgekit/shortener/link",
		"github.com/edgekit/caddy-edgekit/shortener/urlpolicy", "github.com/edgekit/caddy-edgekit/internal/strictjson")
}
