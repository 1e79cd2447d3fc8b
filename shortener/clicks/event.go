package clicks

import (
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// EventType is the type of a click's outbox event (webhooks).
const EventType = "click"

// ClickEvent is a click as webhooks announce it: the data of a "click"
// event, what the counters keep of it (ClickDims' values, the referrer
// host, the visitor's daily hash as uniques count it), never the
// address or the user agent.
type ClickEvent struct {
	Code string `json:"code"`
	// Domain is the link's link domain; absent for the default domain.
	Domain string    `json:"domain,omitempty"`
	At     time.Time `json:"at"`
	// Bot: a crawler, a script or an empty user agent, counted apart from
	// people.
	Bot bool `json:"bot"`
	// Referrer is the Referer's host, lower-case; absent when none.
	Referrer string `json:"referrer,omitempty"`
	// The dimensions, as /stats groups by them: "unknown" when not
	// derived; Region and City absent without a City database.
	Country string `json:"country"`
	Region  string `json:"region,omitempty"`
	City    string `json:"city,omitempty"`
	Device  string `json:"device"`
	OS      string `json:"os"`
	Browser string `json:"browser"`
	Source  string `json:"source"` // "link" or "qr"
	// Rule and Variant are the targeting rule and A/B variant the
	// redirect chose; absent when none.
	Rule    string `json:"rule,omitempty"`
	Variant string `json:"variant,omitempty"`
	// Visitor is the visitor's hash under the day's salt (hex), the same
	// for one visitor on one UTC day only; absent when unknown.
	Visitor string `json:"visitor,omitempty"`
}

// NewClickEvent makes the event of a click the writer derived (its
// dimensions set, its address and user agent cleared).
func NewClickEvent(c Click) ClickEvent {
	d := ClickDims(c)
	host, code := link.SplitDomainKey(c.Code)
	e := ClickEvent{Code: code, Domain: host, At: c.At.UTC(), Bot: c.Bot(), Country: d[0], Device: d[3], OS: d[4], Browser: d[5],
		Source: d[6], Rule: d[7], Variant: d[8]}
	if d[1] != UnknownDim {
		e.Region = d[1]
	}
	if d[2] != UnknownDim {
		e.City = d[2]
	}
	if c.Referrer != "" {
		e.Referrer = c.Referrer
		if !ValidReferrerHost(c.Referrer) {
			e.Referrer = OtherReferrer
		}
	}
	if c.Visitor != 0 {
		e.Visitor = hex16(c.Visitor)
	}
	return e
}

// SameFields reports whether NewClickEvent gives c and o the same fields
// but for their code, domain, time and visitor: what it derives the
// others from is equal. (A new field of Click that NewClickEvent reads
// must be compared here: TestSameFields lists the fields.)
func (c Click) SameFields(o Click) bool {
	return c.Class == o.Class && c.Referrer == o.Referrer && c.Country == o.Country && c.Region == o.Region &&
		c.City == o.City && c.Device == o.Device && c.OS == o.OS && c.Browser == o.Browser && c.QR == o.QR &&
		c.Rule == o.Rule && c.Variant == o.Variant
}

// hex16 is v as 16 lower-case hex digits.
func hex16(v uint64) string {
	const digits = "0123456789abcdef"
	var b [16]byte
	for i := 15; i >= 0; i-- {
		b[i] = digits[v&15]
		v >>= 4
	}
	return string(b[:])
}
