// Package edgekit bundles caddy-edgekit's Caddy modules, so that
//
//	xcaddy build --with github.com/edgekit/caddy-edgekit
//
// builds a Caddy with both the ratelimit and the shortener handlers. Each
// module can also be built alone with its own package path.
package edgekit

import (
	_ "github.com/edgekit/caddy-edgekit/ratelimit"
	_ "github.com/edgekit/caddy-edgekit/ratelimit/usagecli"
	_ "github.com/edgekit/caddy-edgekit/shortener"
)
