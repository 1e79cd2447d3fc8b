package shortener

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// listResponse is the answer of GET <api>/links.
type listResponse struct {
	Links []link.Response `json:"links"`
	// NextCursor continues the listing; null on the last page.
	NextCursor *string `json:"next_cursor"`
}

// lister returns the handler's store as a LinkLister, or nil.
func (h *Handler) lister() link.LinkLister {
	s := h.store
	if sh, ok := s.(sharedStore); ok {
		s = sh.Store
	}
	ll, _ := s.(link.LinkLister)
	return ll
}

// apiList answers GET <api>/links?q=&tag=&status=&sort=&limit=&cursor=.
func (h *Handler) apiList(w http.ResponseWriter, r *http.Request) error {
	q, err := parseListQuery(r.URL.RawQuery)
	if err != nil {
		return err
	}
	ll := h.lister()
	if ll == nil {
		return apiErr(http.StatusNotImplemented, "this store cannot list links")
	}
	q.Now, q.Domain = h.now(), domainIn(r.Context())
	ctx, cancel := context.WithTimeout(r.Context(), apiTimeout)
	defer cancel()
	page, err := ll.ListLinks(ctx, q)
	if errors.Is(err, link.ErrBadCursor) {
		return apiErr(http.StatusBadRequest, "%v", err)
	}
	if err != nil {
		return h.storeErr(err)
	}
	out := listResponse{Links: make([]link.Response, 0, len(page.Links))}
	for _, l := range page.Links {
		out.Links = append(out.Links, h.listedResponse(r, l))
	}
	if page.NextCursor != "" {
		out.NextCursor = &page.NextCursor
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// listedResponse is a listed link as GET <api>/links/<code> shows it,
// clicks included when clicks are counted.
func (h *Handler) listedResponse(r *http.Request, l link.ListedLink) link.Response {
	out := h.response(r, l.Link)
	if h.clicks != nil {
		n := l.Clicks
		out.Clicks = &n
	}
	return out
}

// parseListQuery judges the query string of GET <api>/links, which
// checkQuery passed (each parameter once, none empty). Each bad value is
// a 400 naming its parameter. Parameters it does not know are ignored, as
// Shlink and Dub do (clients add cache busters and tracking parameters).
func parseListQuery(raw string) (link.ListQuery, error) {
	vals, err := url.ParseQuery(raw)
	if err != nil {
		return link.ListQuery{}, apiErr(http.StatusBadRequest, "query string: %v", err)
	}
	var q link.ListQuery
	for _, p := range []struct {
		name  string
		check func(string) error
	}{
		{"q", func(v string) error { q.Q = v; return checkListQ(v) }},
		{"tag", func(v string) error { q.Tag = v; return checkListTag(v) }},
		{"status", func(v string) error { q.Status = v; return checkListStatus(v) }},
		{"sort", func(v string) error { q.Sort = v; return checkListSort(v) }},
		{"limit", func(v string) (err error) { q.Limit, err = parseListLimit(v); return err }},
		{"cursor", func(v string) error { q.Cursor = v; return nil }},
	} {
		v := vals.Get(p.name) // once, and "" only when absent: checkQuery
		if v == "" {
			continue
		}
		if err := p.check(v); err != nil {
			return link.ListQuery{}, err
		}
	}
	return q, nil
}

func checkListQ(v string) error {
	if err := link.CheckText("q", v, link.MaxListQuery, false); err != nil {
		return apiErr(http.StatusBadRequest, "%v", err)
	}
	if n := len([]rune(v)); n < link.MinListQuery {
		return apiErr(http.StatusBadRequest, "q is %d characters long, at least %d are required", n, link.MinListQuery)
	}
	return nil
}

func checkListTag(v string) error {
	if err := link.CheckMetadata("", []string{v}, ""); err != nil {
		return apiErr(http.StatusBadRequest, "tag: a tag is 1 to %d of A-Z a-z 0-9 _ . : -", link.MaxTagLen)
	}
	return nil
}

func checkListStatus(v string) error {
	switch v {
	case link.StatusActive, link.StatusExpired, link.StatusRevoked, link.StatusExhausted, link.StatusScheduled, link.StatusAll:
		return nil
	}
	return apiErr(http.StatusBadRequest, "status must be active, expired, revoked, exhausted, scheduled or all")
}

func checkListSort(v string) error {
	switch v {
	case link.SortCreated, link.SortCreatedDesc, link.SortClicks, link.SortClicksDesc:
		return nil
	}
	return apiErr(http.StatusBadRequest, "sort must be created, -created, clicks or -clicks")
}

func parseListLimit(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > link.MaxListLimit {
		return 0, apiErr(http.StatusBadRequest, "limit must be an integer from 1 to %d", link.MaxListLimit)
	}
	return n, nil
}
