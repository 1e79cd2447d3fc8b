package edgekit

import (
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddytest"
)

// newCaddyTester is a caddytest.Tester on the admin port admin, with the
// timeouts of these tests: 30 s to load a config (a cold machine
// provisions slowly), 10 s per request.
func newCaddyTester(t *testing.T, admin int) *caddytest.Tester {
	t.Helper()
	return caddytest.NewTester(t).WithDefaultOverrides(caddytest.Config{
		AdminPort: admin, LoadRequestTimeout: 30 * time.Second, TestRequestTimeout: 10 * time.Second,
	})
}
