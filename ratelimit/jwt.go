package ratelimit

import (
	"cmp"
	"errors"
	"fmt"
	"net/textproto"
	"slices"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"go.uber.org/zap"

	"github.com/edgekit/caddy-edgekit/internal/cfparse"
	"github.com/edgekit/caddy-edgekit/ratelimit/jwtkey"
)

// JWTKey verifies the request's bearer token, so that zones key on its
// claims: `{http.ratelimit.jwt.sub}` and `{http.ratelimit.jwt.claim.<name>}`
// (a top-level claim that is a string, a number as the token writes it, or
// `true`/`false`). A token is verified once per request, when the first
// template reading these placeholders is about to be expanded (a request
// no such zone applies to is not asked for one); a token seen before is
// answered from a cache of 10,000 (its times checked again). A missing or
// invalid token never gets a quota of its own: see `on_invalid`.
//
// Refused as invalid: a token longer than 8 KiB or not three base64url
// parts; an `alg` not accepted (`none` never is); no key of the token's
// `kid` whose type suits its `alg` (a public key is never used as an HMAC
// secret; without a `kid`, the set's only key of the type); a bad
// signature; `exp`, `nbf` or `iat` off by more than `leeway`; a wrong
// `iss` or `aud`; a `sub` or a claim a template reads that is not a
// string, number or boolean of at most 256 bytes, or that starts with
// `unverified:`. A verified token without the claim a template reads
// expands it to the empty string: all such tokens share one quota.
type JWTKey struct {
	// A JWKS document on disk (at most 1 MiB and 100 keys), read at load
	// (a load fails if it cannot be read) and again every `refresh`.
	JWKSFile string `json:"jwks_file,omitempty"`

	// A JWKS URL (https only), fetched at load and every `refresh` in the
	// background (10 s timeout, 1 MiB, 100 keys); a failed fetch keeps
	// the last keys fetched and is logged. A token whose `kid` the set
	// lacks fetches it again at once, at most every 10 s, so a rotated
	// key is picked up without waiting. One of `jwks_file`, `jwks_url`
	// or `secret` is required; `secret` combines with either.
	JWKSURL string `json:"jwks_url,omitempty"`

	// The HMAC key of HS256/384/512 tokens, at least 32 bytes (48 for
	// HS384, 64 for HS512). Placeholders such as `{env.JWT_SECRET}` are
	// expanded once at load. Never logged.
	Secret string `json:"secret,omitempty"`

	// How often the JWKS is loaded again, at least `1s`. Default: `5m`.
	Refresh caddy.Duration `json:"refresh,omitempty"`

	// When set, the token's `iss` must equal it.
	Issuer string `json:"issuer,omitempty"`

	// When set, the token's `aud` must hold one of them.
	Audience []string `json:"audience,omitempty"`

	// The clock skew allowed on `exp`, `nbf` and `iat`, 0-5m. Default: `30s`.
	Leeway *caddy.Duration `json:"leeway,omitempty"`

	// The accepted `alg` values. Default: `RS256 RS384 RS512 PS256 PS384
	// PS512 ES256 ES384 ES512 EdDSA` with a JWKS, and `HS256` (`HS384`,
	// `HS512`) with a `secret` long enough. `none` is never accepted.
	Algorithms []string `json:"algorithms,omitempty"`

	// The request header carrying the token. `Authorization` (the
	// default) holds `Bearer <token>` (the scheme in any case); another
	// header holds the bare token. A header sent twice is an invalid token.
	Header string `json:"header,omitempty"`

	// What a request without a valid token gets: `refuse` answers 401
	// with `WWW-Authenticate: Bearer` (`Bearer error="invalid_token"` for
	// an invalid one), nothing charged; `client` keys it on the client's
	// network instead: every jwt placeholder expands to
	// `unverified:<client_network>` (such as `unverified:203.0.113.7/32`),
	// which no verified claim can equal. Default: `refuse`.
	OnInvalid string `json:"on_invalid,omitempty"`

	verifier *jwtkey.Verifier
	header   string   // canonical Header
	bearer   bool     // Authorization: `Bearer <token>`
	client   bool     // on_invalid client
	claims   []string // the claims the handler's templates read
	pos      *cfparse.Positions
}

// JWT defaults and names.
const (
	DefaultJWTHeader = "Authorization"
	jwtRefuse        = "refuse"
	jwtClient        = "client"
	// jwtUnverified starts every jwt placeholder of an unverified request
	// (on_invalid client); a claim starting with it is invalid.
	jwtUnverified = "unverified:"

	jwtPlaceholder      = "http.ratelimit.jwt."
	jwtSubPlaceholder   = jwtPlaceholder + "sub"
	jwtClaimPlaceholder = jwtPlaceholder + "claim."
)

// unmarshalJWT reads `jwt { ... }`.
func (h *Handler) unmarshalJWT(d *caddyfile.Dispenser) error {
	if d.NextArg() {
		return d.ArgErr()
	}
	j := &JWTKey{pos: cfparse.NewPositions(d)}
	if err := jwtBlock.Parse(d, j); err != nil {
		return err
	}
	j.pos.Ended(d)
	h.JWT = j
	return nil
}

// jwtBlock is the subdirectives of `jwt { ... }`.
var jwtBlock = cfparse.Block[JWTKey]{
	Prefix: func(*JWTKey) string { return "jwt: " },
	Each:   func(j *JWTKey, d *caddyfile.Dispenser) { j.pos.Field(d) },
	Subdirectives: cfparse.Table[JWTKey]{
		"jwks_file":  oneString(func(j *JWTKey) *string { return &j.JWKSFile }),
		"jwks_url":   oneString(func(j *JWTKey) *string { return &j.JWKSURL }),
		"secret":     oneString(func(j *JWTKey) *string { return &j.Secret }),
		"issuer":     oneString(func(j *JWTKey) *string { return &j.Issuer }),
		"header":     oneString(func(j *JWTKey) *string { return &j.Header }),
		"on_invalid": oneString(func(j *JWTKey) *string { return &j.OnInvalid }),
		"refresh": func(j *JWTKey, d *caddyfile.Dispenser) error {
			dur, err := cfparse.PositiveDurationArg(d)
			j.Refresh = caddy.Duration(dur)
			return err
		},
		"leeway": func(j *JWTKey, d *caddyfile.Dispenser) error {
			v, err := cfparse.OneArg(d)
			if err != nil {
				return err
			}
			dur, err := cfparse.Duration(d, "leeway", v)
			j.Leeway = (*caddy.Duration)(&dur)
			return err
		},
		"audience": func(j *JWTKey, d *caddyfile.Dispenser) (err error) {
			j.Audience, err = cfparse.Args(d)
			return err
		},
		"algorithms": func(j *JWTKey, d *caddyfile.Dispenser) (err error) {
			j.Algorithms, err = cfparse.Args(d)
			return err
		},
	},
}

// oneString reads the one argument of a subdirective into the field at.
func oneString(at func(*JWTKey) *string) func(*JWTKey, *caddyfile.Dispenser) error {
	return func(j *JWTKey, d *caddyfile.Dispenser) (err error) {
		*at(j), err = cfparse.OneArg(d)
		return err
	}
}

// validate checks the jwt block; the error has the Caddyfile line of the
// field it is about, when known.
func (j *JWTKey) validate() error { return j.wrap(j.check()) }

// wrap prefixes err with `jwt: ` and adds the Caddyfile line of the field
// it is about, when known.
func (j *JWTKey) wrap(err error) error {
	if err == nil {
		return nil
	}
	field := ruleField(err)
	var oe *jwtkey.OptionError
	if errors.As(err, &oe) {
		field = oe.Option
	}
	return j.pos.Of(field).Wrap(fmt.Errorf("jwt: %w", err))
}

func (j *JWTKey) check() error {
	switch {
	case j.OnInvalid != "" && j.OnInvalid != jwtRefuse && j.OnInvalid != jwtClient:
		return onField("on_invalid", fmt.Errorf("invalid on_invalid '%s': must be refuse or client", j.OnInvalid))
	case j.Header != "" && !validHeaderName(j.Header):
		return onField("header", fmt.Errorf("invalid header '%s': not a header field name", j.Header))
	case j.Refresh < 0:
		return onField("refresh", errors.New("refresh must be > 0"))
	}
	secret := j.Secret
	if strings.Contains(secret, "{") { // judged once expanded, at provision
		secret = strings.Repeat("s", 64)
	}
	opts := j.options([]byte(secret))
	return opts.Check()
}

// validHeaderName reports whether s is a header field name (an RFC 9110 token).
func validHeaderName(s string) bool {
	return s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return r <= ' ' || r >= 0x7f || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r)
	})
}

// options are the verifier's options with secret (expanded).
func (j *JWTKey) options(secret []byte) jwtkey.Options {
	leeway := jwtkey.DefaultLeeway
	if j.Leeway != nil {
		leeway = time.Duration(*j.Leeway)
	}
	return jwtkey.Options{JWKSFile: j.JWKSFile, JWKSURL: j.JWKSURL, Secret: secret, Issuer: j.Issuer,
		Audience: j.Audience, Leeway: leeway, Algorithms: j.Algorithms, Refresh: time.Duration(j.Refresh),
		Claims: j.claims, ReservedPrefix: jwtUnverified}
}

// provision builds the verifier, loads its JWKS (a jwks_file that cannot
// be read fails the load; a jwks_url that does not answer is logged) and
// starts its refresh. claims: the claims the handler's templates read.
func (j *JWTKey) provision(ctx caddy.Context, logger *zap.Logger, claims []string) error {
	j.header = textproto.CanonicalMIMEHeaderKey(cmp.Or(j.Header, DefaultJWTHeader))
	j.bearer = j.header == DefaultJWTHeader
	j.client = j.OnInvalid == jwtClient
	j.claims = claims
	opts := j.options([]byte(caddy.NewReplacer().ReplaceKnown(j.Secret, "")))
	opts.OnRefresh = func(changed bool, err error) {
		switch {
		case err != nil:
			metrics.jwksFailures.Inc()
			logger.Warn("loading the JWKS failed; the last keys loaded stay", zap.Error(err))
		case changed:
			logger.Info("JWKS loaded")
		}
	}
	v, err := jwtkey.New(opts) // the secret judged once expanded
	if err != nil {
		return j.wrap(err)
	}
	if err := v.Load(ctx); err != nil && j.JWKSURL == "" {
		return j.pos.Of("jwks_file").Wrap(fmt.Errorf("jwt: %w", err))
	}
	v.Start(ctx)
	j.verifier = v
	return nil
}

// cleanup stops the JWKS refresh.
func (j *JWTKey) cleanup() {
	if j != nil && j.verifier != nil {
		j.verifier.Stop()
	}
}

// jwtReads lists what the templates read of the jwt placeholders: whether
// any does, and the claim names. err: a jwt placeholder that is neither
// `sub` nor `claim.<name>`.
func jwtReads(tmpls []string) (reads bool, claims []string, err error) {
	for _, t := range tmpls {
		for rest := t; ; {
			i := strings.Index(rest, "{"+jwtPlaceholder)
			if i < 0 {
				break
			}
			rest = rest[i+1:]
			name, _, _ := strings.Cut(rest, "}")
			reads = true
			switch claim, ok := strings.CutPrefix(name, jwtClaimPlaceholder); {
			case name == jwtSubPlaceholder:
			case ok && claim != "":
				if !slices.Contains(claims, claim) {
					claims = append(claims, claim)
				}
			default:
				return reads, claims, fmt.Errorf("unknown placeholder {%s}: want {%s} or {%s<name>}", name, jwtSubPlaceholder, jwtClaimPlaceholder)
			}
		}
	}
	return reads, claims, nil
}
