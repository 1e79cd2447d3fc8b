// Package usagecli is the `caddy ratelimit usage export` command: the
// usage a zone with `usage on` kept in one period, read from a running
// Caddy's admin API (GET /ratelimit/zones/<zone>/usage) and written as
// NDJSON (one key per line, for billing) or CSV.
package usagecli

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"

	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/spf13/cobra"
)

func init() {
	caddycmd.RegisterCommand(caddycmd.Command{
		Name:  "ratelimit",
		Usage: "usage export --zone <zone> [--period current|previous|<RFC 3339 time>] [--format ndjson|csv] [--output <file>] [--address <admin>]",
		Short: "Exports the usage per key a rate limit zone kept, from a running Caddy",
		CobraFunc: func(cmd *cobra.Command) {
			usage := &cobra.Command{Use: "usage", Short: "Usage per key of zones with usage on"}
			usage.AddCommand(exportCommand())
			cmd.AddCommand(usage)
		},
	})
}

// exportCommand is `usage export`.
func exportCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "export",
		Short: "Writes every key's usage in one period as NDJSON (or CSV)",
		Long: `Writes the units and refusals of every key of a zone with "usage on" in one
period, read from the admin API of a running Caddy: one JSON object per line
(zone, key, period_start, period_end, units, refused), or CSV with --format csv.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return export(cmd) },
	}
	f := c.Flags()
	f.String("zone", "", "the zone (required)")
	f.String("period", "current", "current, previous, or an RFC 3339 time within the period")
	f.String("format", "ndjson", "ndjson or csv")
	f.StringP("output", "o", "", "write to this file instead of standard output")
	f.String("address", "", "the admin API's address (default: Caddy's, localhost:2019)")
	return c
}

func export(cmd *cobra.Command) error {
	f := cmd.Flags()
	zone, _ := f.GetString("zone")
	period, _ := f.GetString("period")
	format, _ := f.GetString("format")
	output, _ := f.GetString("output")
	address, _ := f.GetString("address")
	if zone == "" {
		return fmt.Errorf("--zone is required")
	}
	if format != "ndjson" && format != "csv" {
		return fmt.Errorf("invalid --format %q: ndjson or csv", format)
	}
	addr, err := caddycmd.DetermineAdminAPIAddress(address, nil, "", "")
	if err != nil {
		return err
	}
	q := url.Values{"period": {period}, "format": {format}}
	if format == "csv" {
		q.Set("limit", "10000")
	}
	res, err := caddycmd.AdminAPIRequest(addr, http.MethodGet, "/ratelimit/zones/"+url.PathEscape(zone)+"/usage?"+q.Encode(), nil, nil)
	if err != nil {
		return err // the admin API's error, with its message
	}
	defer res.Body.Close()
	w := cmd.OutOrStdout()
	if output != "" {
		file, err := os.Create(output)
		if err != nil {
			return err
		}
		defer file.Close()
		w = file
	}
	_, err = io.Copy(w, res.Body)
	return err
}
