package testenv

import (
	"os/exec"
	"strings"
	"testing"
)

// ForbidDeps fails the test when the package in the current directory
// depends, directly or not, on a package whose path starts with one of
// forbidden (the package itself excepted). go list resolves the imports
// the compiler uses, test files left out, so a library's layer cannot
// erode: each library package's deps_test.go calls it.
func ForbidDeps(t *testing.T, forbidden ...string) {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}{{range .Deps}} {{.}}{{end}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	fields := strings.Fields(string(out))
	if len(fields) < 2 {
		t.Fatalf("go list listed %d packages: %s", len(fields), out)
	}
	self, deps := fields[0], fields[1:]
	for _, pkg := range deps {
		for _, f := range forbidden {
			if strings.HasPrefix(pkg, f) && pkg != self {
				t.Errorf("%s depends on %s", self, pkg)
			}
		}
	}
}

// Library prefixes no library package below a module may import.
const (
	CaddyPrefix = "github.com/caddyserver/"
	ZapPrefix   = "go.uber.org/zap"
	// ModulePrefix is this module; a library names the sibling packages it
	// must not reach with ModulePrefix + "shortener/…".
	ModulePrefix = "github.com/edgekit/caddy-edgekit/"
)
