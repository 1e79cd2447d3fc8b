package codefilter

import (
	"testing"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
)

// The code filter's parts are a library below the module: they import
// nothing of Caddy or zap, and of this module only the link model.
func TestImportsNoCaddyZapOrModule(t *testing.T) {
	testenv.LibraryDeps(t, "github.com/edgekit/caddy-edgekit/shortener/link")
}
