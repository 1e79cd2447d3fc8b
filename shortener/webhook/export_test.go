package webhook

import (
	"net/http"
	"testing"
)

// VerifyWithStandardWebhooks verifies each message (its headers and body)
// under secret with the npm standardwebhooks package, for the tests of
// webhook_test; it reports which verify, and the library's error of
// those that do not.
func VerifyWithStandardWebhooks(t *testing.T, secret Secret, headers []http.Header, bodies [][]byte) []string {
	t.Helper()
	node, dir := needStandardWebhooks(t)
	cases := make([]interopCase, len(headers))
	for i := range headers {
		cases[i] = interopCase{op: "verify", secret: secret, headers: headers[i], body: bodies[i]}
	}
	out := make([]string, len(cases))
	for i, r := range runStandardWebhooks(t, node, dir, cases) {
		if !r.OK {
			out[i] = r.Error
		}
	}
	return out
}
