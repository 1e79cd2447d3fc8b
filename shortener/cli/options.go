package cli

import (
	"context"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// maxKeyFile bounds an --api-key-file: a key is a line, not a file.
const maxKeyFile = 4096

// Env is what a command reads from outside its flags: the environment
// (SHORTENER_API, SHORTENER_API_KEY) and whether an output is a terminal.
type Env struct {
	Getenv     func(string) string
	IsTerminal func(w io.Writer) bool
}

// osEnv is the process's environment.
func osEnv() Env {
	return Env{Getenv: os.Getenv, IsTerminal: isTerminal}
}

// globals are the flags every command takes.
type globals struct {
	env     Env
	api     string        // --api, else $SHORTENER_API
	keyFile string        // --api-key-file, else $SHORTENER_API_KEY
	json    bool          // --json: machine-readable output
	timeout time.Duration // --timeout: each HTTP request's deadline
	domain  string        // --domain of the link commands: their link domain
}

// bind declares the global flags on the parent command.
func (g *globals) bind(cmd *cobra.Command) {
	f := cmd.PersistentFlags()
	f.StringVar(&g.api, "api", "", "the API's URL, e.g. https://sho.rt/api (default $SHORTENER_API)")
	f.StringVar(&g.keyFile, "api-key-file", "", "read the API key from this file (default: $SHORTENER_API_KEY)")
	f.BoolVar(&g.json, "json", false, "print JSON (one object a line) instead of a table")
	f.DurationVar(&g.timeout, "timeout", 30*time.Second, "deadline of each request to the API")
}

// client returns the API client the flags and environment describe.
func (g *globals) client() (*client, error) {
	api := g.api
	if api == "" {
		api = g.env.Getenv("SHORTENER_API")
	}
	if api == "" {
		return nil, usageErr("--api is required (or set SHORTENER_API), e.g. --api https://sho.rt/api")
	}
	if g.timeout <= 0 || g.timeout > time.Hour {
		return nil, usageErr("--timeout must be more than 0 and at most 1h")
	}
	key, err := g.key()
	if err != nil {
		return nil, err
	}
	c, err := newClient(api, key, g.timeout)
	if err != nil {
		return nil, err
	}
	c.domain = g.domain
	return c, nil
}

// domainFlag gives a link command --domain: every request it sends to
// <api>/links carries ?domain=<host> (client.withDomain).
func (g *globals) domainFlag(cmd *cobra.Command) {
	cmd.Flags().StringVar(&g.domain, "domain", "", "the link domain of the links, e.g. go.example.com (default: the handler's own, the default domain)")
}

// key reads the API key from --api-key-file or SHORTENER_API_KEY. It is
// never a flag value, so it stays out of shell history and ps.
func (g *globals) key() (string, error) {
	key := g.env.Getenv("SHORTENER_API_KEY")
	from := "SHORTENER_API_KEY"
	if g.keyFile != "" {
		f, err := os.Open(g.keyFile)
		if err != nil {
			return "", exitErr(ExitAuth, "--api-key-file: %v", err)
		}
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
		if err != nil {
			return "", exitErr(ExitAuth, "--api-key-file: %v", err)
		}
		if len(b) > maxKeyFile {
			return "", exitErr(ExitAuth, "--api-key-file: longer than %d bytes: a key is one line", maxKeyFile)
		}
		key, from = strings.TrimSpace(string(b)), "--api-key-file"
	}
	if key == "" {
		return "", exitErr(ExitAuth, "no API key: set SHORTENER_API_KEY or give --api-key-file <path>")
	}
	for _, c := range []byte(key) {
		if c <= ' ' || c >= 0x7f {
			return "", exitErr(ExitAuth, "%s: the key must be printable ASCII without spaces", from)
		}
	}
	return key, nil
}

// ctx is the context a command runs in.
func ctxOf(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}
