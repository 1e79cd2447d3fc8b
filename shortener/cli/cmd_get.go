package cli

import (
	"fmt"
	"net/http"

	"github.com/spf13/cobra"
)

func newGetCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "get <code>",
		Short: "Show a link with its click total (GET <api>/links/<code>)",
		Args:  cobra.ExactArgs(1),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			var l rawLink
			if _, err := c.getJSON(ctxOf(cmd), http.MethodGet, linkPath(args[0]), nil, nil, nil, &l); err != nil {
				return err
			}
			return g.printLink(cmd, &l)
		}),
	}
}

func newRevokeCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "revoke <code>",
		Short: "Revoke a link: it answers 410 from then on (DELETE <api>/links/<code>)",
		Args:  cobra.ExactArgs(1),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			resp, err := c.request(ctxOf(cmd), http.MethodDelete, linkPath(args[0]), nil, nil, nil)
			if err != nil {
				return err
			}
			resp.Body.Close()
			if g.json {
				return writeJSONLine(cmd.OutOrStdout(), map[string]any{"code": args[0], "revoked": true})
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "revoked %s\n", Sanitize(args[0]))
			return err
		}),
	}
}
