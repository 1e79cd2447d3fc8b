package targeting

import (
	"net/netip"
	"time"
)

// Needs is a set of the visitor values a rule set reads, so that a
// redirect computes only those.
type Needs uint8

const (
	NeedUA       Needs = 1 << iota // Device, OS, Browser (a device, os or browser condition)
	NeedCountry                    // Country
	NeedLanguage                   // AcceptLanguage
	NeedAddr                       // Addr
	NeedQuery                      // RawQuery
	NeedTime                       // Now
	NeedVisitor                    // Key and Link (any variants)
)

// Visitor is what a redirect knows of one visit. A value the set does not
// need (Set.Needs) may be left zero; an unknown value ("", the zero
// address, the zero time) matches no condition on it.
type Visitor struct {
	Device, OS, Browser string     // lower-case, as the clicks user-agent parser names them
	Country             string     // ISO 3166-1 alpha-2, upper-case
	AcceptLanguage      string     // the raw header; its first MaxAcceptLanguage bytes are read
	Addr                netip.Addr // the client address
	RawQuery            string     // the request's raw query; its first MaxRawQuery bytes are read
	Now                 time.Time
	Key                 uint64 // the visitor's keyed hash: the same visitor, the same key
	Link                string // the link's code
}

// Decision is where a visit goes.
type Decision struct {
	Rule        int    // index of the matched rule, -1 for none
	Variant     int    // index in the chosen variant list, -1 for none
	URL         string // the destination; "" for the link's own
	AppURL      string // the matched rule's app_url, if any
	RuleName    string // the matched rule's display name ("rule-3"); "" for none
	VariantName string // the chosen variant's name; "" for none
}

// Decide applies the set to one visit: the first rule whose conditions
// all hold, else the link-level variants, else nothing (URL ""). It
// allocates nothing and never panics; a nil Visitor is an unknown one.
func (s *Set) Decide(v *Visitor) Decision {
	if s == nil {
		return Decision{Rule: -1, Variant: -1}
	}
	var zero Visitor
	if v == nil {
		v = &zero
	}
	return s.decision(s.firstRule(v), v)
}

// firstRule returns the index of the first rule whose conditions all
// hold for v, -1 for none.
func (s *Set) firstRule(v *Visitor) int {
	e := eval{set: s, v: v}
	for i := range s.rules {
		if e.holds(&s.rules[i].cond) {
			return i
		}
	}
	return -1
}

// decision is where rule i (-1: none) sends v: its URL, or its
// variants' pick for v; with no rule the link-level variants' pick.
func (s *Set) decision(i int, v *Visitor) Decision {
	d := Decision{Rule: i, Variant: -1}
	sp := &s.variants
	if i >= 0 {
		r := &s.rules[i]
		d.URL, d.AppURL, d.RuleName, sp = r.url, r.appURL, r.name, &r.variants
	}
	if sp.n() > 0 {
		d.Variant = sp.pick(bucket(v.Key, v.Link, i))
		d.URL, d.VariantName = sp.variants[d.Variant].URL, sp.variants[d.Variant].Name
	}
	return d
}

// eval is one Decide's state: the visitor values read so far, each
// computed once, on the first condition that needs it.
type eval struct {
	set *Set
	v   *Visitor

	addrDone, langDone, queryDone bool
	addr                          netip.Addr
	langs                         [langWords]uint64 // the set's tags the visitor's languages match
	hits                          queryHits
	clock                         localClock
}

// holds reports whether every condition of c holds, cheapest first.
func (e *eval) holds(c *cond) bool {
	if c.needs == 0 {
		return true
	}
	v := e.v
	switch {
	case len(c.device) > 0 && !contains(c.device, v.Device),
		len(c.os) > 0 && !contains(c.os, v.OS),
		len(c.browser) > 0 && !contains(c.browser, v.Browser),
		len(c.country) > 0 && !contains(c.country, v.Country),
		c.time != nil && !c.time.holds(v.Now, &e.clock),
		len(c.ips) > 0 && !inPrefixes(c.ips, e.visitorAddr()),
		c.queryTo > c.queryFrom && !e.queryHolds(c.queryFrom, c.queryTo),
		len(c.lang.ids) > 0 && !c.lang.hit(e.languages()):
		return false
	}
	return true
}

// contains reports whether v is one of list; "" (unknown) is in none.
func contains(list []string, v string) bool {
	if v == "" {
		return false
	}
	for _, s := range list {
		if s == v {
			return true
		}
	}
	return false
}

func (e *eval) visitorAddr() netip.Addr {
	if !e.addrDone {
		e.addr, e.addrDone = visitorAddr(e.v.Addr), true
	}
	return e.addr
}

func (e *eval) languages() *[langWords]uint64 {
	if !e.langDone {
		var rs langRanges
		rs.parse(e.v.AcceptLanguage)
		e.set.langs.mask(&rs, &e.langs)
		e.langDone = true
	}
	return &e.langs
}

// queryHolds reports whether the query satisfies one of slots [from, to).
func (e *eval) queryHolds(from, to int) bool {
	if !e.queryDone {
		e.set.query.scan(e.v.RawQuery, &e.hits)
		e.queryDone = true
	}
	for s := from; s < to; s++ {
		if e.hits.has(s) {
			return true
		}
	}
	return false
}
