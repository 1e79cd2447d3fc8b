package cli

import (
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/spf13/cobra"
)

func newExportCmd(g *globals) *cobra.Command {
	var format, status, output string
	var withStats bool
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Write every link as NDJSON or CSV, streamed (GET <api>/links/export)",
		Long: `Write every link of a status (default all), oldest first, with its
metadata and click total, as NDJSON (one link a line, default) or CSV.
import --from ndjson (or csv) reads the file back: this is the backup and
the way to move links between stores.`,
		Args: cobra.NoArgs,
	}
	fl := cmd.Flags()
	fl.StringVar(&format, "format", "ndjson", "ndjson or csv")
	fl.StringVar(&status, "status", "", "all (default), active, expired, revoked, exhausted or scheduled")
	fl.StringVarP(&output, "output", "o", "-", "file to write, - for standard output")
	fl.BoolVar(&withStats, "with-stats", false, "add each link's click rollups by hour (NDJSON only), which import restores")
	cmd.RunE = runE(func(cmd *cobra.Command, _ []string) error {
		c, err := g.client()
		if err != nil {
			return err
		}
		q := url.Values{"format": {format}}
		if status != "" {
			q.Set("status", status)
		}
		if withStats {
			q.Set("with_stats", "1")
		}
		c.http.Timeout = 0 // a long export is fine; the context still ends it
		resp, err := c.request(ctxOf(cmd), http.MethodGet, "/links/export", q, nil, nil)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		lines := &lineCounter{r: resp.Body}
		n, err := writeOutput(output, cmd.OutOrStdout(), lines)
		if err != nil {
			return err
		}
		if output != "-" && format == "ndjson" {
			fmt.Fprintf(cmd.ErrOrStderr(), "exported %d links (%d bytes) to %s\n", lines.n, n, Sanitize(output))
		} else if output != "-" {
			fmt.Fprintf(cmd.ErrOrStderr(), "exported %d bytes to %s\n", n, Sanitize(output))
		}
		return nil
	})
	return cmd
}

// lineCounter counts the line feeds read through it: the links of an
// NDJSON export.
type lineCounter struct {
	r io.Reader
	n int64
}

func (l *lineCounter) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	for _, b := range p[:n] {
		if b == '\n' {
			l.n++
		}
	}
	return n, err
}
