package webhook

import (
	"testing"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
)

// The webhook package is a library below the module: it imports nothing
// of Caddy or zap, and of this module only the URL policy and the link
// model (the outbox it reads).
func TestImportsNoCaddyZapOrModule(t *testing.T) {
	testenv.LibraryDeps(t, "github.com/edgekit/caddy-edgekit/shortener/urlpolicy", "github.com/edgekit/caddy-edgekit/shortener/link")
}
