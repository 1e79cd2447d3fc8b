package webhook

import (
	"crypto/rand"
	"strings"
	"time"
)

// Event types an endpoint may subscribe to.
const (
	TypeLinkCreated        = "link.created"
	TypeLinkUpdated        = "link.updated"
	TypeLinkRevoked        = "link.revoked"
	TypeLinkExpired        = "link.expired"
	TypeLinkMaxClicks      = "link.max_clicks_reached"
	TypeClick              = "click"
	TypeRatelimitExceeded  = "ratelimit.exceeded"
	TypeRatelimitBanSet    = "ratelimit.ban_set"
	TypeRatelimitThreshold = "ratelimit.threshold"
)

// EventTypes lists every event type, in the order the API documents them.
var EventTypes = []string{TypeLinkCreated, TypeLinkUpdated, TypeLinkRevoked, TypeLinkExpired, TypeLinkMaxClicks,
	TypeClick, TypeRatelimitExceeded, TypeRatelimitBanSet, TypeRatelimitThreshold}

// Bounds of an endpoint.
const (
	// MaxEndpoints bounds the endpoints of a store.
	MaxEndpoints = 100
	// MaxFilterValues bounds each of an endpoint's tag and code filters.
	MaxFilterValues = 100
	// MaxDescription bounds an endpoint's description, in bytes.
	MaxDescription = 1024
	// MaxKeys bounds the signing keys an endpoint holds at once: the
	// current one and those still signing after rotations.
	MaxKeys = 4
	// MaxBatch and MaxBatchWait bound the batching of click events.
	MaxBatch     = 1000
	MaxBatchWait = time.Minute
)

// Endpoint is a receiver of webhooks.
type Endpoint struct {
	ID          string // "ep_" and 26 characters (NewEndpointID)
	URL         string // judged by the URL policy when saved, again at connect time
	Description string
	// Types are the event types sent to it (EventTypes), at least one.
	Types []string
	// Tags and Codes filter the events of links: only those of a link
	// with one of Tags (when given) and one of Codes (when given).
	// Events of no link (the rate limiter's) pass them.
	Tags, Codes []string
	// Disabled endpoints get nothing; messages made before wait. Reason
	// says why: "disabled through the API", or the 410 Gone that did it.
	Disabled       bool
	DisabledReason string
	// Keys sign its messages: the first is the current one, the others
	// keep signing until their Until (a rotation's grace period).
	Keys []Key
	// Batch > 1 gathers up to Batch click events, over at most BatchWait,
	// in one message; 0 or 1: one message per click.
	Batch     int
	BatchWait time.Duration
	CreatedAt time.Time
	UpdatedAt time.Time
	// Version is 1 when created and one more with every change.
	Version int64
}

// Key is one signing key of an endpoint.
type Key struct {
	Secret Secret
	// Until is when a rotated-out key stops signing; zero for the
	// current key.
	Until time.Time
}

// Signing returns the secrets that sign a message at now: the current
// key and the rotated-out keys still in their grace period.
func (e Endpoint) Signing(now time.Time) []Secret {
	var out []Secret
	for _, k := range e.Keys {
		if k.Until.IsZero() || now.Before(k.Until) {
			out = append(out, k.Secret)
		}
	}
	return out
}

// Wants reports whether the endpoint takes an event of type typ about the
// link code with tags (code "" for events of no link).
func (e Endpoint) Wants(typ, code string, tags []string) bool {
	if e.Disabled || !contains(e.Types, typ) {
		return false
	}
	if code == "" {
		return true
	}
	if len(e.Codes) > 0 && !contains(e.Codes, code) {
		return false
	}
	if len(e.Tags) == 0 {
		return true
	}
	for _, t := range tags {
		if contains(e.Tags, t) {
			return true
		}
	}
	return false
}

func contains(list []string, v string) bool {
	for _, s := range list {
		if s == v {
			return true
		}
	}
	return false
}

// EndpointPrefix starts every endpoint id.
const EndpointPrefix = "ep_"

// NewEndpointID makes an endpoint id: "ep_" and 26 characters of
// lower-case Crockford base32 of 16 random bytes.
func NewEndpointID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand, Go 1.24+)
	return EndpointPrefix + idEncoding.EncodeToString(b[:])
}

// ValidEndpointID reports an id of NewEndpointID's form (ids in API
// paths come from clients).
func ValidEndpointID(id string) bool {
	rest, ok := strings.CutPrefix(id, EndpointPrefix)
	if !ok || len(rest) != 26 {
		return false
	}
	b, err := idEncoding.DecodeString(rest)
	return err == nil && idEncoding.EncodeToString(b) == rest
}
