package shortener

import (
	"encoding/json"
	"errors"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/edgekit/caddy-edgekit/internal/strictjson"
	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// linkPatch is a judged merge patch of a link: a nil field is absent
// (unchanged); a pointer to the zero value clears the field.
type linkPatch struct {
	longURL   *string
	title     *string
	tags      *[]string
	notes     *string
	expiresAt *time.Time
	// Per-link rules (rules.go); zero values clear.
	redirectStatus *int
	validFrom      *time.Time
	maxClicks      *int64
	forwardQuery   **bool
	// Targeting (destinations.go): each part normalised; nil inside clears.
	rules, variants *json.RawMessage
	fallbackURL     *string
}

// patchFields are the fields a PATCH may name, each with its judge.
var patchFields = map[string]func(h *Handler, r *http.Request, raw json.RawMessage, p *linkPatch) error{
	"long_url":   patchLongURL,
	"title":      patchText("title", func(p *linkPatch, s *string) { p.title = s }),
	"notes":      patchText("notes", func(p *linkPatch, s *string) { p.notes = s }),
	"tags":       patchTags,
	"expires_at": patchExpiresAt,
	"redirect_status": func(_ *Handler, _ *http.Request, raw json.RawMessage, p *linkPatch) error {
		var v *int
		if err := decodeField("redirect_status", "301, 302, 307, 308 or null", raw, &v); err != nil {
			return err
		}
		if v != nil && !link.ValidRedirectStatus(*v) {
			return apiErr(http.StatusBadRequest, "redirect_status must be 301, 302, 307 or 308")
		}
		n := 0
		if v != nil {
			n = *v
		}
		p.redirectStatus = &n
		return nil
	},
	"valid_from": func(_ *Handler, _ *http.Request, raw json.RawMessage, p *linkPatch) error {
		var v *string
		if err := decodeField("valid_from", "an RFC 3339 time or null", raw, &v); err != nil {
			return err
		}
		var t time.Time
		if v != nil {
			var err error
			if t, err = link.ParseTime(*v); err != nil {
				return apiErr(http.StatusBadRequest, "valid_from must be an RFC 3339 time or null")
			}
			if t = t.UTC().Truncate(time.Microsecond); t.Before(link.MinValidFrom) {
				return apiErr(http.StatusBadRequest, "valid_from must not be before %s", link.MinValidFrom.Format(time.RFC3339))
			}
		}
		p.validFrom = &t
		return nil
	},
	"max_clicks": func(_ *Handler, _ *http.Request, raw json.RawMessage, p *linkPatch) error {
		var v *int64
		if err := decodeField("max_clicks", "an integer or null", raw, &v); err != nil {
			return err
		}
		var n int64
		if v != nil {
			if n = *v; n < 1 || n > link.MaxMaxClicks {
				return apiErr(http.StatusBadRequest, "max_clicks must be 1 to %d", int64(link.MaxMaxClicks))
			}
		}
		p.maxClicks = &n
		return nil
	},
	"forward_query": func(_ *Handler, _ *http.Request, raw json.RawMessage, p *linkPatch) error {
		var v *bool
		if err := decodeField("forward_query", "true, false or null", raw, &v); err != nil {
			return err
		}
		p.forwardQuery = &v
		return nil
	},
	"rules":        patchTargeting("rules", func(p *linkPatch, v *json.RawMessage) { p.rules = v }),
	"variants":     patchTargeting("variants", func(p *linkPatch, v *json.RawMessage) { p.variants = v }),
	"fallback_url": patchFallback,
}

// maxUnknownNamed bounds the unknown field names a 400 repeats.
const maxUnknownNamed = 5

// parsePatch judges a PATCH body: a JSON object (RFC 7396; any other value
// would replace the whole link) of known fields, each judged as create
// judges it. Errors are 400 naming the field.
func (h *Handler) parsePatch(r *http.Request, body []byte) (linkPatch, error) {
	var p linkPatch
	var fields map[string]json.RawMessage
	if err := strictjson.Decode(body, &fields); err != nil || fields == nil {
		if err == nil {
			err = errors.New("a merge patch is a JSON object")
		}
		return p, apiErr(http.StatusBadRequest, "invalid JSON body: %v", err)
	}
	if field := link.InvalidUTF8Field(body); field != "" {
		return p, apiErr(http.StatusBadRequest, "%s is not valid UTF-8", field)
	}
	var unknown []string
	for name := range fields {
		if patchFields[name] == nil {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		if len(unknown) > maxUnknownNamed {
			unknown = append(unknown[:maxUnknownNamed], "...")
		}
		return p, apiErr(http.StatusBadRequest, "unknown or read-only fields: %s (editable: long_url, title, tags, notes, expires_at, redirect_status, valid_from, max_clicks, forward_query, rules, variants, fallback_url)", quoteAll(unknown))
	}
	names := make([]string, 0, len(fields))
	for name := range fields {
		names = append(names, name)
	}
	sort.Strings(names) // one answer for one body
	for _, name := range names {
		if err := patchFields[name](h, r, fields[name], &p); err != nil {
			return p, err
		}
	}
	return p, nil
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		if len(n) > 64 {
			n = n[:64] + "..."
		}
		q[i] = "'" + strings.ToValidUTF8(n, "?") + "'"
	}
	return strings.Join(q, ", ")
}

func isNull(raw json.RawMessage) bool { return string(raw) == "null" }

func patchLongURL(h *Handler, r *http.Request, raw json.RawMessage, p *linkPatch) error {
	if isNull(raw) {
		return apiErr(http.StatusBadRequest, "long_url cannot be cleared (null); give a new one")
	}
	var s string
	if err := decodeField("long_url", "a string", raw, &s); err != nil {
		return err
	}
	long, err := h.policy.Check(s, h.selfHosts(r)...)
	if err != nil {
		return apiErr(http.StatusBadRequest, "%v", err)
	}
	p.longURL = &long
	return nil
}

// patchText judges title or notes: a string (empty clears) or null.
func patchText(name string, set func(*linkPatch, *string)) func(*Handler, *http.Request, json.RawMessage, *linkPatch) error {
	return func(_ *Handler, _ *http.Request, raw json.RawMessage, p *linkPatch) error {
		s := ""
		if !isNull(raw) {
			if err := decodeField(name, "a string or null", raw, &s); err != nil {
				return err
			}
		}
		var err error
		if name == "title" {
			err = link.CheckMetadata(s, nil, "")
		} else {
			err = link.CheckMetadata("", nil, s)
		}
		if err != nil {
			return apiErr(http.StatusBadRequest, "%v", err)
		}
		set(p, &s)
		return nil
	}
}

func patchTags(_ *Handler, _ *http.Request, raw json.RawMessage, p *linkPatch) error {
	var tags []string
	if !isNull(raw) {
		if err := decodeField("tags", "an array of strings or null", raw, &tags); err != nil {
			return err
		}
	}
	if err := link.CheckMetadata("", tags, ""); err != nil {
		return apiErr(http.StatusBadRequest, "%v", err)
	}
	tags = link.TagsOrNil(tags)
	p.tags = &tags
	return nil
}

func patchExpiresAt(h *Handler, _ *http.Request, raw json.RawMessage, p *linkPatch) error {
	var t time.Time
	if !isNull(raw) {
		var s string
		if err := decodeField("expires_at", "an RFC 3339 time or null", raw, &s); err != nil {
			return err
		}
		var err error
		if t, err = link.ParseTime(s); err != nil {
			return apiErr(http.StatusBadRequest, "expires_at must be an RFC 3339 time or null")
		}
		if !t.After(h.now()) {
			return apiErr(http.StatusBadRequest, "expires_at is in the past")
		}
		t = t.UTC()
	}
	p.expiresAt = &t
	return nil
}

// apply sets the patch's fields on l.
func (p linkPatch) apply(l *link.Link) {
	if p.longURL != nil {
		l.LongURL = *p.longURL
	}
	if p.title != nil {
		l.Title = *p.title
	}
	if p.tags != nil {
		l.Tags = *p.tags
	}
	if p.notes != nil {
		l.Notes = *p.notes
	}
	if p.expiresAt != nil {
		l.ExpiresAt = *p.expiresAt
	}
	if p.redirectStatus != nil {
		l.RedirectStatus = *p.redirectStatus
	}
	if p.validFrom != nil {
		l.ValidFrom = *p.validFrom
	}
	if p.maxClicks != nil {
		l.MaxClicks = *p.maxClicks
	}
	if p.forwardQuery != nil {
		l.ForwardQuery = *p.forwardQuery
	}
	if p.fallbackURL != nil {
		l.FallbackURL = *p.fallbackURL
	}
	if p.rules != nil || p.variants != nil {
		l.Targeting = mergeTargeting(l.Targeting, p.rules, p.variants)
	}
}

// patchTargeting judges rules or variants: replaced as a whole (RFC 7396
// replaces arrays), null or [] clears.
func patchTargeting(name string, set func(*linkPatch, *json.RawMessage)) func(*Handler, *http.Request, json.RawMessage, *linkPatch) error {
	return func(h *Handler, r *http.Request, raw json.RawMessage, p *linkPatch) error {
		var rules, variants json.RawMessage
		if name == "rules" {
			rules = raw
		} else {
			variants = raw
		}
		t, err := h.compileTargeting(r, rules, variants)
		if err != nil {
			return apiErr(http.StatusBadRequest, "%s", targetingMessage(targetingField(err), err))
		}
		var part json.RawMessage
		if t != nil {
			part = link.TargetingPart(t, name)
		}
		set(p, &part)
		return nil
	}
}

// patchFallback judges fallback_url: a URL, or null or "" to clear.
func patchFallback(h *Handler, r *http.Request, raw json.RawMessage, p *linkPatch) error {
	s := ""
	if !isNull(raw) {
		if err := decodeField("fallback_url", "a string or null", raw, &s); err != nil {
			return err
		}
	}
	if s != "" {
		var err error
		if s, err = h.judgeFallback(r, s); err != nil {
			return apiErr(http.StatusBadRequest, "%v", err)
		}
	}
	p.fallbackURL = &s
	return nil
}

// mergeTargeting is cur with the parts a patch gives replaced (a nil part
// inside clears it); nil when neither part is left.
func mergeTargeting(cur []byte, rules, variants *json.RawMessage) []byte {
	keep := func(name string, given *json.RawMessage) json.RawMessage {
		if given != nil {
			return *given
		}
		if part := link.TargetingPart(cur, name); string(part) != "null" {
			return part
		}
		return nil
	}
	t := targetingJSON{Rules: keep("rules", rules), Variants: keep("variants", variants)}
	if t.Rules == nil && t.Variants == nil {
		return nil
	}
	out, _ := json.Marshal(t) // normalised parts: valid JSON
	return out
}
