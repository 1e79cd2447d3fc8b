package ratelimit

import (
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
)

// TestJWTE2E loads a jwt block into a real Caddy: a valid token passes and
// its subject reaches the next handler's placeholders; no token gets 401
// with `WWW-Authenticate: Bearer`, a bad one `Bearer error="invalid_token"`;
// the server has error routes (another site's handle_errors, which shapes
// its own 401s with the challenge kept), so the 401 is returned as an error,
// without the problem body, as a 429 would be.
func TestJWTE2E(t *testing.T) {
	k := testJWTKeys(t)
	_, prefix := testenv.Redis(t)
	block := fmt.Sprintf(`ratelimit {
		jwt {
			jwks_file %s
			issuer %s
			audience %s
		}
		zone per_sub {
			key {http.ratelimit.jwt.sub}
			events 100
			window 1m
		}
		redis {
			url %s
			key_prefix %s
		}
		timeout 2s
		body problem
	}`, k.jwksFile(t), testIssuer, testAudience, testenv.RedisURL(t), prefix)
	tester, port := startCaddy(t, "", fmt.Sprintf(`
http://localhost:$PORT {
	%s
	respond "sub={http.ratelimit.jwt.sub} tenant={http.ratelimit.jwt.claim.tenant}"
}

http://127.0.0.1:$PORT {
	%s
	respond 200
	handle_errors 401 {
		respond "shaped {err.status_code}" 401
	}
}
`, block, block))
	send := func(auth string) (int, string, string) {
		t.Helper()
		return sendTo(t, tester.Client, fmt.Sprintf("http://localhost:%d/", port), auth)
	}
	tok := k.rs256(t, jwtClaims("alice", map[string]any{"tenant": "acme"}))
	if st, _, body := send("bearer " + tok); st != http.StatusOK || body != "sub=alice tenant=acme" {
		t.Errorf("valid token: %d %q, want 200 %q", st, body, "sub=alice tenant=acme")
	}
	if st, ch, _ := send(""); st != http.StatusUnauthorized || ch != "Bearer" {
		t.Errorf("no token: %d %q, want 401 Bearer", st, ch)
	}
	st, ch, body := send("Bearer " + tok[:len(tok)-4] + "AAAA")
	if st != http.StatusUnauthorized || ch != `Bearer error="invalid_token"` || body != "" {
		t.Errorf("bad signature: %d %q %q, want 401 invalid_token, no body", st, ch, body)
	}
	st, ch, body = sendTo(t, tester.Client, fmt.Sprintf("http://127.0.0.1:%d/", port), "Bearer x.y.z")
	if st != http.StatusUnauthorized || ch != `Bearer error="invalid_token"` || body != "shaped 401" {
		t.Errorf("with handle_errors: %d %q %q, want 401 invalid_token shaped", st, ch, body)
	}
}

// sendTo sends GET url with the Authorization auth (none if empty): the
// status, the WWW-Authenticate challenge and the body.
func sendTo(t *testing.T, c *http.Client, url, auth string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header.Get("WWW-Authenticate"), string(body)
}
