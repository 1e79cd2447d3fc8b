// Command redisrate is make bench's peer for issue 19: Caddy's standard
// modules plus http.handlers.redis_rate, a plain handler that asks
// github.com/go-redis/redis_rate for every request (one EVALSHA each). It
// has a go.mod of its own, so caddy-edgekit does not depend on it.
package main

import (
	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	_ "github.com/caddyserver/caddy/v2/modules/standard"
)

func main() { caddycmd.Main() }
