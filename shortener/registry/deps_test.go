package registry

import (
	"testing"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
)

// The registry is a library below the module.
func TestImportsNoCaddyZapOrModule(t *testing.T) {
	testenv.LibraryDeps(t, "github.com/edgekit/caddy-edgekit/shortener/link", "github.com/edgekit/caddy-edgekit/shortener/store",
		"github.com/edgekit/caddy-edgekit/shortener/clicks", "github.com/edgekit/caddy-edgekit/shortener/webhook",
		"github.com/edgekit/caddy-edgekit/shortener/urlpolicy")
}
