package shortener

// The `caddy shortener` command line registers itself with Caddy's
// command line when the module is built in.
import _ "github.com/edgekit/caddy-edgekit/shortener/cli"
