package cli

import (
	"encoding/json"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// Link is a link as the API answers it (GET <api>/links/<code>): the
// server's wire shape, and the warning a create may carry.
type Link struct {
	link.Response
	Warning string `json:"warning,omitempty"`
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
