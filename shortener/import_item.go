package shortener

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/edgekit/caddy-edgekit/internal/strictjson"
	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// importRefusal is why an import item is refused, naming the field at
// fault ("" for the item as a whole).
type importRefusal struct {
	field, reason string
}

func (e importRefusal) Error() string { return e.reason }

// refuse is an importRefusal of field.
func refuse(field, format string, args ...any) importRefusal {
	return importRefusal{field, fmt.Sprintf(format, args...)}
}

// refusedBy is an importRefusal of an error whose text starts with the
// field's name ("max_clicks must be ...", "tags[2]: ...").
func refusedBy(err error) importRefusal {
	msg := err.Error()
	end := strings.IndexFunc(msg, func(r rune) bool { return !('a' <= r && r <= 'z' || r == '_') })
	if end < 0 {
		end = len(msg)
	}
	return importRefusal{msg[:end], msg}
}

// importSkew is how far past now an imported time may lie (clocks of two
// machines disagree a little).
const importSkew = 5 * time.Minute

// minImportTime is the earliest imported time.
var minImportTime = time.Date(1990, 1, 1, 0, 0, 0, 0, time.UTC)

// importFields are the fields of an import item.
var importFields = map[string]bool{"code": true, "short_url": true, "long_url": true, "created_at": true, "expires_at": true,
	"revoked_at": true, "title": true, "tags": true, "notes": true, "clicks": true, "redirect_status": true, "valid_from": true,
	"max_clicks": true, "forward_query": true, "remaining_clicks": true, "hourly": true}

// decodeImportItem decodes one item strictly.
func decodeImportItem(raw []byte) (link.ImportItem, error) {
	var it link.ImportItem
	switch field := link.InvalidUTF8Field(raw); {
	case field == "":
	case importFields[field]:
		return it, refuse(field, "%s is not valid UTF-8", field)
	default: // not in a field of an item ("body": not an object)
		return it, refuse("", "the item is not valid UTF-8")
	}
	if err := strictjson.Decode(raw, &it); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			// te.Field is a path: "hourly.people", "RuleRequest.max_clicks".
			field, _, _ := strings.Cut(strings.TrimPrefix(te.Field, "RuleRequest."), ".")
			return it, refuse(field, "%s: %s given, %s expected", field, te.Value, te.Type)
		}
		if field, ok := unknownField(err); ok {
			return it, refuse(field, "%s: not a field of an import item", field)
		}
		return it, refuse("", "invalid JSON item: %v", err)
	}
	return it, nil
}

// judgeImportItem decodes and judges one item at now: the link to import
// (its Code set also when refused, as given) or the importRefusal.
func (h *Handler) judgeImportItem(r *http.Request, raw []byte, now time.Time) (link.ImportLink, error) {
	it, err := decodeImportItem(raw)
	if err != nil {
		return link.ImportLink{Link: link.Link{Code: it.Code}}, err
	}
	l, err := h.importLink(r, it, now)
	if err != nil {
		return link.ImportLink{Link: link.Link{Code: it.Code}}, err
	}
	return l, nil
}

// unknownField is the name in a decoder's "unknown field" error, when it
// is at most 64 bytes of UTF-8.
func unknownField(err error) (string, bool) {
	_, rest, ok := strings.Cut(err.Error(), "unknown field ")
	if !ok {
		return "", false
	}
	q, err := strconv.QuotedPrefix(rest)
	if err != nil {
		return "", false
	}
	field, err := strconv.Unquote(q)
	return field, err == nil && len(field) <= 64 && utf8.ValidString(field)
}

// importLink judges a decoded item at now into the link to import.
func (h *Handler) importLink(r *http.Request, it link.ImportItem, now time.Time) (link.ImportLink, error) {
	if err := h.checkImportCode(it.Code); err != nil {
		return link.ImportLink{}, err
	}
	long, err := h.policy.Check(it.LongURL, h.selfHosts(r)...)
	if err != nil {
		return link.ImportLink{}, refuse("long_url", "%v", err)
	}
	for _, err := range []error{link.CheckMetadata(it.Title, nil, ""), link.CheckMetadata("", it.Tags, ""), link.CheckMetadata("", nil, it.Notes)} {
		if err != nil {
			return link.ImportLink{}, refusedBy(err)
		}
	}
	l := link.ImportLink{Link: link.Link{Code: link.DomainKey(domainIn(r.Context()), it.Code), LongURL: long, Title: it.Title, Tags: link.TagsOrNil(it.Tags), Notes: it.Notes, Custom: true}}
	if err := importTimes(it, &l.Link, now); err != nil {
		return link.ImportLink{}, err
	}
	if err := importRules(it, &l.Link); err != nil {
		return link.ImportLink{}, err
	}
	if field, err := h.judgeTargeting(r, it.TargetingRequest, &l.Link); err != nil {
		return link.ImportLink{}, refuse(field, "%s", targetingMessage(field, err))
	}
	if it.Clicks != nil && (*it.Clicks < 0 || *it.Clicks > link.MaxBaseline) {
		return link.ImportLink{}, refuse("clicks", "clicks must be 0 to %d", int64(link.MaxBaseline))
	}
	if err := importHourly(it.Hourly, it.Clicks, &l, now); err != nil {
		return link.ImportLink{}, err
	}
	return l, nil
}

// checkImportCode refuses a code the redirect path cannot serve.
func (h *Handler) checkImportCode(code string) error {
	if code == "" {
		return refuse("code", "code is required in an import")
	}
	if !link.ValidLookupCode(code) {
		return refuse("code", "code must be 1 to %d of A-Z a-z 0-9 _ -", link.MaxCustomCodeLen)
	}
	if reason := h.reservedCode(code); reason != "" {
		return refuse("code", "%s", reason)
	}
	return nil
}

// importTimes judges created_at, expires_at and revoked_at into l.
func importTimes(it link.ImportItem, l *link.Link, now time.Time) error {
	latest := now.Add(importSkew)
	var err error
	l.CreatedAt = now.UTC().Truncate(time.Microsecond)
	if it.CreatedAt != "" {
		if l.CreatedAt, err = importTime("created_at", it.CreatedAt, latest); err != nil {
			return err
		}
	}
	if it.ExpiresAt != "" {
		if l.ExpiresAt, err = importTime("expires_at", it.ExpiresAt, time.Time{}); err != nil {
			return err
		}
		if !l.ExpiresAt.After(l.CreatedAt) {
			return refuse("expires_at", "expires_at must be after created_at")
		}
	}
	if it.RevokedAt != "" {
		if l.RevokedAt, err = importTime("revoked_at", it.RevokedAt, latest); err != nil {
			return err
		}
		if l.RevokedAt.Before(l.CreatedAt) {
			return refuse("revoked_at", "revoked_at must not be before created_at")
		}
	}
	return nil
}

// importTime parses an RFC 3339 time of field, from minImportTime to
// latest (zero: no bound), to the microsecond the stores keep.
func importTime(field, v string, latest time.Time) (time.Time, error) {
	t, err := link.ParseTime(v)
	if err != nil {
		return time.Time{}, refuse(field, "%s must be an RFC 3339 time", field)
	}
	t = t.UTC().Truncate(time.Microsecond)
	if t.Before(minImportTime) {
		return time.Time{}, refuse(field, "%s must not be before %s", field, minImportTime.Format(time.DateOnly))
	}
	if !latest.IsZero() && t.After(latest) {
		return time.Time{}, refuse(field, "%s is in the future", field)
	}
	return t, nil
}

// importRules judges the rules and remaining_clicks into l, whose times
// are set.
func importRules(it link.ImportItem, l *link.Link) error {
	if err := it.ApplyRules(l); err != nil {
		return refusedBy(err)
	}
	if it.RemainingClicks != nil {
		if l.MaxClicks == 0 {
			return refuse("remaining_clicks", "remaining_clicks is only allowed with max_clicks")
		}
		if *it.RemainingClicks < 0 || *it.RemainingClicks > l.MaxClicks {
			return refuse("remaining_clicks", "remaining_clicks must be 0 to max_clicks")
		}
		l.ClicksServed = l.MaxClicks - *it.RemainingClicks
	}
	return nil
}
