package store

import (
	"testing"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
)

// The stores are a library below the module: they import nothing of Caddy
// or zap, and of this module only the link model, the click contracts and
// the webhook model (with the URL policy it uses).
func TestImportsNoCaddyZapOrModule(t *testing.T) {
	testenv.LibraryDeps(t, "github.com/edgekit/caddy-edgekit/shortener/link", "github.com/edgekit/caddy-edgekit/shortener/clicks",
		"github.com/edgekit/caddy-edgekit/shortener/webhook", "github.com/edgekit/caddy-edgekit/shortener/urlpolicy")
}
