package clicks

import (
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// Overview counts the clicks of every link over the UTC days
// overlapping a window: the answer of `GET <api>/stats`.
type Overview struct {
	// From and To are the UTC days counted: [From, To).
	From   time.Time `json:"from"`
	To     time.Time `json:"to"`
	Total  int64     `json:"total"`
	People int64     `json:"people"`
	Bots   int64     `json:"bots"`
	// Links are the links with the most clicks (then by code).
	Links []LinkClicks `json:"links"`
	// Countries and Referrers are the top values across links, as the
	// breakdowns group_by=country and group_by=referrer list them.
	Countries []BreakdownEntry `json:"countries"`
	Referrers []BreakdownEntry `json:"referrers"`
	GroupBy   string           `json:"group_by,omitempty"`
	Breakdown []BreakdownEntry `json:"breakdown,omitzero"`
}

// LinkClicks is a link's clicks over a window.
type LinkClicks struct {
	Code string `json:"code"`
	// Domain is the link's link domain; absent for the default domain.
	Domain string `json:"domain,omitempty"`
	Clicks int64  `json:"clicks"`
}

// LinksOf turns a top list of codes into LinkClicks.
func LinksOf(top []BreakdownEntry) []LinkClicks {
	out := make([]LinkClicks, len(top))
	for i, e := range top {
		host, code := link.SplitDomainKey(e.Value)
		out[i] = LinkClicks{Code: code, Domain: host, Clicks: e.Clicks}
	}
	return out
}
