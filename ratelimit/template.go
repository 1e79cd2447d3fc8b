package ratelimit

import (
	"net/http"
	"net/textproto"
	"strings"

	"github.com/caddyserver/caddy/v2"
)

// template is a placeholder template prepared at provision, so that the
// shapes keys are usually written in expand without Replacer.ReplaceAll's
// string building: a literal, one request header, or one placeholder.
// Every shape expands exactly as ReplaceAll(raw, "") would.
type template struct {
	raw  string
	kind templateKind
	name string // the placeholder (templateOne) or canonical header name (templateHeader)
}

type templateKind uint8

const (
	templateAny     templateKind = iota // anything else: Replacer.ReplaceAll
	templateLiteral                     // no placeholder: raw itself
	templateHeader                      // {http.request.header.<name>}
	templateOne                         // {<placeholder>}
)

// reqHeaderPrefix is the placeholder prefix of request header fields.
const reqHeaderPrefix = "http.request.header."

func newTemplate(s string) template {
	t := template{raw: s}
	switch {
	case !strings.ContainsAny(s, "{}"):
		t.kind = templateLiteral
	case len(s) > 2 && s[0] == '{' && s[len(s)-1] == '}' && !strings.ContainsAny(s[1:len(s)-1], "{}\\"):
		t.kind, t.name = templateOne, s[1:len(s)-1]
		if field, ok := strings.CutPrefix(t.name, reqHeaderPrefix); ok && field != "" {
			t.kind, t.name = templateHeader, textproto.CanonicalMIMEHeaderKey(field)
		}
	}
	return t
}

// expand is the template's value for r: what repl.ReplaceAll(raw, "")
// gives, unknown placeholders empty. A header field is read from r as
// Caddy's replacer reads it (values joined with ","), without the
// replacer's per-request canonicalisation of the name.
func (t *template) expand(r *http.Request, repl *caddy.Replacer) string {
	switch t.kind {
	case templateLiteral:
		return t.raw
	case templateHeader:
		return strings.Join(r.Header[t.name], ",")
	case templateOne:
		v, _ := repl.Get(t.name)
		return caddy.ToString(v)
	}
	return repl.ReplaceAll(t.raw, "")
}

// templates are the zone's templates expanded before its decision: its
// key, cost, plan key and dynamic quota.
func (z *Zone) templates() []string {
	tmpls := []string{z.Key, string(z.Cost)}
	if z.Plans != nil {
		tmpls = append(tmpls, z.Plans.PlanKey)
	}
	if z.Dynamic != nil {
		tmpls = append(tmpls, z.Dynamic.Events, z.Dynamic.Burst, z.Dynamic.Window)
	}
	return tmpls
}

// templates are the handler's templates expanded before a decision: the
// hash tag and every zone's.
func (h *Handler) templates() []string {
	tmpls := []string{h.HashTag}
	for _, z := range h.Zones {
		tmpls = append(tmpls, z.templates()...)
	}
	return tmpls
}
