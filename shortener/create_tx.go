package shortener

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// Creates in one store transaction (TxStore): a create with an
// Idempotency-Key or "reuse": true, and every batch. Plain creates take
// apiCreate's path.

// createItem is one create request on its way through a transaction.
type createItem struct {
	link    link.Link // to create; Code set for custom codes
	result  link.Link // the answered link: link when created, another when reused
	mode    string    // "custom", "random" or "sequential"
	reuse   bool      // "reuse": true without a custom code
	refused error     // its 4xx from validation: never reaches the store
	// Decided in the transaction (reset when it is retried):
	status int   // 201 created, 200 reused, 409 code taken, 503 no free code
	err    error // the apiError of a 4xx/5xx status
	follow int   // 1 + the index of the item whose link a reuse shares
}

// errRetrySequential rolls a transaction back to draw new sequential IDs
// for the items whose codes were taken.
var errRetrySequential = errors.New("sequential code taken")

// prepareItem judges one create request; a refused item is answered
// without reaching the store.
func (h *Handler) prepareItem(r *http.Request, req link.CreateRequest) *createItem {
	l, mode, err := h.newLink(r, req)
	if err != nil {
		return &createItem{refused: err}
	}
	// The stores keep microseconds: reuse compares what they keep.
	l.ExpiresAt = l.ExpiresAt.Truncate(time.Microsecond)
	it := &createItem{link: l, mode: mode, reuse: req.Reuse && req.Code == ""}
	if req.Code != "" {
		if err := h.checkCustomCode(req.Code); err != nil {
			return &createItem{refused: err}
		}
		it.link.Code, it.link.Custom, it.mode = link.DomainKey(domainIn(r.Context()), req.Code), true, "custom"
	}
	return it
}

// reservedCode says why code may not name a new link: a fixed word of the
// API or the first segment of the API's or the dashboard's path (compared
// without case, as those paths may be typed); "" when it may.
func (h *Handler) reservedCode(code string) string {
	if link.IsAPIWord(code) {
		return fmt.Sprintf("code '%s' is reserved: a word of the API's paths (%s)", code, strings.Join(link.APIWords[:], ", "))
	}
	if strings.EqualFold(code, h.reserved) || h.ui != nil && strings.EqualFold(code, h.ui.reserved) {
		return fmt.Sprintf("code '%s' is reserved: the first segment of the API's or the dashboard's path", code)
	}
	return ""
}

// checkCustomCode judges a custom code.
func (h *Handler) checkCustomCode(code string) error {
	if err := link.ValidCustomCode(code); err != nil {
		return apiErr(http.StatusBadRequest, "code: %v", err)
	}
	if reason := h.reservedCode(code); reason != "" {
		return apiErr(http.StatusBadRequest, "%s", reason)
	}
	return nil
}

// runCreate creates the items in one transaction of ts with the claim (nil
// without an Idempotency-Key) and answers with render's answer, recorded
// with the links. A transaction whose sequential codes were taken is
// retried with new IDs, at most maxCodeAttempts times.
func (h *Handler) runCreate(ctx context.Context, ts link.TxStore, claim *link.IdemClaim, items []*createItem,
	render func([]*createItem) link.IdemAnswer) (link.IdemAnswer, bool, error) {
	for range maxCodeAttempts {
		if err := h.drawSequential(ctx, items); err != nil {
			return link.IdemAnswer{}, false, err
		}
		ans, replayed, err := ts.CreateTx(ctx, claim, h.now(), func(ctx context.Context, tx link.LinkTx) (link.IdemAnswer, error) {
			if err := h.createInTx(ctx, tx, items); err != nil {
				return link.IdemAnswer{}, err
			}
			return render(items), nil
		})
		if errors.Is(err, errRetrySequential) {
			h.metrics.retries.Inc()
			continue
		}
		return ans, replayed, err
	}
	return link.IdemAnswer{}, false, apiErr(http.StatusServiceUnavailable, "no free code found")
}

// drawSequential gives each sequential item without a code the next ID.
func (h *Handler) drawSequential(ctx context.Context, items []*createItem) error {
	for _, it := range items {
		if it.refused == nil && it.mode == "sequential" && it.link.Code == "" {
			id, err := h.blocks.Next(ctx, h.store, int64(h.BlockSize))
			if err != nil {
				return h.storeErr(err)
			}
			it.link.Code = link.DomainKey(domainIn(ctx), link.SequentialCode(id))
		}
	}
	return nil
}

// createInTx decides every item that validation did not refuse: reused,
// created, or refused for a taken custom code.
func (h *Handler) createInTx(ctx context.Context, tx link.LinkTx, items []*createItem) error {
	for _, it := range items {
		it.status, it.err, it.follow = 0, nil, 0
	}
	if err := h.reuseInTx(ctx, tx, items); err != nil {
		return err
	}
	if err := h.insertInTx(ctx, tx, items); err != nil {
		return err
	}
	for _, it := range items {
		if it.follow > 0 {
			lead := items[it.follow-1]
			it.result, it.status, it.err = lead.result, lead.status, lead.err
			if it.status == http.StatusCreated {
				it.status = http.StatusOK
			}
		}
	}
	return nil
}

// reuseInTx answers the reuse items that a stored link matches; of the
// rest, items equal for reuse follow the first of them.
func (h *Handler) reuseInTx(ctx context.Context, tx link.LinkTx, items []*createItem) error {
	var want []link.Link
	var idx []int
	for i, it := range items {
		if it.refused == nil && it.reuse {
			want, idx = append(want, it.link), append(idx, i)
		}
	}
	if len(want) == 0 {
		return nil
	}
	found, err := tx.Reusable(ctx, want, h.now())
	if err != nil {
		return err
	}
	leads := map[string]int{}
	domain := domainIn(ctx)
	for n, i := range idx {
		it := items[i]
		// A link of another domain is not reused: the item gets its own.
		if host, _ := link.SplitDomainKey(found[n].Code); found[n].Code != "" && host == domain {
			it.result, it.status = found[n], http.StatusOK
			continue
		}
		k := link.ReuseKey(it.link)
		if lead, ok := leads[k]; ok {
			it.follow = lead + 1
			continue
		}
		leads[k] = i
	}
	return nil
}

// insertInTx inserts the undecided items in rounds of one round trip each:
// random codes that are taken are drawn again (maxCodeAttempts per length,
// then one longer, as createRandom), a taken custom code is 409, a taken
// sequential code retries the transaction.
func (h *Handler) insertInTx(ctx context.Context, tx link.LinkTx, items []*createItem) error {
	var pending []*createItem
	for _, it := range items {
		if it.refused == nil && it.status == 0 && it.follow == 0 {
			pending = append(pending, it)
		}
	}
	for round := 0; len(pending) > 0; round++ {
		length := h.CodeLength + round/maxCodeAttempts
		if length >= h.CodeLength+3 {
			for _, it := range pending {
				it.status, it.err = http.StatusServiceUnavailable, apiErr(http.StatusServiceUnavailable, "no free code found")
			}
			return nil
		}
		links := make([]link.Link, len(pending))
		for i, it := range pending {
			if it.mode == "random" {
				code, err := link.RandomCode(length)
				if err != nil {
					return err
				}
				it.link.Code = link.DomainKey(domainIn(ctx), code)
			}
			links[i] = it.link
		}
		stored, err := tx.Insert(ctx, links)
		if err != nil {
			return err
		}
		next, err := h.afterInsert(pending, stored)
		if err != nil {
			return err
		}
		pending = next
	}
	return nil
}

// afterInsert decides the items of one insert round and returns those to
// insert again with new random codes.
func (h *Handler) afterInsert(pending []*createItem, stored []bool) ([]*createItem, error) {
	var again []*createItem
	seqTaken := false
	for i, it := range pending {
		switch {
		case stored[i]:
			it.result, it.status = it.link, http.StatusCreated
		case it.mode == "custom":
			it.status, it.err = http.StatusConflict, apiErr(http.StatusConflict, "code '%s' is already taken", it.link.Code)
		case it.mode == "sequential":
			it.link.Code, seqTaken = "", true
		default:
			h.metrics.retries.Inc()
			again = append(again, it)
		}
	}
	if seqTaken {
		return nil, errRetrySequential
	}
	return again, nil
}
