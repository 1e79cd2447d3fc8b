package ratelimit

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/edgekit/caddy-edgekit/ratelimit/jwtkey"
)

// validateJWT checks that the jwt placeholders the templates read are
// known, and that they are read when and only when a jwt block verifies
// the token.
func (h *Handler) validateJWT() error {
	errNoBlock := errors.New("a template reads {http.ratelimit.jwt.*}: the jwt block that verifies the token is required")
	reads := false
	for _, z := range h.Zones {
		r, _, err := jwtReads(z.templates())
		if err == nil && r && h.JWT == nil {
			err = errNoBlock
		}
		if err != nil {
			return z.pos.Of("key").Wrap(fmt.Errorf("zone %q: %w", z.Name, err))
		}
		reads = reads || r
	}
	tag, _, err := jwtReads([]string{h.HashTag})
	if err == nil && tag && h.JWT == nil {
		err = errNoBlock
	}
	if err != nil {
		return h.pos.Of("hash_tag").Wrap(fmt.Errorf("hash_tag: %w", err))
	}
	switch {
	case !reads && !tag && h.JWT != nil:
		return h.pos.Of("jwt").Wrap(errors.New("jwt: no key, cost, hash_tag, plan_key or quota template reads {http.ratelimit.jwt.*}"))
	case h.JWT != nil:
		return h.JWT.validate()
	}
	return nil
}

// provisionJWT marks the zones (and the hash tag) whose templates read
// the jwt placeholders, and sets up the verifier.
func (h *Handler) provisionJWT(ctx caddy.Context) error {
	if h.JWT == nil {
		return nil
	}
	h.jwtTag, _, _ = jwtReads([]string{h.HashTag}) // validated
	for _, z := range h.Zones {
		z.readsJWT, _, _ = jwtReads(z.templates())
	}
	_, claims, _ := jwtReads(h.templates())
	return h.JWT.provision(ctx, h.logger, claims)
}

// jwtResult is a token's verdict: the `result` label of
// caddy_ratelimit_jwt_tokens_total.
type jwtResult uint8

const (
	jwtValid jwtResult = iota
	jwtInvalid
	jwtMissing
	numJWTResults
)

var jwtResultNames = [numJWTResults]string{"valid", "invalid", "missing"}

// jwtRefusal is a request refused for its token (on_invalid refuse).
type jwtRefusal struct {
	missing bool
	err     error
}

func (e *jwtRefusal) Error() string {
	if e.missing {
		return "no bearer token"
	}
	return e.err.Error()
}

func (e *jwtRefusal) Unwrap() error { return e.err }

// setJWT verifies r's token and sets the jwt placeholders: the verified
// claims, or, for a missing or invalid token under on_invalid client,
// `unverified:<client network>` for every one of them. Under on_invalid
// refuse it returns a *jwtRefusal instead.
func (h *Handler) setJWT(r *http.Request, repl *caddy.Replacer) error {
	j := h.JWT
	token, result, err := j.token(r)
	var c *jwtkey.Claims
	if result == jwtValid {
		if c, err = j.verifier.Verify(token, h.now()); err != nil {
			result = jwtInvalid
		}
	}
	metrics.jwtTokens[result].Inc()
	if c != nil {
		repl.Set(jwtSubPlaceholder, c.Subject)
		for _, name := range j.claims {
			v, _ := c.Claim(name)
			repl.Set(jwtClaimPlaceholder+name, v)
		}
		repl.Map(func(key string) (any, bool) { // the claims no template reads
			name, ok := strings.CutPrefix(key, jwtClaimPlaceholder)
			if !ok {
				return nil, false
			}
			v, _ := c.Claim(name)
			return v, true
		})
		return nil
	}
	if ce := h.logger.Check(zapcore.DebugLevel, "bearer token not accepted"); ce != nil {
		ce.Write(zap.String("result", jwtResultNames[result]), zap.Error(err))
	}
	if !j.client {
		return &jwtRefusal{missing: result == jwtMissing, err: err}
	}
	val := jwtUnverified + h.clientNetworkOf(r)
	repl.Set(jwtSubPlaceholder, val)
	for _, name := range j.claims {
		repl.Set(jwtClaimPlaceholder+name, val)
	}
	repl.Map(func(key string) (any, bool) {
		return val, strings.HasPrefix(key, jwtPlaceholder)
	})
	return nil
}

// token is r's token: jwtValid when there is one to verify, jwtMissing
// when there is none (no header, or an Authorization of another scheme),
// jwtInvalid with the reason when the header is sent more than once.
func (j *JWTKey) token(r *http.Request) (string, jwtResult, error) {
	vals := r.Header[j.header]
	switch {
	case len(vals) == 0:
		return "", jwtMissing, nil
	case len(vals) > 1:
		return "", jwtInvalid, fmt.Errorf("%w: header %s sent %d times", jwtkey.ErrInvalid, j.header, len(vals))
	}
	v := vals[0]
	if j.bearer {
		const scheme = "bearer "
		if len(v) < len(scheme) || !strings.EqualFold(v[:len(scheme)], scheme) {
			return "", jwtMissing, nil
		}
		v = v[len(scheme):]
	}
	v = strings.Trim(v, " \t")
	if v == "" {
		return "", jwtMissing, nil
	}
	return v, jwtValid, nil
}

// jwtProblem is the RFC 9457 body of a 401 the handler writes (`body problem`).
const jwtProblem = `{"type":"about:blank","title":"Unauthorized","status":401,"detail":"A valid bearer token is required."}`

// refuseJWT answers 401 for a missing or invalid token, with its RFC 6750
// challenge; nothing was charged.
func (h *Handler) refuseJWT(w http.ResponseWriter, r *http.Request, jr *jwtRefusal) error {
	challenge := `Bearer error="invalid_token"`
	if jr.missing {
		challenge = "Bearer"
	}
	hdr := w.Header()
	hdr["Www-Authenticate"] = []string{challenge}
	if h.direct.Writes(r) {
		if h.Body == bodyProblem {
			hdr["Content-Type"] = []string{"application/problem+json"}
			hdr["Content-Length"] = []string{strconv.Itoa(len(jwtProblem))}
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(jwtProblem))
			return nil
		}
		w.WriteHeader(http.StatusUnauthorized)
		return nil
	}
	return caddyhttp.Error(http.StatusUnauthorized, jr)
}
