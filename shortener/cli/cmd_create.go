package cli

import (
	"encoding/json"
	"net/http"

	"github.com/spf13/cobra"
)

// createFlags are the fields of POST <api>/links a flag may set.
type createFlags struct {
	code, title, notes, expires, validFrom, idemKey string
	tags                                            []string
	redirectStatus                                  int
	maxClicks                                       int64
	forwardQuery, reuse                             bool
	targeting                                       targetingFlags
}

func newCreateCmd(g *globals) *cobra.Command {
	var f createFlags
	cmd := &cobra.Command{
		Use:   "create <long-url>",
		Short: "Create a link (POST <api>/links)",
		Args:  cobra.ExactArgs(1),
	}
	fl := cmd.Flags()
	fl.StringVar(&f.code, "code", "", "custom code (3 to 64 of A-Z a-z 0-9 _ -)")
	fl.StringVar(&f.title, "title", "", "title, at most 200 characters on one line")
	fl.StringArrayVar(&f.tags, "tag", nil, "a tag (repeat for several)")
	fl.StringVar(&f.notes, "notes", "", "notes, at most 2,000 characters")
	fl.StringVar(&f.expires, "expires", "", "expiry, an RFC 3339 time in the future")
	fl.IntVar(&f.redirectStatus, "redirect-status", 0, "301, 302, 307 or 308 instead of the handler's status")
	fl.StringVar(&f.validFrom, "valid-from", "", "the link answers 404 before this RFC 3339 time")
	fl.Int64Var(&f.maxClicks, "max-clicks", 0, "serve at most this many redirects (1 to 1e12)")
	fl.BoolVar(&f.forwardQuery, "forward-query", false, "append the request's query to the long URL (true or false)")
	fl.BoolVar(&f.reuse, "reuse", false, "answer an existing link with the same long URL instead of creating one")
	f.targeting.register(fl, false)
	fl.StringVar(&f.idemKey, "idempotency-key", "", "Idempotency-Key header: a retry with the same key creates nothing new")
	cmd.RunE = runE(func(cmd *cobra.Command, args []string) error {
		c, err := g.client()
		if err != nil {
			return err
		}
		req, err := f.body(cmd, args[0])
		if err != nil {
			return err
		}
		body, _ := json.Marshal(req)
		hdr := http.Header{}
		if f.idemKey != "" {
			hdr.Set("Idempotency-Key", f.idemKey)
		}
		var l rawLink
		if _, err := c.getJSON(ctxOf(cmd), http.MethodPost, "/links", nil, body, hdr, &l); err != nil {
			return err
		}
		return g.printLink(cmd, &l)
	})
	return cmd
}

// body is the create request: the long URL and each field whose flag
// was given (the API judges every value and names the one it refuses).
func (f *createFlags) body(cmd *cobra.Command, longURL string) (map[string]any, error) {
	b := map[string]any{"long_url": longURL}
	set := func(flag, field string, v any) {
		if cmd.Flags().Changed(flag) {
			b[field] = v
		}
	}
	set("code", "code", f.code)
	set("title", "title", f.title)
	set("tag", "tags", f.tags)
	set("notes", "notes", f.notes)
	set("expires", "expires_at", f.expires)
	set("redirect-status", "redirect_status", f.redirectStatus)
	set("valid-from", "valid_from", f.validFrom)
	set("max-clicks", "max_clicks", f.maxClicks)
	set("forward-query", "forward_query", f.forwardQuery)
	set("reuse", "reuse", f.reuse)
	return b, f.targeting.fields(cmd.Flags().Changed, b)
}

// printLink prints one link: its JSON as the API answered it with
// --json, else a table.
func (g *globals) printLink(cmd *cobra.Command, l *rawLink) error {
	out := cmd.OutOrStdout()
	if g.json {
		_, err := out.Write(append(compactJSON(l.raw), '\n'))
		return err
	}
	return writeLinkTable(out, &l.Link, now())
}
