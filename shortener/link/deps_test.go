package link

import (
	"testing"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
)

// The link model is the bottom of the shortener's libraries: it imports
// nothing of Caddy, zap or this module (urlpolicy, clicks and store
// included).
func TestImportsNoCaddyZapOrModule(t *testing.T) {
	testenv.LibraryDeps(t)
}
