// Package cli is `caddy shortener`: the command line of the shortener
// handler's management API (create, list, get, edit, revoke, stats, qr,
// export, import; webhooks for its webhook endpoints, domains for its
// link domains), registered with Caddy's command line by the module.
// It talks HTTP to a running handler and imports nothing of the handler.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

const longHelp = `
Manage the short links of a running shortener handler through its API,
its webhook endpoints (webhooks) and its link domains (domains). The
link commands take --domain <host> for the links of a link domain.

The API's URL comes from --api or SHORTENER_API, e.g. https://sho.rt/api.
The key comes from SHORTENER_API_KEY or the file --api-key-file names; it
is never a flag value, so it stays out of shell history.

Output is a table, or with --json one JSON object a line. Exit codes:
0 done, 1 usage or a value the API refused, 2 not found or gone,
3 no key or key refused, 4 conflict (code taken, link changed; an import
with conflicts or refusals), 5 server or network failure.
`

// setup makes cmd the `shortener` command: its global flags and every
// subcommand.
func setup(cmd *cobra.Command, env Env) {
	g := &globals{env: env}
	g.bind(cmd)
	cmd.Long = longHelp
	cmd.SilenceUsage = true
	links := []*cobra.Command{
		newCreateCmd(g), newListCmd(g), newGetCmd(g), newEditCmd(g), newRevokeCmd(g),
		newStatsCmd(g), newQRCmd(g), newExportCmd(g), newImportCmd(g),
	}
	for _, c := range links {
		g.domainFlag(c)
	}
	cmd.AddCommand(links...)
	cmd.AddCommand(newWebhooksCmd(g), newDomainsCmd(g))
}

// runE wraps a command's body: an error is printed on one line, made safe
// for a terminal, and carries its exit code (exitCodeOf reads it back).
func runE(f func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		err := f(cmd, args)
		if err == nil {
			return nil
		}
		cmd.SilenceErrors = true
		fmt.Fprintln(cmd.ErrOrStderr(), "error: "+Sanitize(err.Error()))
		return &cmdError{exitCodeOf(err), err.Error()}
	}
}

// Run runs `shortener <args>` in process with the given streams and
// environment and returns its exit code, as the caddy binary would exit.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, env Env) int {
	root := &cobra.Command{Use: "shortener"}
	setup(root, env)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	if ce, ok := errors.AsType[*cmdError](err); ok {
		return ce.code
	}
	return ExitUsage // cobra's own errors: unknown command or flag, wrong arguments
}
