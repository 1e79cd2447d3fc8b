package webhookapi

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/edgekit/caddy-edgekit/shortener/link"
	"github.com/edgekit/caddy-edgekit/shortener/webhook"
)

// Bounds of a request, past the endpoint's own (webhook.Max*).
const (
	MaxURL = 2048
	// DefaultGrace and MaxGrace bound how long a rotated-out secret keeps
	// signing.
	DefaultGraceSeconds = 24 * 60 * 60
	MaxGraceSeconds     = 7 * 24 * 60 * 60
)

func bad(format string, args ...any) error { return errorf(http.StatusBadRequest, format, args...) }

// judge checks an endpoint as it would be saved; the first problem is a
// 400 naming its field.
func (a *API) judge(ctx context.Context, e *webhook.Endpoint) error {
	if err := a.judgeURL(ctx, &e.URL); err != nil {
		return err
	}
	if err := link.CheckText("description", e.Description, webhook.MaxDescription, false); err != nil {
		return bad("%v", err)
	}
	if err := judgeTypes(e.Types); err != nil {
		return err
	}
	if err := judgeFilter("tags", e.Tags, judgeTag); err != nil {
		return err
	}
	if err := judgeFilter("codes", e.Codes, judgeCode); err != nil {
		return err
	}
	switch {
	case e.Batch < 0 || e.Batch > webhook.MaxBatch:
		return bad("batch: %d is not 0 to %d", e.Batch, webhook.MaxBatch)
	case e.BatchWait < 0 || e.BatchWait > webhook.MaxBatchWait:
		return bad("batch_wait_ms: %d is not 0 to %d", e.BatchWait.Milliseconds(), webhook.MaxBatchWait.Milliseconds())
	}
	return nil
}

// judgeURL judges an endpoint's URL and puts it in canonical form.
func (a *API) judgeURL(ctx context.Context, u *string) error {
	switch {
	case *u == "":
		return bad("url: required")
	case len(*u) > MaxURL:
		return bad("url: %d bytes, at most %d are allowed", len(*u), MaxURL)
	}
	if a.CheckURL != nil {
		canon, err := a.CheckURL(*u)
		if err != nil {
			// The policy names the field as a link's; this one is url.
			return bad("url: %s", strings.TrimPrefix(err.Error(), "long_url "))
		}
		*u = canon
	}
	if err := a.Client.CheckTarget(ctx, *u); err != nil {
		if errors.Is(err, webhook.ErrForbiddenAddress) {
			host := *u
			if p, perr := url.Parse(*u); perr == nil {
				host = p.Hostname()
			}
			return bad("url: host '%s' has no address the handler may reach: private or reserved, and not in allow_private", host)
		}
		return bad("url: %s", strings.TrimPrefix(err.Error(), "webhook: "))
	}
	return nil
}

func judgeTypes(types []string) error {
	if len(types) == 0 {
		return bad("types: at least one event type is required (%s)", strings.Join(webhook.EventTypes, ", "))
	}
	for i, t := range types {
		if !slices.Contains(webhook.EventTypes, t) {
			return bad("types[%d]: %q is not an event type (%s)", i, t, strings.Join(webhook.EventTypes, ", "))
		}
		if slices.Contains(types[:i], t) {
			return bad("types[%d]: %q is given twice", i, t)
		}
	}
	return nil
}

// judgeFilter bounds a filter list and judges each value with one.
func judgeFilter(field string, values []string, one func(string) string) error {
	if len(values) > webhook.MaxFilterValues {
		return bad("%s: %d given, at most %d are allowed", field, len(values), webhook.MaxFilterValues)
	}
	for i, v := range values {
		if msg := one(v); msg != "" {
			return bad("%s[%d]: %s", field, i, msg)
		}
		if slices.Contains(values[:i], v) {
			return bad("%s[%d]: %q is given twice", field, i, v)
		}
	}
	return nil
}

// judgeTag applies a link tag's rule to a filter's tag.
func judgeTag(tag string) string {
	if err := link.CheckMetadata("", []string{tag}, ""); err != nil {
		_, msg, _ := strings.Cut(err.Error(), ": ")
		return msg
	}
	return ""
}

func judgeCode(code string) string {
	if !link.ValidLookupCode(code) {
		return "not a code a link may have"
	}
	return ""
}
