// Command caddy is a Caddy build with the standard modules plus
// caddy-edgekit's ratelimit and shortener handlers.
//
//	go run ./cmd/caddy list-modules
//	go run ./cmd/caddy run --config caddyfile_examples/quickstart.Caddyfile
package main

import (
	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	_ "github.com/caddyserver/caddy/v2/modules/standard"

	_ "github.com/edgekit/caddy-edgekit"
)

func main() {
	caddycmd.Main()
}
