package shortener

import (
	"context"
	"errors"
	"net/http"

	"go.uber.org/zap"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// POST <api>/links/batch with "mode": "import" imports up to maxBatch
// links (import.go) in one store transaction and answers 200 with a
// result per item in input order and the count of each result. Only an
// api_key sent as a Bearer token may import (a dashboard session may
// not: 403); "dry_run": true answers the same and writes nothing.

// importAnswer is the body of a 200 to an import.
type importAnswer struct {
	Mode      string              `json:"mode"`
	DryRun    bool                `json:"dry_run"`
	Created   int                 `json:"created"`
	Skipped   int                 `json:"skipped"`
	Conflicts int                 `json:"conflicts"`
	Refused   int                 `json:"refused"`
	Results   []link.ImportResult `json:"results"`
}

// apiImport answers an import batch.
func (h *Handler) apiImport(w http.ResponseWriter, r *http.Request, idem string, req batchRequest) error {
	if sessionOf(r.Context()) != nil {
		return apiErr(http.StatusForbidden, "mode import needs an api_key in the Authorization header, not a dashboard session")
	}
	if idem != "" {
		return apiErr(http.StatusBadRequest, "%s: not used with mode import, which is idempotent by itself", idemHeader)
	}
	is, ok := importStoreOf(h.store)
	if !ok {
		return apiErr(http.StatusNotImplemented, "this link store cannot import")
	}
	now, dryRun := h.now(), req.DryRun != nil && *req.DryRun
	entries := make([]*importEntry, len(req.Links))
	for i, raw := range req.Links {
		l, err := h.judgeImportItem(r, raw, now)
		entries[i] = &importEntry{link: l, refused: err}
	}
	ctx, cancel := context.WithTimeout(r.Context(), apiTimeout)
	defer cancel()
	if err := runImport(ctx, is, entries, dryRun); err != nil {
		var ae apiError
		if errors.As(err, &ae) {
			return err
		}
		return h.storeErr(err)
	}
	if !dryRun {
		h.publishImported(ctx, entries)
	}
	writeJSON(w, http.StatusOK, importAnswerOf(entries, dryRun))
	return nil
}

// publishImported writes the links created to the caches, as a create
// does (a negative entry of the code is replaced).
func (h *Handler) publishImported(ctx context.Context, entries []*importEntry) {
	var created []link.Link
	for _, e := range entries {
		if e.result == importCreated {
			created = append(created, e.link.Link)
		}
	}
	if err := h.cache.publishLinks(ctx, created); err != nil {
		h.logger.Warn("writing imported links to redis", zap.Error(err))
	}
}

// importAnswerOf renders the decided entries.
func importAnswerOf(entries []*importEntry, dryRun bool) importAnswer {
	out := importAnswer{Mode: batchImport, DryRun: dryRun, Results: make([]link.ImportResult, len(entries))}
	for i, e := range entries {
		_, code := link.SplitDomainKey(e.link.Code)
		res := link.ImportResult{Code: code, Result: e.result, Error: e.reason}
		switch e.result {
		case importCreated:
			out.Created++
		case importSkipped:
			out.Skipped++
		case importConflict:
			out.Conflicts++
		case importRefused:
			out.Refused++
			var ir importRefusal
			if errors.As(e.refused, &ir) {
				res.Field, res.Error = &ir.field, ir.reason
			} else {
				res.Error = e.refused.Error()
			}
		}
		if e.existing != nil {
			res.Existing = importedOf(*e.existing)
		}
		out.Results[i] = res
	}
	return out
}

// importedOf shows a stored link as an import item.
func importedOf(s link.ImportLink) *link.ImportedLink {
	return &link.ImportedLink{LongURL: s.LongURL, CreatedAt: s.CreatedAt.UTC(), Tags: link.TagsOrNil(s.Tags), Clicks: s.Baseline,
		ExpiresAt: link.UTCOrNil(s.ExpiresAt), RevokedAt: link.UTCOrNil(s.RevokedAt), Title: link.TextOrNil(s.Title), Notes: link.TextOrNil(s.Notes)}
}

// importStoreOf is the ImportStore behind a handler's store, if any.
func importStoreOf(s link.Store) (link.ImportStore, bool) {
	if sh, ok := s.(sharedStore); ok {
		s = sh.Store
	}
	is, ok := s.(link.ImportStore)
	return is, ok
}
