package testenv

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// modulePath is this module; a library names the packages of it that it
// may import with their full paths.
const modulePath = "github.com/edgekit/caddy-edgekit/"

// LibraryDeps fails the test when the package in the current directory
// depends, directly or not, on Caddy, zap, or a package of this module
// other than those in allowed. go list resolves the imports the compiler
// uses, test files left out, so a library's layer cannot erode: each
// library package's deps_test.go calls it.
func LibraryDeps(t *testing.T, allowed ...string) {
	t.Helper()
	checkDeps(t, true, allowed)
}

// ModuleDeps fails the test when the package in the current directory
// depends on a package of this module other than those in allowed; Caddy
// and zap may be imported (the CLI registers Caddy commands).
func ModuleDeps(t *testing.T, allowed ...string) {
	t.Helper()
	checkDeps(t, false, allowed)
}

func checkDeps(t *testing.T, library bool, allowed []string) {
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
		switch {
		case library && (strings.HasPrefix(pkg, "github.com/caddyserver/") || strings.HasPrefix(pkg, "go.uber.org/zap")):
			t.Errorf("%s depends on %s", self, pkg)
		case strings.HasPrefix(pkg, modulePath) && !slices.Contains(allowed, pkg):
			t.Errorf("%s depends on %s, a package of this module it may not import", self, pkg)
		}
	}
}
