package shortener

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"go.uber.org/zap"

	"github.com/edgekit/caddy-edgekit/internal/strictjson"
	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// POST <api>/links/batch creates up to maxBatch links in one store
// transaction, each item judged on its own, and answers 200 with a result
// per item in input order.
const (
	// maxBatch is the most create requests one batch may hold.
	maxBatch = 1000
	// maxBatchBody is the largest batch body (413 beyond): room for 1,000
	// create requests with 2,048-byte long URLs and some metadata.
	maxBatchBody = 4 << 20
)

// batchRequest is the body of POST <api>/links/batch; each item is decoded
// on its own, so a malformed one fails alone.
type batchRequest struct {
	// Mode "import" imports the links (api_import.go); absent, it creates
	// them.
	Mode string `json:"mode,omitempty"`
	// DryRun, with mode import only, answers what the import would do
	// and writes nothing.
	DryRun *bool             `json:"dry_run,omitempty"`
	Links  []json.RawMessage `json:"links"`
}

// apiBatch answers POST <api>/links/batch.
func (h *Handler) apiBatch(w http.ResponseWriter, r *http.Request) error {
	key, err := idemKey(r)
	if err != nil {
		return err
	}
	body, err := readBody(w, r, maxBatchBody)
	if err != nil {
		return err
	}
	req, reqErr := decodeBatch(body)
	if reqErr == nil && req.Mode == batchImport {
		return h.apiImport(w, r, key, req)
	}
	claim := idemClaimOf(r, key, body)
	ctx, cancel := context.WithTimeout(r.Context(), apiTimeout)
	defer cancel()
	items, err := h.batchItems(r, req, reqErr)
	if err != nil {
		return h.idemRefused(ctx, w, claim, err)
	}
	return h.answerTx(ctx, w, r, claim, items, func(items []*createItem) link.IdemAnswer {
		out := struct {
			Mode    string             `json:"mode"` // the answers' discriminator, "import" in an import's
			Results []link.BatchResult `json:"results"`
		}{"create", make([]link.BatchResult, len(items))}
		for i, it := range items {
			status, answered, err := h.itemAnswer(r, it)
			out.Results[i] = link.BatchResult{Status: status, Link: answered}
			if err != nil {
				out.Results[i].Error = err.Error()
			}
		}
		return renderJSON(http.StatusOK, out)
	})
}

// batchImport is the mode of an import batch.
const batchImport = "import"

// decodeBatch decodes a batch body and judges its mode and size.
func decodeBatch(body []byte) (batchRequest, error) {
	var req batchRequest
	if err := strictjson.Decode(body, &req); err != nil {
		return req, apiErr(http.StatusBadRequest, "invalid JSON body: %v", err)
	}
	switch {
	case req.Mode != "" && req.Mode != batchImport:
		return req, apiErr(http.StatusBadRequest, "mode must be import (or absent)")
	case req.DryRun != nil && req.Mode != batchImport:
		return req, apiErr(http.StatusBadRequest, "dry_run: only with mode import (a create batch has links only)")
	case len(req.Links) == 0 || len(req.Links) > maxBatch:
		return req, apiErr(http.StatusBadRequest, "links: %d given, 1 to %d are allowed", len(req.Links), maxBatch)
	}
	return req, nil
}

// batchItems judges each item of a decoded batch (decodeErr: its
// refusal).
func (h *Handler) batchItems(r *http.Request, req batchRequest, decodeErr error) ([]*createItem, error) {
	if decodeErr != nil {
		return nil, decodeErr
	}
	items := make([]*createItem, len(req.Links))
	for i, raw := range req.Links {
		lr, err := decodeLinkRequest(raw)
		if err != nil {
			items[i] = &createItem{refused: err}
			continue
		}
		items[i] = h.prepareItem(r, lr)
	}
	return items, nil
}

// apiCreateTx answers POST <api>/links with an Idempotency-Key or reuse:
// req and decodeErr as decoded from the body.
func (h *Handler) apiCreateTx(w http.ResponseWriter, r *http.Request, claim *link.IdemClaim, req link.CreateRequest, decodeErr error) error {
	ctx, cancel := context.WithTimeout(r.Context(), apiTimeout)
	defer cancel()
	if decodeErr != nil {
		return h.idemRefused(ctx, w, claim, decodeErr)
	}
	it := h.prepareItem(r, req)
	if it.refused != nil {
		return h.idemRefused(ctx, w, claim, it.refused)
	}
	return h.answerTx(ctx, w, r, claim, []*createItem{it}, func(items []*createItem) link.IdemAnswer {
		status, link, err := h.itemAnswer(r, items[0])
		if err != nil {
			return renderJSON(status, map[string]string{"error": err.Error()})
		}
		return renderJSON(status, link)
	})
}

// answerTx creates items in one transaction, publishes the links created
// and writes the (possibly replayed) answer.
func (h *Handler) answerTx(ctx context.Context, w http.ResponseWriter, r *http.Request, claim *link.IdemClaim,
	items []*createItem, render func([]*createItem) link.IdemAnswer) error {
	ts, ok := txStoreOf(h.store)
	if !ok {
		return apiErr(http.StatusNotImplemented, "this link store cannot create in transactions")
	}
	ans, replayed, err := h.runCreate(ctx, ts, claim, items, render)
	var ae apiError
	switch {
	case errors.Is(err, link.ErrIdemMismatch):
		return idemMismatch()
	case errors.As(err, &ae):
		return err
	case err != nil:
		return h.createErr(err)
	}
	if !replayed {
		var created []link.Link
		for _, it := range items {
			if it.status == http.StatusCreated {
				created = append(created, it.result)
			}
		}
		if err := h.cache.publishLinks(ctx, created); err != nil {
			h.logger.Warn("writing new links to redis", zap.Error(err))
		}
	}
	writeAnswer(w, ans, replayed)
	return nil
}

// itemAnswer is one item's status and link or error.
func (h *Handler) itemAnswer(r *http.Request, it *createItem) (int, *link.Response, error) {
	if it.refused != nil {
		var ae apiError
		if errors.As(it.refused, &ae) {
			return ae.status, nil, ae
		}
		return http.StatusBadRequest, nil, it.refused
	}
	if it.err != nil {
		return it.status, nil, it.err
	}
	out := h.response(r, it.result)
	return it.status, &out, nil
}

// renderJSON renders an answer as writeJSON writes it.
func renderJSON(status int, v any) link.IdemAnswer {
	b, err := json.Marshal(v)
	if err != nil { // only plain structs, maps and strings reach here
		return link.IdemAnswer{Status: http.StatusInternalServerError, Body: []byte(`{"error":"internal error"}` + "\n")}
	}
	return link.IdemAnswer{Status: status, Body: append(b, '\n')}
}
