package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/spf13/cobra"
)

func newWebhooksMessagesCmd(g *globals) *cobra.Command {
	var (
		state, before string
		limit         int
		all           bool
	)
	cmd := &cobra.Command{
		Use:   "messages <id>",
		Short: "List a webhook endpoint's messages, newest first (GET <api>/webhooks/<id>/messages)",
		Long: `List a webhook endpoint's messages, newest first: a page of --limit,
or with --all every page. Without --all, the id to give --before for the
next page is printed on standard error.`,
		Args: cobra.ExactArgs(1),
	}
	fl := cmd.Flags()
	fl.StringVar(&state, "state", "", "keep messages in this state: pending, delivered or failed")
	fl.StringVar(&before, "before", "", "start after this message id (the next page)")
	fl.IntVar(&limit, "limit", 50, "messages a page, 1 to 200")
	fl.BoolVar(&all, "all", false, "follow the pages to the oldest message")
	cmd.RunE = runE(func(cmd *cobra.Command, args []string) error {
		switch state {
		case "", "pending", "delivered", "failed":
		default:
			return usageErr("--state must be pending, delivered or failed")
		}
		if limit < 1 || limit > maxWebhookMessages {
			return usageErr("--limit must be 1 to %d", maxWebhookMessages)
		}
		c, err := g.client()
		if err != nil {
			return err
		}
		out := cmd.OutOrStdout()
		t := newTable(out, g.env.IsTerminal(out))
		if !g.json {
			t.row("ID", "TYPE", "STATE", "ATTEMPTS", "EVENTS", "AT", "NEXT ATTEMPT")
		}
		q := url.Values{"limit": {strconv.Itoa(limit)}}
		if state != "" {
			q.Set("state", state)
		}
		for {
			if before != "" {
				q.Set("before", before)
			}
			var page struct {
				Messages []raw[WebhookMessage] `json:"messages"`
				Next     string                `json:"next"`
			}
			if _, err := c.getJSON(ctxOf(cmd), http.MethodGet, webhookPath(args[0], "/messages"), q, nil, nil, &page); err != nil {
				return err
			}
			for _, m := range page.Messages {
				if g.json {
					if _, err := out.Write(append(compactJSON(m.raw), '\n')); err != nil {
						return err
					}
					continue
				}
				t.row(m.v.ID, m.v.Type, m.v.State, strconv.Itoa(m.v.Attempts), strconv.Itoa(m.v.Events), cellTime(&m.v.At), cellTime(m.v.NextAt))
			}
			if err := t.flush(); err != nil {
				return err
			}
			if page.Next == "" {
				return nil
			}
			if !all {
				fmt.Fprintf(cmd.ErrOrStderr(), "more: --before %s, or --all\n", Sanitize(page.Next))
				return nil
			}
			before = page.Next
		}
	})
	return cmd
}

func newWebhooksMessageCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "message <id> <message>",
		Short: "Show a message: its body as sent and its attempts (GET <api>/webhooks/<id>/messages/<message>)",
		Args:  cobra.ExactArgs(2),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			var m raw[WebhookMessage]
			if _, err := c.getJSON(ctxOf(cmd), http.MethodGet, webhookPath(args[0], "/messages/", url.PathEscape(args[1])), nil, nil, nil, &m); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if g.json {
				_, err := out.Write(append(compactJSON(m.raw), '\n'))
				return err
			}
			return writeMessage(out, &m.v)
		}),
	}
}

// writeMessage writes a message as field / value rows, its body, and a
// table of its attempts.
func writeMessage(w io.Writer, m *WebhookMessage) error {
	t := newTable(w, false)
	t.row("id", m.ID)
	t.row("type", m.Type)
	t.row("state", m.State)
	t.row("at", cellTime(&m.At))
	t.row("events", strconv.Itoa(m.Events))
	t.row("attempts", strconv.Itoa(m.Attempts))
	if m.NextAt != nil {
		t.row("next_attempt", cellTime(m.NextAt))
	}
	if err := t.flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nbody\n%s\n\n", Sanitize(m.Body))
	t = newTable(w, false)
	t.row("N", "AT", "STATUS", "LATENCY", "ERROR", "ANSWER")
	for _, a := range m.AttemptLog {
		status := "-"
		if a.Status != 0 {
			status = strconv.Itoa(a.Status)
		}
		errMsg := a.Error
		if errMsg == "" {
			errMsg = "-"
		}
		t.row(strconv.Itoa(a.N), cellTime(&a.At), status, strconv.FormatFloat(a.LatencyMS, 'f', 1, 64)+"ms", errMsg, a.Body)
	}
	return t.flush()
}

func newWebhooksReplayCmd(g *globals) *cobra.Command {
	var since string
	cmd := &cobra.Command{
		Use:   "replay <id> (<message> | --since <time>)",
		Short: "Send a message again, or every message since a time (POST <api>/webhooks/<id>/.../replay)",
		Long: `Send one message again, or with --since every message of the endpoint
made since then: same id, same body, a new series of attempts. --since is
an RFC 3339 time or a duration back from now (2h).`,
		Example: `  caddy shortener webhooks replay ep_01kbs... msg_01kbs...
  caddy shortener webhooks replay ep_01kbs... --since 2h`,
		Args: cobra.RangeArgs(1, 2),
	}
	cmd.Flags().StringVar(&since, "since", "", "replay every message made since this RFC 3339 time, or this long ago (2h)")
	cmd.RunE = runE(func(cmd *cobra.Command, args []string) error {
		if (len(args) == 2) == cmd.Flags().Changed("since") {
			return usageErr("give a message id or --since, one of the two")
		}
		path, body := webhookPath(args[0], "/replay"), []byte(nil)
		if len(args) == 2 {
			path = webhookPath(args[0], "/messages/", url.PathEscape(args[1]), "/replay")
		} else {
			if d, err := time.ParseDuration(since); err == nil {
				if d < 0 {
					return usageErr("--since: a duration back from now must not be negative")
				}
				since = now().Add(-d).UTC().Format(time.RFC3339Nano)
			}
			body, _ = json.Marshal(map[string]string{"since": since})
		}
		c, err := g.client()
		if err != nil {
			return err
		}
		var r raw[struct {
			Replayed int `json:"replayed"`
		}]
		if _, err := c.getJSON(ctxOf(cmd), http.MethodPost, path, nil, body, nil, &r); err != nil {
			return err
		}
		if g.json {
			_, err := cmd.OutOrStdout().Write(append(compactJSON(r.raw), '\n'))
			return err
		}
		noun := "messages"
		if r.v.Replayed == 1 {
			noun = "message"
		}
		_, err = fmt.Fprintf(cmd.OutOrStdout(), "replayed %d %s\n", r.v.Replayed, noun)
		return err
	})
	return cmd
}
