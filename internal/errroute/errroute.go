// Package errroute tells a handler whether an error status it is about to
// return could be shaped by an error route (handle_errors, or a subroute's
// errors). When none could, the handler may write the bare status itself:
// Caddy's server would write the same empty response, but only after
// building a HandlerError, cloning its error logger and filling the
// {http.error.*} placeholders, which costs a rate limiter's refusal or a
// shortener's 404 a fifth of its time.
package errroute

import (
	"net/http"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

// Direct is provisioned once per handler instance.
type Direct struct {
	// Above: an enclosing subroute has error routes, so errors are always
	// returned to it.
	Above bool
}

// New inspects the modules that contain the handler being provisioned
// (ctx.Modules()).
func New(ancestors []caddy.Module) Direct {
	for _, m := range ancestors {
		if sr, ok := m.(*caddyhttp.Subroute); ok && sr.Errors != nil && len(sr.Errors.Routes) > 0 {
			return Direct{Above: true}
		}
	}
	return Direct{}
}

// Writes reports whether the handler should write an error status itself
// rather than return it as an error: only when no error route could shape
// it (no enclosing subroute has error routes, the server has no
// handle_errors routes, and the request is not already being handled as an
// error). A request served outside a Caddy server (a unit test calling
// ServeHTTP) gets false: the error is returned.
func (d Direct) Writes(r *http.Request) bool {
	if d.Above {
		return false
	}
	srv, _ := r.Context().Value(caddyhttp.ServerCtxKey).(*caddyhttp.Server)
	if srv == nil || (srv.Errors != nil && len(srv.Errors.Routes) > 0) {
		return false
	}
	return r.Context().Value(caddyhttp.ErrorCtxKey) == nil
}
