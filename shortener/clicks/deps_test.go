package clicks

import (
	"testing"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
)

// The click pipeline is a library below the module: it imports nothing of
// Caddy or zap, and of this module only the link model.
func TestImportsNoCaddyZapOrModule(t *testing.T) {
	testenv.LibraryDeps(t, "github.com/edgekit/caddy-edgekit/shortener/link")
}
