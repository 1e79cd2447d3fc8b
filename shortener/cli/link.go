package cli

import (
	"encoding/json"
	"time"
)

// Link is a link as the API answers it (GET <api>/links/<code>).
type Link struct {
	Code            string     `json:"code"`
	ShortURL        string     `json:"short_url"`
	LongURL         string     `json:"long_url"`
	CreatedAt       time.Time  `json:"created_at"`
	ExpiresAt       *time.Time `json:"expires_at"`
	RevokedAt       *time.Time `json:"revoked_at,omitempty"`
	Title           *string    `json:"title"`
	Tags            []string   `json:"tags"`
	Notes           *string    `json:"notes"`
	RedirectStatus  *int       `json:"redirect_status,omitempty"`
	ValidFrom       *time.Time `json:"valid_from,omitempty"`
	MaxClicks       *int64     `json:"max_clicks,omitempty"`
	ForwardQuery    *bool      `json:"forward_query,omitempty"`
	RemainingClicks *int64     `json:"remaining_clicks,omitempty"`
	Clicks          *int64     `json:"clicks,omitempty"`
	Warning         string     `json:"warning,omitempty"`
}

// rawLink is a link with the JSON it was read from, printed as is by --json.
type rawLink struct {
	Link
	raw json.RawMessage
}

func (l *rawLink) UnmarshalJSON(b []byte) error {
	l.raw = append(l.raw[:0], b...)
	return json.Unmarshal(b, &l.Link)
}

// status is the link's one status, as the listing's status parameter
// names them: the first of revoked, expired, exhausted, scheduled, active.
func (l *Link) status(now time.Time) string {
	switch {
	case l.RevokedAt != nil:
		return "revoked"
	case l.ExpiresAt != nil && !now.Before(*l.ExpiresAt):
		return "expired"
	case l.RemainingClicks != nil && *l.RemainingClicks <= 0:
		return "exhausted"
	case l.ValidFrom != nil && now.Before(*l.ValidFrom):
		return "scheduled"
	}
	return "active"
}
