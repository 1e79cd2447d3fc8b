package cli

import (
	"testing"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
)

// The CLI talks to a server over its API only: of this module it imports
// the link's wire shapes and nothing of the server.
func TestImportsOnlyLink(t *testing.T) {
	testenv.ModuleDeps(t, "github.com/edgekit/caddy-edgekit/shortener/link")
}
