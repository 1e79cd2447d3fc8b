package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func newDomainsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "domains <list|create|get|edit|delete>",
		Short: "Manage link domains (<api>/domains; needs the postgres or embedded store)",
		Long: `Manage the handler's link domains through <api>/domains: host names
with codes of their own, their redirects, app link files and the API keys
scoped to them. The link commands take --domain <host> for a domain's
links. Creating, editing and deleting need an api_key not scoped to
domains.`,
		Args: cobra.NoArgs, // an unknown subcommand is a usage error, not help
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newDomainsListCmd(g), newDomainsCreateCmd(g), newDomainsGetCmd(g), newDomainsEditCmd(g),
		newDomainsDeleteCmd(g))
	return cmd
}

func newDomainsListCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the link domains the key may see (GET <api>/domains)",
		Args:  cobra.NoArgs,
		RunE: runE(func(cmd *cobra.Command, _ []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			var page struct {
				Domains []raw[Domain] `json:"domains"`
			}
			if _, err := c.getJSON(ctxOf(cmd), http.MethodGet, "/domains", nil, nil, nil, &page); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if g.json {
				for _, d := range page.Domains {
					if _, err := out.Write(append(compactJSON(d.raw), '\n')); err != nil {
						return err
					}
				}
				return nil
			}
			t := newTable(out, g.env.IsTerminal(out))
			t.row("HOST", "ROOT REDIRECT", "NOT FOUND REDIRECT", "APP LINKS", "KEYS", "CREATED")
			for _, d := range page.Domains {
				t.row(d.v.Host, cellStr(d.v.RootRedirect), cellStr(d.v.NotFoundRedirect), d.v.appLinks(),
					strconv.Itoa(len(d.v.Keys)), cellTime(&d.v.CreatedAt))
			}
			return t.flush()
		}),
	}
}

// domainFlags are the fields of a domain create and edit take.
type domainFlags struct {
	rootRedirect, notFoundRedirect string
	aasa, assetlinks               string // files
	keys                           []string
	edit                           bool // the flags of edit: a merge patch
	// edit only: clear a field (null in the patch)
	clearRoot, clearNotFound, clearAASA, clearAssetlinks, clearKeys bool
}

func (f *domainFlags) register(fl *pflag.FlagSet, edit bool) {
	f.edit = edit
	verb, keys := "", "an API key fingerprint the domain is scoped to (repeat for several): printf %s \"$KEY\" | sha256sum | cut -c1-16"
	if edit {
		verb, keys = "the new ", keys+"; the new keys replace all"
	}
	fl.StringVar(&f.rootRedirect, "root-redirect", "", verb+"URL a request for the domain's / is sent to")
	fl.StringVar(&f.notFoundRedirect, "not-found-redirect", "", verb+"URL a request for a code the domain does not have is sent to")
	fl.StringVar(&f.aasa, "apple-app-site-association", "", "a JSON file served at /.well-known/apple-app-site-association on the domain (at most 64 KiB)")
	fl.StringVar(&f.assetlinks, "assetlinks", "", "a JSON file served at /.well-known/assetlinks.json on the domain (at most 64 KiB)")
	fl.StringArrayVar(&f.keys, "key", nil, keys)
	if edit {
		fl.BoolVar(&f.clearRoot, "clear-root-redirect", false, "remove the root redirect (the handler's own answers)")
		fl.BoolVar(&f.clearNotFound, "clear-not-found-redirect", false, "remove the not-found redirect")
		fl.BoolVar(&f.clearAASA, "clear-apple-app-site-association", false, "remove the apple-app-site-association file")
		fl.BoolVar(&f.clearAssetlinks, "clear-assetlinks", false, "remove the assetlinks file")
		fl.BoolVar(&f.clearKeys, "clear-keys", false, "remove the scoped keys: every key sees the domain")
	}
}

// fields adds the flags given to b, the request body or merge patch,
// after the checks that need no request (app link files are read here).
func (f *domainFlags) fields(changed func(string) bool, b map[string]any) error {
	for _, p := range [][2]string{{"root-redirect", "clear-root-redirect"}, {"not-found-redirect", "clear-not-found-redirect"},
		{"apple-app-site-association", "clear-apple-app-site-association"}, {"assetlinks", "clear-assetlinks"}, {"key", "clear-keys"}} {
		if changed(p[0]) && changed(p[1]) {
			return usageErr("--%s and --%s go one at a time", p[0], p[1])
		}
	}
	if changed("key") && len(f.keys) > maxDomainKeys {
		return usageErr("--key: at most %d", maxDomainKeys)
	}
	if changed("root-redirect") {
		b["root_redirect"] = f.rootRedirect
	}
	if changed("not-found-redirect") {
		b["not_found_redirect"] = f.notFoundRedirect
	}
	for _, file := range []struct{ flag, field, path string }{
		{"apple-app-site-association", "apple_app_site_association", f.aasa}, {"assetlinks", "assetlinks", f.assetlinks},
	} {
		if !changed(file.flag) {
			continue
		}
		v, err := readAppLinksFile(file.flag, file.path)
		if err != nil {
			return err
		}
		b[file.field] = v
	}
	if changed("key") {
		b["keys"] = f.keys
	}
	for _, c := range []struct {
		on    bool
		field string
	}{{f.clearRoot, "root_redirect"}, {f.clearNotFound, "not_found_redirect"}, {f.clearAASA, "apple_app_site_association"},
		{f.clearAssetlinks, "assetlinks"}, {f.clearKeys, "keys"}} {
		if c.on {
			b[c.field] = nil
		}
	}
	return nil
}

// readAppLinksFile reads an app site association file: a JSON object or
// array, at most maxAppLinksFile bytes compacted (as the API counts).
func readAppLinksFile(flag, path string) (json.RawMessage, error) {
	if path == "" {
		return nil, usageErr("--%s needs a file", flag)
	}
	fh, err := os.Open(path)
	if err != nil {
		return nil, usageErr("--%s: %v", flag, err)
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, 16*maxAppLinksFile+1))
	if err != nil {
		return nil, usageErr("--%s: %v", flag, err)
	}
	var buf bytes.Buffer
	if len(b) > 16*maxAppLinksFile || json.Compact(&buf, b) != nil {
		return nil, usageErr("--%s: %s is not a JSON file of at most %d KiB", flag, path, maxAppLinksFile>>10)
	}
	if c := buf.Bytes(); len(c) == 0 || (c[0] != '{' && c[0] != '[') {
		return nil, usageErr("--%s: %s must hold a JSON object or array", flag, path)
	}
	if buf.Len() > maxAppLinksFile {
		return nil, usageErr("--%s: %s is over %d KiB", flag, path, maxAppLinksFile>>10)
	}
	return buf.Bytes(), nil
}

func newDomainsCreateCmd(g *globals) *cobra.Command {
	var f domainFlags
	cmd := &cobra.Command{
		Use:   "create <host>",
		Short: "Create a link domain (POST <api>/domains)",
		Long: `Create a link domain: its links answer under its host, and Caddy may
get it a certificate on demand (permission shortener). The host is read
as a browser reads it (IDNA to lower-case ASCII, a trailing dot dropped).`,
		Example: `  caddy shortener domains create go.example.com --root-redirect https://example.com/ --not-found-redirect https://example.com/404
  caddy shortener domains create links.example.org --apple-app-site-association aasa.json --assetlinks assetlinks.json --key 3f2a9c0d1e4b5a67`,
		Args: cobra.ExactArgs(1),
	}
	f.register(cmd.Flags(), false)
	cmd.RunE = runE(func(cmd *cobra.Command, args []string) error {
		req := map[string]any{"host": args[0]}
		if err := f.fields(cmd.Flags().Changed, req); err != nil {
			return err
		}
		return sendAndPrint(cmd, g, http.MethodPost, "/domains", req, nil, g.printDomain)
	})
	return cmd
}

func newDomainsGetCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "get <host>",
		Short: "Show a link domain (GET <api>/domains/<host>)",
		Args:  cobra.ExactArgs(1),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			return sendAndPrint(cmd, g, http.MethodGet, domainPath(args[0]), nil, nil, g.printDomain)
		}),
	}
}

func newDomainsEditCmd(g *globals) *cobra.Command {
	var f domainFlags
	cmd := &cobra.Command{
		Use:   "edit <host>",
		Short: "Change a link domain (PATCH <api>/domains/<host>)",
		Long: `Change a link domain with a JSON Merge Patch of the flags given.
--key replaces the whole list; the --clear-... flags remove a field.
The host never changes: create another domain.`,
		Args: cobra.ExactArgs(1),
	}
	f.register(cmd.Flags(), true)
	cmd.RunE = runE(func(cmd *cobra.Command, args []string) error {
		patch := map[string]any{}
		if err := f.fields(cmd.Flags().Changed, patch); err != nil {
			return err
		}
		if len(patch) == 0 {
			return usageErr("nothing to change: give at least one of --root-redirect, --not-found-redirect, --apple-app-site-association, --assetlinks, --key, --clear-root-redirect, --clear-not-found-redirect, --clear-apple-app-site-association, --clear-assetlinks, --clear-keys")
		}
		return sendAndPrint(cmd, g, http.MethodPatch, domainPath(args[0]), patch, mergePatch, g.printDomain)
	})
	return cmd
}

func newDomainsDeleteCmd(g *globals) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "delete <host>",
		Short: "Delete a link domain; refused while it has links, unless --force (DELETE <api>/domains/<host>)",
		Long: `Delete a link domain. While the domain has links the API refuses
(exit 4); --force revokes its links first, then deletes it.`,
		Args: cobra.ExactArgs(1),
	}
	cmd.Flags().BoolVar(&force, "force", false, "revoke the domain's links, then delete it")
	cmd.RunE = runE(func(cmd *cobra.Command, args []string) error {
		c, err := g.client()
		if err != nil {
			return err
		}
		var q url.Values
		if force {
			q = url.Values{"force": {"true"}}
		}
		resp, err := c.request(ctxOf(cmd), http.MethodDelete, domainPath(args[0]), q, nil, nil)
		if ae, ok := errors.AsType[*APIError](err); ok && ae.Status == http.StatusConflict && !force && !ae.NotAPI {
			return &APIError{Status: ae.Status, Msg: ae.Msg + "; --force revokes them"}
		}
		if err != nil {
			return err
		}
		resp.Body.Close()
		if g.json {
			return writeJSONLine(cmd.OutOrStdout(), map[string]any{"host": args[0], "deleted": true, "links_revoked": force})
		}
		msg := "deleted " + Sanitize(args[0])
		if force {
			msg += " (its links revoked)"
		}
		_, err = fmt.Fprintln(cmd.OutOrStdout(), msg)
		return err
	})
	return cmd
}

// printDomain prints one domain: its JSON as the API answered it with
// --json, else a table.
func (g *globals) printDomain(cmd *cobra.Command, d *raw[Domain]) error {
	out := cmd.OutOrStdout()
	if g.json {
		_, err := out.Write(append(compactJSON(d.raw), '\n'))
		return err
	}
	return writeDomainTable(out, &d.v)
}

// writeDomainTable writes one domain as field / value rows.
func writeDomainTable(w io.Writer, d *Domain) error {
	t := newTable(w, false)
	t.row("host", d.Host)
	t.row("root_redirect", cellStr(d.RootRedirect))
	t.row("not_found_redirect", cellStr(d.NotFoundRedirect))
	t.row("apple_app_site_association", cellFile(d.AppleAppSiteAssociation))
	t.row("assetlinks", cellFile(d.Assetlinks))
	t.row("keys", cellTags(d.Keys))
	t.row("created_at", cellTime(&d.CreatedAt))
	t.row("updated_at", cellTime(&d.UpdatedAt))
	t.row("version", strconv.FormatInt(d.Version, 10))
	return t.flush()
}

// cellFile is an app site association file as a cell: its size, "-" for
// none.
func cellFile(b json.RawMessage) string {
	if len(b) == 0 || string(b) == "null" {
		return "-"
	}
	return fmt.Sprintf("%d bytes", len(b))
}

// appLinks names the app link files a domain serves, "-" for none.
func (d *Domain) appLinks() string {
	var s []string
	if cellFile(d.AppleAppSiteAssociation) != "-" {
		s = append(s, "apple")
	}
	if cellFile(d.Assetlinks) != "-" {
		s = append(s, "android")
	}
	return cellTags(s)
}
