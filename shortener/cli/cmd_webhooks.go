package cli

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func newWebhooksCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "webhooks <list|create|get|edit|delete|rotate|messages|message|replay>",
		Short: "Manage webhook endpoints and their messages (<api>/webhooks; needs an api_key)",
		Long: `Manage the handler's webhook endpoints and their messages through
<api>/webhooks. Every call needs an api_key, reads too. The handler needs
its webhooks block; without it the API answers 404 (exit 2).`,
		Args: cobra.NoArgs, // an unknown subcommand is a usage error, not help
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newWebhooksListCmd(g), newWebhooksCreateCmd(g), newWebhooksGetCmd(g), newWebhooksEditCmd(g),
		newWebhooksDeleteCmd(g), newWebhooksRotateCmd(g), newWebhooksMessagesCmd(g), newWebhooksMessageCmd(g),
		newWebhooksReplayCmd(g))
	return cmd
}

func newWebhooksListCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the webhook endpoints (GET <api>/webhooks)",
		Args:  cobra.NoArgs,
		RunE: runE(func(cmd *cobra.Command, _ []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			var page struct {
				Endpoints []raw[Webhook] `json:"endpoints"`
			}
			if _, err := c.getJSON(ctxOf(cmd), http.MethodGet, "/webhooks", nil, nil, nil, &page); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if g.json {
				for _, e := range page.Endpoints {
					if _, err := out.Write(append(compactJSON(e.raw), '\n')); err != nil {
						return err
					}
				}
				return nil
			}
			t := newTable(out, g.env.IsTerminal(out))
			t.row("ID", "URL", "TYPES", "STATE", "CREATED")
			for _, e := range page.Endpoints {
				t.row(e.v.ID, e.v.URL, strings.Join(e.v.Types, " "), e.v.state(), cellTime(&e.v.CreatedAt))
			}
			return t.flush()
		}),
	}
}

// webhookFlags are the fields of an endpoint create and edit take.
type webhookFlags struct {
	types, tags, codes    []string
	description           string
	batch                 int
	batchWait             time.Duration
	disabled, enable      bool
	url                   string // edit only
	clearTags, clearCodes bool   // edit only
	edit                  bool   // the flags of edit: a merge patch
}

func (f *webhookFlags) register(fl *pflag.FlagSet, edit bool) {
	f.edit = edit
	verb, types, description := "a", "an event type to send (repeat for several): "+strings.Join(webhookTypes, ", "),
		"a description, at most 1,024 bytes"
	if edit {
		verb, types, description = "the new", types+"; the new types replace all", description+" ('' clears it)"
		fl.StringVar(&f.url, "url", "", "the new URL the messages are sent to")
	}
	fl.StringArrayVar(&f.types, "type", nil, types)
	fl.StringVar(&f.description, "description", "", description)
	fl.StringArrayVar(&f.tags, "tag", nil, verb+" tag filter: only events of links with one of these tags (repeat for several)")
	fl.StringArrayVar(&f.codes, "code", nil, verb+" code filter: only events of links with one of these codes (repeat for several)")
	fl.IntVar(&f.batch, "batch", 0, "send clicks as click.batch messages of up to this many clicks (0 or 1: one a message; at most 1000)")
	fl.DurationVar(&f.batchWait, "batch-wait", 0, "send a batch this long after its first click if not full, e.g. 2s (at most 1m)")
	if edit {
		fl.BoolVar(&f.enable, "enable", false, "enable the endpoint (it gets the events recorded from then on)")
		fl.BoolVar(&f.disabled, "disable", false, "disable the endpoint")
		fl.BoolVar(&f.clearTags, "clear-tags", false, "remove the tag filter")
		fl.BoolVar(&f.clearCodes, "clear-codes", false, "remove the code filter")
	} else {
		fl.BoolVar(&f.disabled, "disabled", false, "create it disabled")
	}
}

// fields adds the flags given to b, the request body or merge patch,
// after the checks that need no request.
func (f *webhookFlags) fields(changed func(string) bool, b map[string]any) error {
	if changed("type") {
		for _, t := range f.types {
			if !slices.Contains(webhookTypes, t) {
				return usageErr("--type %q is not an event type (%s)", t, strings.Join(webhookTypes, ", "))
			}
		}
		b["types"] = f.types
	}
	if f.batch < 0 || f.batch > maxWebhookBatch {
		return usageErr("--batch must be 0 to %d", maxWebhookBatch)
	}
	if f.batchWait < 0 || f.batchWait > maxWebhookBatchWait || f.batchWait%time.Millisecond != 0 {
		return usageErr("--batch-wait must be 0 to 1m, in whole milliseconds")
	}
	switch {
	case f.clearTags && changed("tag"), f.clearCodes && changed("code"):
		return usageErr("--clear-tags and --clear-codes go without --tag and --code")
	case f.enable && f.disabled:
		return usageErr("--enable and --disable go one at a time")
	}
	if changed("url") {
		b["url"] = f.url
	}
	if changed("description") {
		b["description"] = nullIf(f.description, f.edit && f.description == "")
	}
	if changed("tag") {
		b["tags"] = f.tags
	}
	if changed("code") {
		b["codes"] = f.codes
	}
	if f.clearTags {
		b["tags"] = nil
	}
	if f.clearCodes {
		b["codes"] = nil
	}
	if changed("batch") {
		b["batch"] = f.batch
	}
	if changed("batch-wait") {
		b["batch_wait_ms"] = f.batchWait.Milliseconds()
	}
	if f.disabled || f.enable {
		b["disabled"] = f.disabled
	}
	return nil
}

func newWebhooksCreateCmd(g *globals) *cobra.Command {
	var f webhookFlags
	cmd := &cobra.Command{
		Use:   "create <url> --type <type> [--type <type>...]",
		Short: "Create a webhook endpoint; its secret is shown this once (POST <api>/webhooks)",
		Long: `Create a webhook endpoint that gets the events of the types given,
recorded from then on. The answer holds the endpoint's signing secret
(whsec_...), shown this once: keep it where the receiver verifies
signatures. 'webhooks rotate' makes a new one.`,
		Example: `  caddy shortener webhooks create https://hooks.example.com/sho --type link.created --type click --tag campaign
  caddy shortener webhooks create https://hooks.example.com/clicks --type click --batch 100 --batch-wait 2s`,
		Args: cobra.ExactArgs(1),
	}
	f.register(cmd.Flags(), false)
	cmd.RunE = runE(func(cmd *cobra.Command, args []string) error {
		if !cmd.Flags().Changed("type") {
			return usageErr("--type is required: one or more of %s", strings.Join(webhookTypes, ", "))
		}
		req := map[string]any{"url": args[0]}
		if err := f.fields(cmd.Flags().Changed, req); err != nil {
			return err
		}
		return sendAndPrint(cmd, g, http.MethodPost, "/webhooks", req, nil, g.printWebhook)
	})
	return cmd
}

func newWebhooksGetCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "get <id>",
		Short: "Show a webhook endpoint, never its secret (GET <api>/webhooks/<id>)",
		Args:  cobra.ExactArgs(1),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			return sendAndPrint(cmd, g, http.MethodGet, webhookPath(args[0]), nil, nil, g.printWebhook)
		}),
	}
}

func newWebhooksEditCmd(g *globals) *cobra.Command {
	var f webhookFlags
	cmd := &cobra.Command{
		Use:   "edit <id>",
		Short: "Change a webhook endpoint (PATCH <api>/webhooks/<id>)",
		Long: `Change a webhook endpoint with a JSON Merge Patch of the flags given.
--type, --tag and --code replace the whole list; --clear-tags and
--clear-codes remove a filter, --description '' the description.
--enable sends the events recorded from then on again.`,
		Args: cobra.ExactArgs(1),
	}
	f.register(cmd.Flags(), true)
	cmd.RunE = runE(func(cmd *cobra.Command, args []string) error {
		patch := map[string]any{}
		if err := f.fields(cmd.Flags().Changed, patch); err != nil {
			return err
		}
		if len(patch) == 0 {
			return usageErr("nothing to change: give at least one of --url, --type, --description, --tag, --code, --clear-tags, --clear-codes, --batch, --batch-wait, --enable, --disable")
		}
		return sendAndPrint(cmd, g, http.MethodPatch, webhookPath(args[0]), patch, mergePatch, g.printWebhook)
	})
	return cmd
}

func newWebhooksDeleteCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "delete <id>",
		Short: "Delete a webhook endpoint, its messages and their attempts (DELETE <api>/webhooks/<id>)",
		Args:  cobra.ExactArgs(1),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			resp, err := c.request(ctxOf(cmd), http.MethodDelete, webhookPath(args[0]), nil, nil, nil)
			if err != nil {
				return err
			}
			resp.Body.Close()
			if g.json {
				return writeJSONLine(cmd.OutOrStdout(), map[string]any{"id": args[0], "deleted": true})
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "deleted %s\n", Sanitize(args[0]))
			return err
		}),
	}
}

func newWebhooksRotateCmd(g *globals) *cobra.Command {
	var grace time.Duration
	cmd := &cobra.Command{
		Use:   "rotate <id>",
		Short: "Give a webhook endpoint a new secret, shown this once (POST <api>/webhooks/<id>/rotate)",
		Long: `Give a webhook endpoint a new signing secret, shown this once. The
current secret keeps signing beside it for --grace, so the receiver can
switch over without losing a message.`,
		Args: cobra.ExactArgs(1),
	}
	cmd.Flags().DurationVar(&grace, "grace", 24*time.Hour, "how long the current secret keeps signing, in whole seconds (0 to 168h)")
	cmd.RunE = runE(func(cmd *cobra.Command, args []string) error {
		if grace < 0 || grace > maxWebhookGrace || grace%time.Second != 0 {
			return usageErr("--grace must be 0 to 168h, in whole seconds")
		}
		req := map[string]int64{"grace_seconds": int64(grace / time.Second)}
		return sendAndPrint(cmd, g, http.MethodPost, webhookPath(args[0], "/rotate"), req, nil, g.printWebhook)
	})
	return cmd
}

// printWebhook prints one endpoint: its JSON as the API answered it with
// --json, else a table, and the secret, when the answer holds one, below
// it with the note that it is shown once.
func (g *globals) printWebhook(cmd *cobra.Command, e *raw[Webhook]) error {
	out := cmd.OutOrStdout()
	if g.json {
		_, err := out.Write(append(compactJSON(e.raw), '\n'))
		return err
	}
	if err := writeWebhookTable(out, &e.v); err != nil {
		return err
	}
	if e.v.Secret == "" {
		return nil
	}
	_, err := fmt.Fprintf(out, "\nsecret  %s\n\nThe secret is shown this once: keep it now where the receiver verifies signatures.\n", Sanitize(e.v.Secret))
	return err
}

// writeWebhookTable writes one endpoint as field / value rows.
func writeWebhookTable(w io.Writer, e *Webhook) error {
	t := newTable(w, false)
	t.row("id", e.ID)
	t.row("url", e.URL)
	t.row("state", e.state())
	t.row("types", strings.Join(e.Types, " "))
	if e.Description != "" {
		t.row("description", e.Description)
	}
	t.row("tags", cellTags(e.Tags))
	t.row("codes", cellTags(e.Codes))
	if e.Batch > 1 {
		t.row("batch", fmt.Sprintf("%d clicks or %s", e.Batch, time.Duration(e.BatchWaitMS)*time.Millisecond))
	}
	t.row("keys", e.keys())
	t.row("created_at", cellTime(&e.CreatedAt))
	t.row("updated_at", cellTime(&e.UpdatedAt))
	t.row("version", strconv.FormatInt(e.Version, 10))
	return t.flush()
}
