package jwtkey

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4/jwt"
)

// asymmetric are the public-key algorithms accepted by default, with a JWKS.
var asymmetric = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// hmacMinLen is the shortest secret of each HMAC algorithm (RFC 7518 3.2:
// at least the hash's size).
var hmacMinLen = map[string]int{"HS256": 32, "HS384": 48, "HS512": 64}

// DefaultAlgorithms are the algorithms accepted when Options.Algorithms is
// empty: the public-key ones with a JWKS, and the HMAC ones the secret is
// long enough for.
func (o *Options) DefaultAlgorithms() []string {
	var algs []string
	if o.JWKSFile != "" || o.JWKSURL != "" {
		algs = append(algs, asymmetric...)
	}
	for _, a := range []string{"HS256", "HS384", "HS512"} {
		if len(o.Secret) > 0 && len(o.Secret) >= hmacMinLen[a] {
			algs = append(algs, a)
		}
	}
	return algs
}

// algorithms are the accepted algorithms.
func (o *Options) algorithms() []string {
	if len(o.Algorithms) > 0 {
		return o.Algorithms
	}
	return o.DefaultAlgorithms()
}

// OptionError is an error of Check about one option, named as in the
// Caddyfile (`jwks_url`, `secret`, `algorithms`...).
type OptionError struct {
	Option string
	Err    error
}

func (e *OptionError) Error() string { return e.Err.Error() }
func (e *OptionError) Unwrap() error { return e.Err }

// optionErr is err about option; nil stays nil.
func optionErr(option string, err error) error {
	if err == nil {
		return nil
	}
	return &OptionError{Option: option, Err: err}
}

// Check checks the options: a key source, an HTTPS jwks_url, a secret long
// enough, the algorithms (known, never `none`, each with a key), the
// leeway and the refresh interval. Errors are OptionErrors and never
// carry the secret.
func (o *Options) Check() error {
	if err := o.checkSources(); err != nil {
		return err
	}
	switch {
	case o.Leeway < 0 || o.Leeway > MaxLeeway:
		return optionErr("leeway", fmt.Errorf("invalid leeway %s: must be 0-%s", o.Leeway, MaxLeeway))
	case o.Refresh != 0 && o.Refresh < MinRefresh:
		return optionErr("refresh", fmt.Errorf("invalid refresh %s: must be at least %s", o.Refresh, MinRefresh))
	case o.CacheSize < 0:
		return optionErr("cache_size", fmt.Errorf("invalid cache size %d", o.CacheSize))
	}
	for _, a := range o.Audience {
		if a == "" {
			return optionErr("audience", errors.New("invalid audience: empty"))
		}
	}
	for _, a := range o.Algorithms {
		if err := o.checkAlgorithm(a); err != nil {
			return optionErr("algorithms", err)
		}
	}
	if len(o.algorithms()) == 0 {
		return optionErr("secret", errors.New("no algorithm has a key: the secret is shorter than 32 bytes"))
	}
	return nil
}

// checkSources checks where keys come from.
func (o *Options) checkSources() error {
	switch {
	case o.JWKSFile == "" && o.JWKSURL == "" && len(o.Secret) == 0:
		return optionErr("", errors.New("one of jwks_file, jwks_url or secret is required"))
	case o.JWKSFile != "" && o.JWKSURL != "":
		return optionErr("jwks_url", errors.New("jwks_file and jwks_url: use one"))
	case len(o.Secret) > 0 && len(o.Secret) < hmacMinLen["HS256"]:
		return optionErr("secret", fmt.Errorf("invalid secret: %d bytes, must be at least 32", len(o.Secret)))
	}
	if o.JWKSURL != "" {
		u, err := url.Parse(o.JWKSURL)
		if err != nil || u.Scheme != "https" || u.Host == "" {
			return optionErr("jwks_url", fmt.Errorf("invalid jwks_url '%s': must be an https:// URL", o.JWKSURL))
		}
	}
	return nil
}

// checkAlgorithm checks one configured algorithm.
func (o *Options) checkAlgorithm(a string) error {
	if strings.EqualFold(a, "none") {
		return errors.New("invalid algorithm 'none': unsigned tokens are never accepted")
	}
	if n, ok := hmacMinLen[a]; ok {
		if len(o.Secret) < n {
			return fmt.Errorf("algorithm %s needs a secret of at least %d bytes", a, n)
		}
		return nil
	}
	if !slices.Contains(asymmetric, a) {
		return fmt.Errorf("unknown algorithm '%s': want %s or HS256, HS384, HS512", a, strings.Join(asymmetric, ", "))
	}
	if o.JWKSFile == "" && o.JWKSURL == "" {
		return fmt.Errorf("algorithm %s needs jwks_file or jwks_url", a)
	}
	return nil
}

// check decodes a verified payload and checks its claims at now: the
// registered ones (iss, aud, exp, nbf, iat, matched by their exact names)
// and the bounds of those keyed on.
func (v *Verifier) check(raw []byte, now time.Time) (*Claims, *jwt.Claims, error) {
	var all map[string]json.RawMessage
	if err := json.Unmarshal(raw, &all); err != nil {
		return nil, nil, invalid("claims not a JSON object")
	}
	std, err := registered(all)
	if err != nil {
		return nil, nil, err
	}
	exp := jwt.Expected{Issuer: v.opts.Issuer, AnyAudience: v.opts.Audience, Time: now}
	if err := std.ValidateWithLeeway(exp, v.opts.Leeway); err != nil {
		switch {
		case errors.Is(err, jwt.ErrInvalidIssuer):
			return nil, nil, invalid("wrong issuer")
		case errors.Is(err, jwt.ErrInvalidAudience):
			return nil, nil, invalid("wrong audience")
		}
		return nil, nil, timeError(err)
	}
	c := &Claims{Subject: std.Subject, values: make(map[string]string, len(all))}
	for name, v := range all {
		if s, ok := scalar(v); ok && len(s) <= MaxClaimLen {
			c.values[name] = s
		}
	}
	for _, name := range append([]string{"sub"}, v.opts.Claims...) {
		if err := v.checkKeyed(c, name, all[name]); err != nil {
			return nil, nil, err
		}
	}
	return c, &jwt.Claims{Expiry: std.Expiry, NotBefore: std.NotBefore, IssuedAt: std.IssuedAt}, nil
}

// registered decodes the registered claims the verifier checks, each by
// its exact name (encoding/json would also match "EXP" to a struct's exp).
func registered(all map[string]json.RawMessage) (jwt.Claims, error) {
	var c jwt.Claims
	fields := []struct {
		name string
		dst  any
	}{{"iss", &c.Issuer}, {"sub", &c.Subject}, {"aud", &c.Audience},
		{"exp", &c.Expiry}, {"nbf", &c.NotBefore}, {"iat", &c.IssuedAt}}
	for _, f := range fields {
		raw, ok := all[f.name]
		if !ok {
			continue
		}
		if err := json.Unmarshal(raw, f.dst); err != nil {
			return c, invalid(fmt.Sprintf("claim %q of the wrong type", f.name))
		}
	}
	return c, nil
}

// checkKeyed checks a claim keyed on: absent, or a short scalar without
// the reserved prefix.
func (v *Verifier) checkKeyed(c *Claims, name string, raw json.RawMessage) error {
	if raw == nil {
		return nil
	}
	s, ok := c.values[name]
	switch {
	case !ok:
		return invalid(fmt.Sprintf("claim %q is not a string, number or boolean of at most %d bytes", name, MaxClaimLen))
	case v.opts.ReservedPrefix != "" && strings.HasPrefix(s, v.opts.ReservedPrefix):
		return invalid(fmt.Sprintf("claim %q starts with %q", name, v.opts.ReservedPrefix))
	}
	return nil
}

// scalar is a JSON string, number or boolean as text: a string decoded, a
// number or boolean as written.
func scalar(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "", false
	}
	switch c := raw[0]; {
	case c == '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return "", false
		}
		return s, true
	case c == 't' || c == 'f' || c == '-' || c >= '0' && c <= '9':
		return string(raw), true
	}
	return "", false
}
