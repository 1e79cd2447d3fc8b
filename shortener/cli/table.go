package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"
)

// table writes aligned columns; every cell goes through Sanitize, and on
// a terminal long cells are shortened to width runes.
type table struct {
	tw    *tabwriter.Writer
	width int // 0: cells are not shortened
}

func newTable(w io.Writer, shorten bool) *table {
	t := &table{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
	if shorten {
		t.width = 60
	}
	return t
}

// row writes one row of cells.
func (t *table) row(cells ...string) {
	for i, c := range cells {
		c = Sanitize(c)
		if t.width > 0 && utf8.RuneCountInString(c) > t.width {
			c = string([]rune(c)[:t.width-1]) + "…"
		}
		cells[i] = strings.ReplaceAll(c, "\t", " ")
	}
	fmt.Fprintln(t.tw, strings.Join(cells, "\t"))
}

func (t *table) flush() error { return t.tw.Flush() }

// cellTime formats a time for a table: RFC 3339 UTC to the second, "-"
// for none.
func cellTime(tm *time.Time) string {
	if tm == nil {
		return "-"
	}
	return tm.UTC().Format(time.RFC3339)
}

func cellStr(s *string) string {
	if s == nil {
		return "-"
	}
	return *s
}

func cellInt(n *int64) string {
	if n == nil {
		return "-"
	}
	return strconv.FormatInt(*n, 10)
}

func cellTags(tags []string) string {
	if len(tags) == 0 {
		return "-"
	}
	return strings.Join(tags, " ")
}

// writeLinkTable writes one link as field / value rows.
func writeLinkTable(w io.Writer, l *Link, now time.Time) error {
	t := newTable(w, false)
	t.row("code", l.Code)
	if l.Domain != "" {
		t.row("domain", l.Domain)
	}
	t.row("short_url", l.ShortURL)
	t.row("long_url", l.LongURL)
	t.row("status", l.status(now))
	t.row("created_at", cellTime(&l.CreatedAt))
	t.row("expires_at", cellTime(l.ExpiresAt))
	if l.RevokedAt != nil {
		t.row("revoked_at", cellTime(l.RevokedAt))
	}
	t.row("title", cellStr(l.Title))
	t.row("tags", cellTags(l.Tags))
	t.row("notes", cellStr(l.Notes))
	if l.RedirectStatus != nil {
		t.row("redirect_status", strconv.Itoa(*l.RedirectStatus))
	}
	if l.ValidFrom != nil {
		t.row("valid_from", cellTime(l.ValidFrom))
	}
	if l.MaxClicks != nil {
		t.row("max_clicks", cellInt(l.MaxClicks))
		t.row("remaining_clicks", cellInt(l.RemainingClicks))
	}
	if l.ForwardQuery != nil {
		t.row("forward_query", strconv.FormatBool(*l.ForwardQuery))
	}
	if l.Clicks != nil {
		t.row("clicks", cellInt(l.Clicks))
	}
	if l.Warning != "" {
		t.row("warning", l.Warning)
	}
	return t.flush()
}

// linkHeader and linkRow are the columns of a list of links.
var linkHeader = []string{"CODE", "STATUS", "CLICKS", "CREATED", "LONG URL", "TITLE", "TAGS"}

func linkRow(l *Link, now time.Time) []string {
	return []string{l.Code, l.status(now), cellInt(l.Clicks), cellTime(&l.CreatedAt), l.LongURL, cellStr(l.Title), cellTags(l.Tags)}
}
