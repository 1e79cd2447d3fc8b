package limiter

import (
	"testing"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
)

// The limiter is a library below the module: it imports nothing of Caddy,
// zap or this module (the module imports it, never the reverse).
func TestImportsNoCaddyZapOrModule(t *testing.T) {
	testenv.LibraryDeps(t)
}
