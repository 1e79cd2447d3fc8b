package domainapi

import (
	"testing"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
)

// The domains API is a library below the module.
func TestImportsNoCaddyZapOrModule(t *testing.T) {
	testenv.LibraryDeps(t, "github.com/edgekit/caddy-edgekit/shortener/link", "github.com/edgekit/caddy-edgekit/shortener/urlpolicy")
}
