package cli

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/spf13/cobra"
)

// listFlags map to the listing's query parameters.
type listFlags struct {
	search, tag, status, sort string
	limit, pageSize           int
}

func newListCmd(g *globals) *cobra.Command {
	var f listFlags
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List and search links, following the pages (GET <api>/links)",
		Args:  cobra.NoArgs,
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.search, "search", "q", "", "keep links whose code, long URL or title contains this (3 to 200 characters)")
	fl.StringVar(&f.tag, "tag", "", "keep links carrying this tag")
	fl.StringVar(&f.status, "status", "", "active (default), expired, revoked, exhausted, scheduled or all")
	fl.StringVar(&f.sort, "sort", "", "-created (default), created, clicks or -clicks")
	fl.IntVar(&f.limit, "limit", 0, "stop after this many links (0: all)")
	fl.IntVar(&f.pageSize, "page-size", 100, "links a request, 1 to 1000")
	cmd.RunE = runE(func(cmd *cobra.Command, _ []string) error {
		if f.limit < 0 || f.pageSize < 1 || f.pageSize > 1000 {
			return usageErr("--limit must be 0 or more, --page-size 1 to 1000")
		}
		c, err := g.client()
		if err != nil {
			return err
		}
		return g.listLinks(cmd, c, &f)
	})
	return cmd
}

// listPage is one page of the listing.
type listPage struct {
	Links      []rawLink `json:"links"`
	NextCursor *string   `json:"next_cursor"`
}

// listLinks walks the pages, printing each as it arrives (memory holds
// one page), until the last page or --limit.
func (g *globals) listLinks(cmd *cobra.Command, c *client, f *listFlags) error {
	out := cmd.OutOrStdout()
	t := newTable(out, g.env.IsTerminal(out))
	if !g.json {
		t.row(linkHeader...)
	}
	shown, cursor := 0, ""
	for {
		page, err := c.listPage(ctxOf(cmd), f, cursor)
		if err != nil {
			return err
		}
		for i := range page.Links {
			if f.limit > 0 && shown == f.limit {
				return t.flush()
			}
			shown++
			if g.json {
				if _, err := out.Write(append(compactJSON(page.Links[i].raw), '\n')); err != nil {
					return err
				}
				continue
			}
			t.row(linkRow(&page.Links[i].Link, now())...)
		}
		if err := t.flush(); err != nil {
			return err
		}
		if page.NextCursor == nil || *page.NextCursor == "" || (f.limit > 0 && shown == f.limit) {
			return nil
		}
		cursor = *page.NextCursor
	}
}

// listPage asks for one page.
func (c *client) listPage(ctx context.Context, f *listFlags, cursor string) (*listPage, error) {
	q := url.Values{}
	for k, v := range map[string]string{"q": f.search, "tag": f.tag, "status": f.status, "sort": f.sort, "cursor": cursor} {
		if v != "" {
			q.Set(k, v)
		}
	}
	size := f.pageSize
	if f.limit > 0 && f.limit < size {
		size = f.limit
	}
	q.Set("limit", strconv.Itoa(size))
	var page listPage
	_, err := c.getJSON(ctx, http.MethodGet, "/links", q, nil, nil, &page)
	return &page, err
}
