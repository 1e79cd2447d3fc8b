package cli

import (
	"encoding/json"
	"net/http"

	"github.com/spf13/cobra"
)

// editFlags are the editable fields; an empty value (0 for a number,
// "none" for --forward-query) clears the field (null in the patch).
type editFlags struct {
	longURL, title, notes, expires, validFrom, forwardQuery, ifMatch string
	tags                                                             []string
	redirectStatus                                                   int
	maxClicks                                                        int64
	targeting                                                        targetingFlags
}

func newEditCmd(g *globals) *cobra.Command {
	var f editFlags
	cmd := &cobra.Command{
		Use:   "edit <code>",
		Short: "Change a link in place; history is kept (PATCH <api>/links/<code>)",
		Long: `Change a link in place with a JSON Merge Patch of the flags given.
An empty value clears the field: --title '' removes the title, --tags ''
the tags, --expires '' the expiry; 0 clears --redirect-status and
--max-clicks, none clears --forward-query.`,
		Args: cobra.ExactArgs(1),
	}
	fl := cmd.Flags()
	fl.StringVar(&f.longURL, "long-url", "", "new destination")
	fl.StringVar(&f.title, "title", "", "new title ('' clears it)")
	fl.StringSliceVar(&f.tags, "tags", nil, "the new tags, comma-separated, replacing all ('' clears them)")
	fl.StringVar(&f.notes, "notes", "", "new notes ('' clears them)")
	fl.StringVar(&f.expires, "expires", "", "new expiry, RFC 3339 ('' clears it)")
	fl.IntVar(&f.redirectStatus, "redirect-status", 0, "301, 302, 307 or 308 (0 clears it)")
	fl.StringVar(&f.validFrom, "valid-from", "", "RFC 3339 time ('' clears it)")
	fl.Int64Var(&f.maxClicks, "max-clicks", 0, "1 to 1e12 (0 clears it)")
	fl.StringVar(&f.forwardQuery, "forward-query", "", "true, false, or none (follow the handler)")
	f.targeting.register(fl, true)
	fl.StringVar(&f.ifMatch, "if-match", "", `edit only this version (the ETag, e.g. '"3"'): 412 if the link changed since`)
	cmd.RunE = runE(func(cmd *cobra.Command, args []string) error {
		patch, err := f.patch(cmd)
		if err != nil {
			return err
		}
		c, err := g.client()
		if err != nil {
			return err
		}
		body, _ := json.Marshal(patch)
		hdr := http.Header{"Content-Type": {"application/merge-patch+json"}}
		if f.ifMatch != "" {
			hdr.Set("If-Match", f.ifMatch)
		}
		var l rawLink
		if _, err := c.getJSON(ctxOf(cmd), http.MethodPatch, linkPath(args[0]), nil, body, hdr, &l); err != nil {
			return err
		}
		return g.printLink(cmd, &l)
	})
	return cmd
}

// patch is the merge patch of the flags given; none is a usage error.
func (f *editFlags) patch(cmd *cobra.Command) (map[string]any, error) {
	p := map[string]any{}
	changed := cmd.Flags().Changed
	str := func(flag, field, v string) {
		if changed(flag) {
			p[field] = nullIf(v, v == "")
		}
	}
	str("long-url", "long_url", f.longURL)
	str("title", "title", f.title)
	str("notes", "notes", f.notes)
	str("expires", "expires_at", f.expires)
	str("valid-from", "valid_from", f.validFrom)
	if changed("tags") {
		p["tags"] = nullIf(f.tags, len(f.tags) == 0)
	}
	if changed("redirect-status") {
		p["redirect_status"] = nullIf(f.redirectStatus, f.redirectStatus == 0)
	}
	if changed("max-clicks") {
		p["max_clicks"] = nullIf(f.maxClicks, f.maxClicks == 0)
	}
	if changed("forward-query") {
		switch f.forwardQuery {
		case "true", "false":
			p["forward_query"] = f.forwardQuery == "true"
		case "none":
			p["forward_query"] = nil
		default:
			return nil, usageErr("--forward-query must be true, false or none")
		}
	}
	if err := f.targeting.fields(changed, p); err != nil {
		return nil, err
	}
	if len(p) == 0 {
		return nil, usageErr("nothing to change: give at least one of --long-url, --title, --tags, --notes, --expires, --redirect-status, --valid-from, --max-clicks, --forward-query, --rule, --variants, --fallback-url, --clear-rules, --clear-variants")
	}
	return p, nil
}

// nullIf is v, or nil (JSON null) when clear is true.
func nullIf(v any, clear bool) any {
	if clear {
		return nil
	}
	return v
}
