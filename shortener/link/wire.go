package link

import (
	"encoding/json"
	"time"
)

// Response is a link as the API shows it: the answer of GET
// <api>/links/<code> and every answer that carries a link. It is the one
// wire shape of a link, written by the server and read by the CLI and the
// benchmarks.
type Response struct {
	Code string `json:"code"`
	// Domain is the link's link domain; absent for the default domain.
	Domain    string     `json:"domain,omitempty"`
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
	TargetingResponse
	// Clicks is the link's all-time click total, in GET answers only;
	// absent when click counting is off or its counters cannot be read.
	Clicks *int64 `json:"clicks,omitempty"`
}

// CreateRequest is the body of POST <api>/links and one item of a batch
// create: what the server decodes and the CLI sends. Times are RFC 3339
// strings, so that a bad one is refused naming its field.
type CreateRequest struct {
	LongURL   string `json:"long_url"`
	Code      string `json:"code,omitempty"`
	Codes     string `json:"codes,omitempty"`
	ExpiresAt string `json:"expires_at,omitempty"`
	// Title is a name for people: at most 200 characters, on one line
	// (no control characters, no bidi controls).
	Title string `json:"title,omitempty"`
	// Tags: at most 20, each 1 to 50 of A-Z a-z 0-9 _ . : -, each once
	// (case-sensitive).
	Tags []string `json:"tags,omitempty"`
	// Notes: at most 2,000 characters; line breaks and tabs allowed.
	Notes string `json:"notes,omitempty"`
	RuleRequest
	TargetingRequest
	// Reuse: without a custom code, answer an existing link instead of
	// creating one when one matches.
	Reuse bool `json:"reuse,omitempty"`
}

// TargetingRequest is where a link sends a visitor besides its long URL,
// as a create or an import gives it: the handler judges rules and
// variants with shortener/targeting and fallback_url with its URL policy.
// Absent or null: none.
type TargetingRequest struct {
	// Rules: the ordered destination rules, the first whose conditions
	// all hold wins.
	Rules json.RawMessage `json:"rules,omitempty"`
	// Variants: the link's own A/B split when no rule matches.
	Variants json.RawMessage `json:"variants,omitempty"`
	// FallbackURL: where an expired, revoked, not yet valid or used-up
	// link sends a person instead of answering 404 or 410.
	FallbackURL string `json:"fallback_url,omitempty"`
}

// TargetingResponse shows a link's rules, variants and fallback URL, each
// null when it has none.
type TargetingResponse struct {
	Rules       json.RawMessage `json:"rules"`
	Variants    json.RawMessage `json:"variants"`
	FallbackURL *string         `json:"fallback_url"`
}

// TargetingOf shows l's targeting.
func TargetingOf(l Link) TargetingResponse {
	return TargetingResponse{Rules: TargetingPart(l.Targeting, "rules"),
		Variants: TargetingPart(l.Targeting, "variants"), FallbackURL: nullString(l.FallbackURL)}
}

// BatchResult is one item's answer of a batch create: status 201
// (created) or 200 (reused) with the link, or a 4xx/5xx status with the
// error.
type BatchResult struct {
	Status int       `json:"status"`
	Link   *Response `json:"link,omitempty"`
	Error  string    `json:"error,omitempty"`
}

// ImportItem is one link of an import (POST <api>/links/batch with
// "mode": "import"); a line of the NDJSON export is one. The server
// decodes it strictly, the CLI and the benchmarks write it.
type ImportItem struct {
	// Code: required; any code the redirect path serves (1 to 64 of
	// A-Z a-z 0-9 _ -), other than the API's and the dashboard's path.
	Code string `json:"code"`
	// ShortURL is ignored: the short URL follows the code and the host.
	ShortURL string `json:"short_url,omitempty"`
	// LongURL: required, judged as a create judges it.
	LongURL string `json:"long_url"`
	// CreatedAt (RFC 3339) is kept as given: from 1990-01-01 to 5 minutes
	// past now. Default: now.
	CreatedAt string `json:"created_at,omitempty"`
	// ExpiresAt (RFC 3339), after created_at; a past one imports the link
	// expired.
	ExpiresAt string `json:"expires_at,omitempty"`
	// RevokedAt (RFC 3339) imports the link revoked at that time: from
	// created_at to 5 minutes past now.
	RevokedAt string `json:"revoked_at,omitempty"`
	// Title, Tags and Notes: bounded as in a create.
	Title string   `json:"title,omitempty"`
	Tags  []string `json:"tags,omitempty"`
	Notes string   `json:"notes,omitempty"`
	// Clicks is the click total the link had elsewhere, kept as its
	// baseline: 0 to 1,000,000,000,000. Default: 0.
	Clicks *int64 `json:"clicks,omitempty"`
	RuleRequest
	TargetingRequest
	// RemainingClicks, with max_clicks, keeps the redirects already served
	// (max_clicks - remaining_clicks): 0 to max_clicks.
	RemainingClicks *int64 `json:"remaining_clicks,omitempty"`
	// Hourly are the link's click rollups: at most 20,000 rows; clicks,
	// when given, is at least their sum.
	Hourly []ImportHour `json:"hourly,omitempty"`
}

// ImportHour is one row of an import item's hourly.
type ImportHour struct {
	// Hour (RFC 3339) is the start of a UTC hour.
	Hour   string `json:"hour"`
	People int64  `json:"people"`
	Bots   int64  `json:"bots"`
}

// ImportResult is one item's answer of an import.
type ImportResult struct {
	Code string `json:"code,omitempty"`
	// Result is created, skipped, conflict or refused.
	Result string `json:"result"`
	// Field names the field of a refused item ("" for the item as a
	// whole).
	Field *string `json:"field,omitempty"`
	// Error says why an item was refused or what a conflict differs in.
	Error string `json:"error,omitempty"`
	// Existing is the stored link of a skipped or conflicting item, in the
	// shape of an import item.
	Existing *ImportedLink `json:"existing,omitempty"`
}

// ImportedLink is a stored link as an import result shows it.
type ImportedLink struct {
	LongURL   string     `json:"long_url"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt *time.Time `json:"expires_at"`
	RevokedAt *time.Time `json:"revoked_at"`
	Title     *string    `json:"title"`
	Tags      []string   `json:"tags"`
	Notes     *string    `json:"notes"`
	Clicks    int64      `json:"clicks"`
}
