package limiter

import (
	"os/exec"
	"strings"
	"testing"
)

// The limiter is a library below the module: it imports nothing of Caddy,
// zap or the module (the module imports it, never the reverse), so that
// the layer cannot erode. go list resolves the imports the compiler uses.
func TestImportsNoCaddyZapOrModule(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	const self = "github.com/edgekit/caddy-edgekit/ratelimit/limiter"
	forbidden := []string{
		"github.com/caddyserver/",
		"go.uber.org/zap",
		"github.com/edgekit/caddy-edgekit/",
	}
	n := 0
	for _, pkg := range strings.Fields(string(out)) {
		n++
		if pkg == self {
			continue
		}
		for _, f := range forbidden {
			if strings.HasPrefix(pkg, f) {
				t.Errorf("the limiter depends on %s", pkg)
			}
		}
	}
	if n < 2 {
		t.Fatalf("go list -deps listed %d packages: %s", n, out)
	}
}
