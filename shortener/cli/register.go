package cli

import (
	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/spf13/cobra"
)

func init() {
	caddycmd.RegisterCommand(caddycmd.Command{
		Name:  "shortener",
		Usage: "<create|list|get|edit|revoke|stats|qr|export|import|webhooks|domains> [flags]",
		Short: "Manages the links of a running shortener handler through its API",
		CobraFunc: func(cmd *cobra.Command) {
			setup(cmd, osEnv())
			wrapCaddyExit(cmd)
		},
	})
}

// wrapCaddyExit gives every command below cmd (webhooks' too) withCaddyExit.
func wrapCaddyExit(cmd *cobra.Command) {
	for _, c := range cmd.Commands() {
		if c.RunE != nil {
			c.RunE = withCaddyExit(c.RunE)
		}
		wrapCaddyExit(c)
	}
}

// withCaddyExit hands a command's exit code above 1 to caddycmd.Main,
// which exits 1 for any other error.
func withCaddyExit(f func(*cobra.Command, []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		err := f(cmd, args)
		code := exitCodeOf(err)
		if code <= ExitUsage {
			return err
		}
		return caddycmd.WrapCommandFuncForCobra(func(caddycmd.Flags) (int, error) { return code, nil })(cmd, args)
	}
}
