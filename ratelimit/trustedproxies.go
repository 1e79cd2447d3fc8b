package ratelimit

import (
	"reflect"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"
)

// Client addresses behind proxies. With the server's `trusted_proxies`,
// Caddy's client IP is read from `X-Forwarded-For` when the connection
// comes from a trusted proxy; without `trusted_proxies_strict` the
// leftmost valid address is taken, and that is whatever the client wrote
// in the header it sent the proxy: one client takes a fresh per-IP quota
// per request, or the address of an exempt network. Strict mode reads the
// header from the right and takes the first address that is not a trusted
// proxy: the one the outermost trusted proxy saw. So a handler whose zones
// key on the client address warns once at load when its server trusts
// proxies without strict mode (see docs/ratelimit.md, "Client addresses").

// clientAddrPlaceholders are the placeholders whose value is Caddy's
// client IP, or derived from it.
var clientAddrPlaceholders = []string{
	"{client_ip}",
	"{http.vars.client_ip}",
	"{" + placeholderClientNetwork + "}",
}

// clientAddrZones is the zones whose key, plan key or `ban_exempt`
// networks read the client address (the hash tag, part of every key,
// counts for every zone).
func (h *Handler) clientAddrZones() []string {
	var names []string
	all := readsClientAddr(h.HashTag)
	for _, z := range h.Zones {
		planKey := ""
		if z.Plans != nil {
			planKey = z.Plans.PlanKey
		}
		if all || readsClientAddr(z.Key) || readsClientAddr(planKey) || len(z.exempt.nets) > 0 {
			names = append(names, z.Name)
		}
	}
	return names
}

// readsClientAddr reports whether template tmpl reads the client address.
func readsClientAddr(tmpl string) bool {
	for _, p := range clientAddrPlaceholders {
		if strings.Contains(tmpl, p) {
			return true
		}
	}
	return false
}

// warnLooseProxies logs one warning when zones of the handler read the
// client address and the HTTP server it belongs to (in ctx while Caddy
// provisions the server's routes) trusts proxies without
// `trusted_proxies_strict`. Provisioned outside a server: nothing.
func (h *Handler) warnLooseProxies(ctx caddy.Context) {
	srv, ok := ctx.Value(caddyhttp.ServerCtxKey).(*caddyhttp.Server)
	if !ok || srv == nil || srv.TrustedProxiesStrict > 0 || !trustsProxies(srv) {
		return
	}
	zones := h.clientAddrZones()
	if len(zones) == 0 {
		return
	}
	h.logger.Warn("rate limit zones key on the client address, and the server trusts proxies without trusted_proxies_strict: "+
		"a client chooses the leftmost X-Forwarded-For address it sends, so each address it invents gets its own quota; "+
		"set trusted_proxies_strict",
		zap.String("server", srv.Name()), zap.Strings("zones", zones))
}

// trustsProxies reports whether srv has a `trusted_proxies` source. Caddy
// loads the source at provision into an unexported field and clears the
// raw config, so the field itself is looked at (read only; a Caddy that
// renamed it makes TestWarnTrustedProxiesNotStrict fail).
func trustsProxies(srv *caddyhttp.Server) bool {
	f := reflect.ValueOf(srv).Elem().FieldByName("trustedProxies")
	return f.IsValid() && f.Kind() == reflect.Interface && !f.IsNil()
}
