package targeting

import (
	"testing"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
)

// Targeting is decided in the proxy at redirect time and judged where a
// link is saved: it imports only the standard library, nothing of Caddy,
// zap or this module.
func TestImportsNoCaddyZapOrModule(t *testing.T) {
	testenv.LibraryDeps(t)
}
