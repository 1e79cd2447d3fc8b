package link

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// MaxMaxClicks is the largest max_clicks a link may have.
const MaxMaxClicks = 1_000_000_000_000

// Bounds of a link's targeting and fallback (Link.Targeting,
// Link.FallbackURL).
const (
	MaxTargetingBytes = 64 << 10
	MaxFallbackURL    = 2048
)

// MinValidFrom is the earliest valid_from accepted: earlier times would
// mean nothing (the link is active) and the epoch itself is the embedded
// store's "none".
var MinValidFrom = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// RuleRequest holds the per-link rules of a create request. A field
// absent or null leaves the rule unset.
type RuleRequest struct {
	// RedirectStatus: 301, 302, 307 or 308. Default: the handler's `status`.
	RedirectStatus *int `json:"redirect_status,omitempty"`
	// ValidFrom (RFC 3339): before it the code answers 404 as an unknown
	// one. From 2000-01-01T00:00:00Z, before expires_at when both are
	// given; kept to the microsecond.
	ValidFrom string `json:"valid_from,omitempty"`
	// MaxClicks: at most this many redirects are served, then 410. 1 to
	// 1000000000000.
	MaxClicks *int64 `json:"max_clicks,omitempty"`
	// ForwardQuery: append the request's query to the long URL. Default:
	// the handler's `forward_query`.
	ForwardQuery *bool `json:"forward_query,omitempty"`
}

// RuleResponse is a link's rules as the API shows them, null when unset.
type RuleResponse struct {
	RedirectStatus *int       `json:"redirect_status"`
	ValidFrom      *time.Time `json:"valid_from"`
	MaxClicks      *int64     `json:"max_clicks"`
	ForwardQuery   *bool      `json:"forward_query"`
	// RemainingClicks is how many redirects the link may still serve;
	// null without max_clicks.
	RemainingClicks *int64 `json:"remaining_clicks"`
}

// ApplyRules judges the rules of a request and sets them on l, whose
// ExpiresAt is already set; the error names the field.
func (req RuleRequest) ApplyRules(l *Link) error {
	if req.RedirectStatus != nil {
		l.RedirectStatus = *req.RedirectStatus
		if !ValidRedirectStatus(l.RedirectStatus) {
			return fmt.Errorf("redirect_status must be 301, 302, 307 or 308")
		}
	}
	if req.ValidFrom != "" {
		t, err := ParseTime(req.ValidFrom)
		if err != nil {
			return errors.New("valid_from must be an RFC 3339 time")
		}
		l.ValidFrom = t.UTC().Truncate(time.Microsecond)
	}
	if req.MaxClicks != nil {
		l.MaxClicks = *req.MaxClicks
		if l.MaxClicks < 1 {
			return fmt.Errorf("max_clicks must be 1 to %d", int64(MaxMaxClicks))
		}
	}
	l.ForwardQuery = req.ForwardQuery
	return CheckRules(*l)
}

// CheckRules judges a link's rules; the error names the field. The API and
// both stores apply it.
func CheckRules(l Link) error {
	if l.RedirectStatus != 0 && !ValidRedirectStatus(l.RedirectStatus) {
		return fmt.Errorf("redirect_status must be 301, 302, 307 or 308")
	}
	if !l.ValidFrom.IsZero() {
		if l.ValidFrom.Before(MinValidFrom) {
			return fmt.Errorf("valid_from must not be before %s", MinValidFrom.Format(time.RFC3339))
		}
		if !l.ExpiresAt.IsZero() && !l.ValidFrom.Before(l.ExpiresAt) {
			return errors.New("valid_from must be before expires_at")
		}
	}
	if l.MaxClicks < 0 || l.MaxClicks > MaxMaxClicks {
		return fmt.Errorf("max_clicks must be 1 to %d", int64(MaxMaxClicks))
	}
	if l.ClicksServed < 0 {
		return errors.New("clicks served must not be negative")
	}
	return checkTargeting(l)
}

// checkTargeting bounds what the stores keep of a link's targeting and
// fallback; the handler judged their content.
func checkTargeting(l Link) error {
	if len(l.Targeting) > MaxTargetingBytes {
		return fmt.Errorf("rules and variants must be at most %d bytes of JSON", MaxTargetingBytes)
	}
	if l.Targeting != nil && (!json.Valid(l.Targeting) || l.Targeting[0] != '{') {
		return errors.New("rules and variants must be a JSON object")
	}
	if len(l.FallbackURL) > MaxFallbackURL {
		return fmt.Errorf("fallback_url must be at most %d bytes", MaxFallbackURL)
	}
	return nil
}

// Exhausted reports whether the link has served its max_clicks redirects:
// it answers 410 from then on.
func (l Link) Exhausted() bool {
	return l.MaxClicks > 0 && l.ClicksServed >= l.MaxClicks
}

func ValidRedirectStatus(s int) bool {
	switch s {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// RulesResponse shows l's rules.
func RulesResponse(l Link) RuleResponse {
	var out RuleResponse
	if l.RedirectStatus != 0 {
		s := l.RedirectStatus
		out.RedirectStatus = &s
	}
	out.ValidFrom = UTCOrNil(l.ValidFrom)
	if l.MaxClicks > 0 {
		m, left := l.MaxClicks, max(l.MaxClicks-l.ClicksServed, 0)
		out.MaxClicks, out.RemainingClicks = &m, &left
	}
	if l.ForwardQuery != nil {
		f := *l.ForwardQuery
		out.ForwardQuery = &f
	}
	return out
}
