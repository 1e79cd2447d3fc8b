package shortener

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// History pages: limit's default and bound.
const (
	defaultHistoryLimit = 50
	maxHistoryLimit     = 500
)

// historyEntry is one change as GET <api>/links/<code>/history shows it.
type historyEntry struct {
	// Version is the link version (ETag) the change produced.
	Version int64     `json:"version"`
	At      time.Time `json:"at"`
	// Key is the fingerprint of the API key that made the change
	// (keyFingerprint).
	Key string `json:"key"`
	// Changes holds each changed field's old and new value ("from", "to"),
	// null for none.
	Changes map[string]link.Change `json:"changes"`
}

type historyResponse struct {
	History []historyEntry `json:"history"`
	// NextCursor fetches the next (older) page; null on the last one.
	NextCursor *string `json:"next_cursor"`
}

// apiHistory answers GET <api>/links/<code>/history?limit=&cursor=: the
// link's edits, newest first, limit a page (default 50, 1 to 500), cursor
// the next_cursor of the page before. Revocation raises the version but is
// no entry (revoked_at shows it); the creation is no entry either (the
// first edit's "from" values are the link as created).
func (h *Handler) apiHistory(w http.ResponseWriter, r *http.Request, code string) error {
	if !validKey(code) {
		return apiErr(http.StatusNotFound, "link not found")
	}
	limit, before, err := historyParams(r)
	if err != nil {
		return err
	}
	editor, ok := h.editor()
	if !ok {
		return apiErr(http.StatusNotImplemented, "this link store keeps no history")
	}
	ctx, cancel := context.WithTimeout(r.Context(), apiTimeout)
	defer cancel()
	entries, err := editor.History(ctx, code, before, limit+1)
	if errors.Is(err, link.ErrNotFound) {
		return apiErr(http.StatusNotFound, "link not found")
	}
	if err != nil {
		return h.storeErr(err)
	}
	out := historyResponse{History: make([]historyEntry, 0, min(len(entries), limit))}
	for i, e := range entries {
		if i == limit {
			next := strconv.FormatInt(entries[i-1].Version, 10)
			out.NextCursor = &next
			break
		}
		out.History = append(out.History, historyEntry{Version: e.Version, At: e.At.UTC(), Key: e.Key, Changes: e.Changes})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// historyParams reads limit and cursor, each at most once; a bad one is 400
// naming it.
func historyParams(r *http.Request) (limit int, before int64, err error) {
	q := r.URL.Query()
	limit = defaultHistoryLimit
	if v, ok := q["limit"]; ok {
		n, err := strconv.Atoi(v[0])
		if len(v) != 1 || err != nil || n < 1 || n > maxHistoryLimit {
			return 0, 0, apiErr(http.StatusBadRequest, "limit must be one integer from 1 to %d", maxHistoryLimit)
		}
		limit = n
	}
	if v, ok := q["cursor"]; ok {
		n, err := strconv.ParseInt(v[0], 10, 64)
		if len(v) != 1 || err != nil || n < 1 {
			return 0, 0, apiErr(http.StatusBadRequest, "cursor must be one next_cursor value of a history page")
		}
		before = n
	}
	return limit, before, nil
}
