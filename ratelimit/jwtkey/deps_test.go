package jwtkey

import (
	"testing"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
)

// The verifier is a library below the module: it imports nothing of Caddy,
// zap or this module.
func TestImportsNoCaddyZapOrModule(t *testing.T) {
	testenv.LibraryDeps(t)
}
