package linktest

import (
	"testing"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
)

// The suite sees a store only through link's contracts and the Harness:
// it imports link and nothing else of this module, so any store (and the
// stores' own tests) may run it.
func TestImportsOnlyLink(t *testing.T) {
	testenv.LibraryDeps(t, "github.com/edgekit/caddy-edgekit/shortener/link")
}
