package ratelimit

import (
	"errors"
	"fmt"
	"net/http"
	"net/textproto"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/edgekit/caddy-edgekit/internal/cfparse"
	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

// CostAfter charges a request what its response says it cost (such as
// the tokens an LLM answer used), known only when the response ends. The
// request is admitted when the zone has at least its `cost` left, and
// that cost is charged; when the response ends, the difference to the
// real cost is charged, past the quota if need be (the key goes into a
// debt that refills repay before anything more is allowed), or given back
// (see docs/ratelimit.md for what each algorithm does with a debt, and
// how far a window can be overshot). token_bucket, sliding_window and
// fixed_window zones only.
type CostAfter struct {
	// The real cost: a placeholder template expanded when the response
	// ends, reading its headers and trailers, such as
	// `{http.response.header.X-Tokens-Used}` (a trailer the upstream
	// announced or sent after a streamed body reads the same way). A
	// value that is not a non-negative integer of at most 2^50 is logged
	// (once per key per 10s, cut to 64 bytes), counted in
	// `caddy_ratelimit_invalid_input_total{kind="cost_after"}` and charged
	// the `fallback`, never a bypass. Required.
	Template string `json:"template"`

	// Units charged when the real cost never arrives (the template expands
	// to nothing, the handler chain failed or panicked: the upstream is
	// unreachable, the client hung up before the end or the trailer) or
	// is not a valid number.
	// 0 to 2^50. Default: the zone's `cost` for the request.
	Fallback *int64 `json:"fallback,omitempty"`
}

// MaxRealCost bounds a real cost: 2^50, as a cost.
const MaxRealCost = limiter.MaxEvents

// check validates the cost_after of a zone of algorithm alg.
func (c *CostAfter) check(alg string) error {
	switch {
	case strings.TrimSpace(c.Template) == "":
		return onField("cost_after", errors.New("cost_after needs a template"))
	case c.Fallback != nil && (*c.Fallback < 0 || *c.Fallback > MaxRealCost):
		return onField("cost_after", fmt.Errorf("invalid cost_after fallback '%d': must be a non-negative integer of at most 2^50", *c.Fallback))
	case !approxAlgorithm(alg):
		return onField("cost_after", fmt.Errorf("cost_after works with token_bucket, sliding_window and fixed_window (which carry a debt), not %s", alg))
	}
	return nil
}

// parseRealCost parses a real cost: ASCII digits only (space around
// allowed, leading zeros too), at most MaxRealCost; ok is false for
// anything else. It stops at the first digit past the bound.
func parseRealCost(s string) (n int64, ok bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
		if n > MaxRealCost {
			return 0, false
		}
	}
	return n, true
}

// fallbackFor is what a request whose zone cost is cost is charged when
// its real cost never arrives or is invalid: the fallback, else cost.
func (e *costAfterExpr) fallbackFor(cost int64) int64 {
	if e.hasFb {
		return e.fallback
	}
	return cost
}

// respHeaderPrefix is the placeholder prefix of response header fields.
const respHeaderPrefix = "http.response.header."

// costAfterExpr is a zone's CostAfter, prepared.
type costAfterExpr struct {
	tmpl     template
	field    string // canonical: the template is this response header field alone
	fallback int64  // when hasFb
	hasFb    bool
}

func newCostAfterExpr(c *CostAfter) *costAfterExpr {
	e := &costAfterExpr{tmpl: newTemplate(c.Template)}
	if e.tmpl.kind == templateOne {
		if f, ok := strings.CutPrefix(e.tmpl.name, respHeaderPrefix); ok && f != "" {
			e.field = textproto.CanonicalMIMEHeaderKey(f)
		}
	}
	if c.Fallback != nil {
		e.fallback, e.hasFb = *c.Fallback, true
	}
	return e
}

// value is the template's value at the end of the response whose header
// (trailers included) is h. One response header placeholder reads h
// itself, a trailer sent without announcement too (its key carries
// http.TrailerPrefix); any other template goes through repl, as Caddy
// expands response placeholders.
func (e *costAfterExpr) value(h http.Header, r *http.Request, repl *caddy.Replacer) string {
	if e.field == "" {
		return e.tmpl.expand(r, repl)
	}
	if v := h[e.field]; len(v) > 0 {
		return strings.Join(v, ",")
	}
	return strings.Join(h[http.TrailerPrefix+e.field], ",")
}

// unmarshalCostAfter reads `cost_after <template> [fallback <n>]`.
func (z *Zone) unmarshalCostAfter(d *caddyfile.Dispenser) error {
	args := d.RemainingArgs()
	switch {
	case len(args) == 1:
	case len(args) == 3 && args[1] == "fallback":
		n, err := cfparse.Int64(d, "cost_after fallback", args[2])
		if err != nil {
			return err
		}
		z.CostAfter = &CostAfter{Template: args[0], Fallback: &n}
		return nil
	case len(args) == 3:
		return d.Errf("zone '%s': cost_after: unrecognized '%s' (want: cost_after <template> [fallback <n>])", z.Name, args[1])
	default:
		return d.ArgErr()
	}
	z.CostAfter = &CostAfter{Template: args[0]}
	return nil
}
