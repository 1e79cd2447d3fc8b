package link

import "time"

// Response is a link as the API shows it: the answer of GET
// <api>/links/<code> and every answer that carries a link. It is the one
// wire shape of a link, written by the server and read by the CLI and the
// benchmarks.
type Response struct {
	Code      string     `json:"code"`
	ShortURL  string     `json:"short_url"`
	LongURL   string     `json:"long_url"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt *time.Time `json:"expires_at"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
	// Title, Tags and Notes are null when the link has none.
	Title *string  `json:"title"`
	Tags  []string `json:"tags"`
	Notes *string  `json:"notes"`
	RuleResponse
	// Clicks is the link's all-time click total, in GET answers only;
	// absent when click counting is off or its counters cannot be read.
	Clicks *int64 `json:"clicks,omitempty"`
}
