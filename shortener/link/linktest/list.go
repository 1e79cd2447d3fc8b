package linktest

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// testLinkLister checks LinkLister on an empty store s: every status and
// sort walked page by page against the order computed here, q and tag
// filters, click totals (kept through retention) and bad cursors.
func testLinkLister(t *testing.T, ctx context.Context, h Harness, s link.Store, base time.Time) {
	t.Helper()
	ll := implementing[link.LinkLister](t, s)
	now := base.Add(10 * time.Hour)
	links := listFixture(base, now)
	for _, l := range links {
		if err := s.Create(ctx, l); err != nil {
			t.Fatalf("Create(%q): %v", l.Code, err)
		}
	}
	clicks := map[string]int64{"alpha-1": 5, "beta-2": 2, "tie-b": 2, "gone-rev": 9}
	if h.Clicks == nil {
		t.Fatal("linktest: the store lists links but Harness.Clicks is nil")
	}
	sink := h.Clicks(t, s)
	if err := sink.Add(ctx, clicks, now.Add(-2*time.Hour)); err != nil {
		t.Fatalf("adding clicks: %v", err)
	}

	for _, l := range links {
		if got := link.Status(l, now); got != listFixtureStatus[l.Code] {
			t.Errorf("linkStatus(%s) = %s, want %s", l.Code, got, listFixtureStatus[l.Code])
		}
	}
	for _, status := range []string{link.StatusActive, link.StatusExpired, link.StatusRevoked, link.StatusExhausted, link.StatusScheduled, link.StatusAll} {
		for _, sort := range []string{link.SortCreated, link.SortCreatedDesc, link.SortClicks, link.SortClicksDesc} {
			for _, limit := range []int{1, 2, 1000} {
				q := link.ListQuery{Status: status, Sort: sort, Limit: limit, Now: now}
				want := expectListing(links, clicks, q)
				got := walkListing(t, ctx, ll, q)
				if !slices.Equal(got, want) {
					t.Errorf("status=%s sort=%s limit=%d: %q, want %q", status, sort, limit, got, want)
				}
			}
		}
	}
	checkSearches(t, ctx, ll, links, clicks, now)
	if h.Tunings != nil {
		settings, reset := h.Tunings(s)
		for _, set := range settings {
			set()
			checkSearches(t, ctx, ll, links, clicks, now)
		}
		reset()
	}
	checkListedLinks(t, ctx, ll, s, sink, clicks, now)
	checkBadCursors(t, ctx, ll, now)
	checkTagEdits(t, ctx, s, links, clicks, now)
}

// checkSearches walks q and tag listings of the fixture, two links a page,
// in every order.
func checkSearches(t *testing.T, ctx context.Context, ll link.LinkLister, links []link.Link, clicks map[string]int64, now time.Time) {
	t.Helper()
	for _, q := range []link.ListQuery{
		{Q: "EXAMPLE.ORG"}, {Q: "über"}, {Q: "ÜBER"}, {Q: "50%"}, {Q: "a_b"}, {Q: `x\y`}, {Q: "alp"},
		{Q: "nowhere-at-all"}, {Q: "-1https"}, {Tag: "blue"}, {Tag: "Blue"}, {Tag: "blue", Q: "beta"},
		{Tag: "red", Status: link.StatusAll}, {Q: "gone", Status: link.StatusRevoked}, {Q: "example", Status: link.StatusAll},
		{Q: "https", Tag: "red", Status: link.StatusAll}, {Q: "example.net", Status: link.StatusExpired},
	} {
		for _, sort := range []string{link.SortCreatedDesc, link.SortCreated, link.SortClicksDesc, link.SortClicks} {
			q.Now, q.Limit, q.Sort = now, 2, sort
			want := expectListing(links, clicks, q)
			if got := walkListing(t, ctx, ll, q); !slices.Equal(got, want) {
				t.Errorf("q=%q tag=%q status=%q sort=%s: %q, want %q", q.Q, q.Tag, q.Status, sort, got, want)
			}
		}
	}
}

// checkTagEdits changes the tags of a fixture link and checks that tag
// listings follow (PostgreSQL keeps a tag's links in a table of their own).
func checkTagEdits(t *testing.T, ctx context.Context, s link.Store, links []link.Link, clicks map[string]int64, now time.Time) {
	t.Helper()
	e := editor(t, s)
	edit := func(code string, tags []string) {
		t.Helper()
		if _, err := e.Edit(ctx, code, link.Edit{Apply: func(l *link.Link) error { l.Tags = tags; return nil }, Key: "test", At: now}); err != nil {
			t.Fatalf("Edit(%s, tags %q): %v", code, tags, err)
		}
		for i := range links {
			if links[i].Code == code {
				links[i].Tags = tags
			}
		}
	}
	edit("alpha-1", []string{"red", "green"})
	edit("tie-b", []string{"blue", "green"})
	edit("beta-2", nil)
	for _, tag := range []string{"blue", "red", "green", "Blue"} {
		for _, sort := range []string{link.SortCreatedDesc, link.SortCreated} {
			q := link.ListQuery{Tag: tag, Status: link.StatusAll, Sort: sort, Limit: 1, Now: now}
			want := expectListing(links, clicks, q)
			if got := walkListing(t, ctx, implementing[link.LinkLister](t, s), q); !slices.Equal(got, want) {
				t.Errorf("after tag edits, tag=%q sort=%s: %q, want %q", tag, sort, got, want)
			}
		}
	}
}

// implementing returns s as the interface I, or fails the test.
func implementing[I any](t *testing.T, s link.Store) I {
	t.Helper()
	i, ok := s.(I)
	if !ok {
		var want *I
		t.Fatalf("%T does not implement %T", s, want)
	}
	return i
}

// listFixture: creation times with ties, each status, metadata to search.
func listFixture(base, now time.Time) []link.Link {
	return []link.Link{
		{Code: "alpha-1", LongURL: "https://example.org/a", CreatedAt: base, Title: "Title-1", Tags: []string{"blue", "red"}},
		{Code: "beta-2", LongURL: "https://example.com/b?x=50%25", CreatedAt: base.Add(time.Hour), Title: "Straße Über alles 50%", Tags: []string{"blue"}},
		{Code: "tie-b", LongURL: "https://example.com/a_b", CreatedAt: base.Add(2 * time.Hour)},
		{Code: "tie-a", LongURL: `https://example.com/x\y`, CreatedAt: base.Add(2 * time.Hour), Title: "a_b"},
		{Code: "tie-C", LongURL: "https://example.com/50x", CreatedAt: base.Add(2 * time.Hour), Tags: []string{"Blue"}},
		{Code: "old-exp", LongURL: "https://example.net/e", CreatedAt: base.Add(-time.Hour), ExpiresAt: now.Add(-time.Minute), Tags: []string{"red"}},
		{Code: "at-exp", LongURL: "https://example.net/n", CreatedAt: base.Add(3 * time.Hour), ExpiresAt: now},
		{Code: "later-exp", LongURL: "https://example.net/l", CreatedAt: base.Add(4 * time.Hour), ExpiresAt: now.Add(time.Minute)},
		{Code: "gone-rev", LongURL: "https://example.net/r", CreatedAt: base.Add(5 * time.Hour), RevokedAt: base.Add(6 * time.Hour)},
		{Code: "gone-both", LongURL: "https://example.net/rb", CreatedAt: base.Add(-2 * time.Hour), ExpiresAt: now.Add(-time.Hour), RevokedAt: base},
		{Code: "soon", LongURL: "https://example.net/s", CreatedAt: base.Add(7 * time.Hour), ValidFrom: now.Add(time.Minute)},
		{Code: "started", LongURL: "https://example.net/st", CreatedAt: base.Add(7 * time.Hour), ValidFrom: now},
		{Code: "spent", LongURL: "https://example.net/sp", CreatedAt: base.Add(8 * time.Hour), MaxClicks: 2, ClicksServed: 2},
		{Code: "spent-soon", LongURL: "https://example.net/ss", CreatedAt: base.Add(8 * time.Hour), MaxClicks: 1, ClicksServed: 1, ValidFrom: now.Add(time.Hour)},
		{Code: "spent-exp", LongURL: "https://example.net/se", CreatedAt: base.Add(9 * time.Hour), MaxClicks: 1, ClicksServed: 1, ExpiresAt: now.Add(-time.Second)},
		{Code: "left", LongURL: "https://example.net/le", CreatedAt: base.Add(9 * time.Hour), MaxClicks: 2, ClicksServed: 1},
	}
}

// listFixtureStatus is each fixture link's status at now, written out so
// the stores' filters are checked against the precedence revoked, expired,
// exhausted, scheduled, active rather than against Status alone.
var listFixtureStatus = map[string]string{
	"alpha-1": link.StatusActive, "beta-2": link.StatusActive, "tie-b": link.StatusActive, "tie-a": link.StatusActive,
	"tie-C": link.StatusActive, "later-exp": link.StatusActive, "started": link.StatusActive, "left": link.StatusActive,
	"old-exp": link.StatusExpired, "at-exp": link.StatusExpired, "spent-exp": link.StatusExpired,
	"gone-rev": link.StatusRevoked, "gone-both": link.StatusRevoked,
	"soon": link.StatusScheduled, "spent": link.StatusExhausted, "spent-soon": link.StatusExhausted,
}

// expectListing is the listing of q computed from the fixture: codes in
// order.
func expectListing(links []link.Link, clicks map[string]int64, q link.ListQuery) []string {
	q = q.Normalized()
	var keep []link.Link
	for _, l := range links {
		if listed(l, q) {
			keep = append(keep, l)
		}
	}
	slices.SortFunc(keep, func(a, b link.Link) int {
		c := a.CreatedAt.Compare(b.CreatedAt)
		if q.ByClicks() {
			c = cmp.Compare(clicks[a.Code], clicks[b.Code])
		}
		c = cmp.Or(c, strings.Compare(a.Code, b.Code))
		if q.Descending() {
			return -c
		}
		return c
	})
	codes := []string{}
	for _, l := range keep {
		codes = append(codes, l.Code)
	}
	return codes
}

// listed says whether q lists l: its status (or all), its tag exactly,
// and q as a case-insensitive substring of the code, long URL or title.
func listed(l link.Link, q link.ListQuery) bool {
	if q.Status != link.StatusAll && link.Status(l, q.Now) != q.Status {
		return false
	}
	if q.Tag != "" && !slices.Contains(l.Tags, q.Tag) {
		return false
	}
	lower := strings.ToLower(q.Q)
	return strings.Contains(strings.ToLower(l.Code), lower) ||
		strings.Contains(strings.ToLower(l.LongURL), lower) ||
		strings.Contains(strings.ToLower(l.Title), lower)
}

// walkListing follows the cursors of q from the first page to the last
// and returns the codes in order.
func walkListing(t *testing.T, ctx context.Context, ll link.LinkLister, q link.ListQuery) []string {
	t.Helper()
	codes := []string{}
	for pages := 0; ; pages++ {
		page, err := ll.ListLinks(ctx, q)
		if err != nil {
			t.Fatalf("ListLinks(%+v): %v", q, err)
		}
		if len(page.Links) > q.Normalized().Limit || (page.NextCursor != "" && len(page.Links) == 0) || pages > 100 {
			t.Fatalf("ListLinks(%+v): %d links, next %q", q, len(page.Links), page.NextCursor)
		}
		for _, l := range page.Links {
			codes = append(codes, l.Code)
		}
		if page.NextCursor == "" {
			return codes
		}
		q.Cursor = page.NextCursor
	}
}

// checkListedLinks compares each listed link with Get and its click total
// with ClickTotal, also after retention pruned every hourly row.
func checkListedLinks(t *testing.T, ctx context.Context, ll link.LinkLister, s link.Store, sink Clicks, perCode map[string]int64, now time.Time) {
	t.Helper()
	check := func(when string) {
		page, err := ll.ListLinks(ctx, link.ListQuery{Status: link.StatusAll, Limit: link.MaxListLimit, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range page.Links {
			got, err := s.Get(ctx, l.Code)
			if err != nil {
				t.Fatal(err)
			}
			AssertLink(t, l.Link, got)
			total, err := sink.Total(ctx, l.Code)
			if err != nil || l.Clicks != perCode[l.Code] || total != l.Clicks {
				t.Errorf("%s: listed %q with %d perCode, ClickTotal %d (%v); want %d", when, l.Code, l.Clicks, total, err, perCode[l.Code])
			}
		}
	}
	check("before retention")
	if err := sink.PruneAll(ctx, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	check("after retention pruned every hourly row")
}

// checkBadCursors: garbage, tampered and foreign cursors are ErrBadCursor.
func checkBadCursors(t *testing.T, ctx context.Context, ll link.LinkLister, now time.Time) {
	t.Helper()
	page, err := ll.ListLinks(ctx, link.ListQuery{Status: link.StatusAll, Limit: 1, Now: now})
	if err != nil || page.NextCursor == "" {
		t.Fatalf("first page: %v, next %q", err, page.NextCursor)
	}
	good := page.NextCursor
	for _, c := range []struct{ sort, cursor string }{
		{link.SortCreatedDesc, "garbage!"},
		{link.SortCreatedDesc, good[:len(good)-2]},
		{link.SortCreatedDesc, "x" + good},
		{link.SortCreated, good},
		{link.SortClicks, good},
		{link.SortCreatedDesc, strings.Repeat("A", link.MaxCursorLen+4)},
		{link.SortCreatedDesc, link.EncodeCursor(link.SortCreatedDesc, link.ListedLink{Link: link.Link{Code: "bad code", CreatedAt: now}})},
		{link.SortClicksDesc, link.EncodeCursor(link.SortClicksDesc, link.ListedLink{Link: link.Link{Code: "abc"}, Clicks: -1})},
	} {
		_, err := ll.ListLinks(ctx, link.ListQuery{Status: link.StatusAll, Sort: c.sort, Cursor: c.cursor, Now: now})
		if !errors.Is(err, link.ErrBadCursor) {
			t.Errorf("ListLinks(sort %s, cursor %q) = %v, want ErrBadCursor", c.sort, c.cursor, err)
		}
	}
}
