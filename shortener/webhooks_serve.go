package shortener

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/edgekit/caddy-edgekit/shortener/link"
	"github.com/edgekit/caddy-edgekit/shortener/webhook"
)

// webhooksChanged turns click events on while an enabled endpoint takes
// clicks (no event is recorded for nobody).
func (h *Handler) webhooksChanged() {
	if h.hookClicks == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
	defer cancel()
	eps, err := h.hookStore.Endpoints(ctx)
	if err != nil {
		h.logger.Warn("webhooks: reading endpoints", zap.Error(err))
		return
	}
	want := false
	for _, e := range eps {
		want = want || !e.Disabled && strings.Contains(","+strings.Join(e.Types, ",")+",", ","+webhook.TypeClick+",")
	}
	h.hookClicks.Store(want)
}

// renderEvent is an outbox event as webhooks send it: a link event's data
// is the link as the API shows it, a click's its ClickEvent, another
// event's (the rate limiter's) its data as recorded; a link's tags go to
// the endpoints' filters (a click's from clickTags, when one filters by
// tag).
func (h *Handler) renderEvent(_ context.Context, e link.Event) (webhook.Rendered, error) {
	_, code := link.SplitDomainKey(e.Code) // endpoints filter by code, on any domain
	r := webhook.Rendered{Type: e.Type, At: e.At, Code: code}
	if strings.HasPrefix(e.Type, "link.") {
		data, err := json.Marshal(h.hookLink(e.Link))
		r.Data, r.Tags = data, e.Link.Tags
		return r, err
	}
	r.Data = e.Data
	return r, nil
}

// clickTags are the tags of a click event's link, from a cache kept a
// minute (a link's tags change seldom; a click names only its code).
func (h *Handler) clickTags(ctx context.Context, e link.Event) ([]string, error) {
	if tags, ok := h.hookTags.GetIfPresent(e.Code); ok {
		return tags, nil
	}
	l, err := h.store.Get(ctx, e.Code)
	if err != nil && err != link.ErrNotFound {
		return nil, err
	}
	h.hookTags.Set(e.Code, l.Tags)
	return l.Tags, nil
}

// hookLink is the link as the API shows it, its short URL from base_url
// (the path alone without one: no request tells the host).
func (h *Handler) hookLink(l link.Link) link.Response {
	r := &http.Request{Host: "", URL: nil}
	out := h.response(r, l)
	if h.baseURL == nil && out.Domain == "" {
		out.ShortURL = "/" + out.Code
	}
	return out
}

// maintainWebhooks reads the backlog for the metrics every
// webhookBacklogEvery and deletes what the retention lets go, hourly.
func (h *Handler) maintainWebhooks(ctx context.Context) {
	keep := time.Duration(h.Webhooks.Retention)
	if keep <= 0 {
		keep = DefaultWebhookRetention
	}
	t := time.NewTicker(webhookBacklogEvery)
	defer t.Stop()
	var pruned, swept time.Time
	for {
		if now := h.now(); now.Sub(swept) >= webhookExpirySweep {
			swept = now
			h.recordExpired(ctx, now)
		}
		if now := h.now(); now.Sub(pruned) >= webhookPruneEvery {
			pruned = now
			if err := h.hookStore.Prune(ctx, now.Add(-keep)); err != nil && ctx.Err() == nil {
				h.logger.Warn("webhooks: pruning", zap.Error(err))
			}
		}
		if b, err := h.hookStore.Backlog(ctx); err == nil {
			h.hookStats.observe(b, h.now())
		} else if ctx.Err() == nil {
			h.hookStats.errors.Inc()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// recordExpired records the link.expired events of the links whose expiry
// passed since the last sweep (any instance's).
func (h *Handler) recordExpired(ctx context.Context, now time.Time) {
	xs, ok := h.hookStore.(link.ExpiryLog)
	if !ok {
		return
	}
	if _, err := xs.RecordExpired(ctx, now); err != nil && ctx.Err() == nil {
		h.hookStats.errors.Inc()
		h.logger.Warn("webhooks: recording expired links", zap.Error(err))
	}
}

// serveWebhooks mounts the webhook API: every request needs an api_key,
// reads too (endpoint URLs and receivers' answers may hold credentials).
func (h *Handler) serveWebhooks(w http.ResponseWriter, r *http.Request, rest string) error {
	if h.hookAPI == nil {
		return apiErr(http.StatusNotFound, "webhooks are off: the shortener has no webhooks block")
	}
	if h.requestScope(r) != scopeWrite {
		w.Header().Set("WWW-Authenticate", `Bearer realm="shortener", error="insufficient_scope"`)
		return apiErr(http.StatusForbidden, "webhooks need an api_key: endpoint URLs and receivers' answers may hold credentials")
	}
	ctx, cancel := context.WithTimeout(r.Context(), apiTimeout)
	defer cancel()
	err := h.hookAPI.Serve(w, r.WithContext(ctx), rest, true)
	var se interface{ HTTPStatus() int }
	if err != nil && !errors.As(err, &se) {
		return h.storeErr(err)
	}
	return err
}

// requestScope is the scope an authorized request was granted: its
// session's, or its key's.
func (h *Handler) requestScope(r *http.Request) scope {
	if s := sessionOf(r.Context()); s != nil {
		return s.scope
	}
	return h.keyScope(r)
}
