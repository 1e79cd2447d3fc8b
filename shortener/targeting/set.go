package targeting

import (
	"bytes"
	"encoding/json"
	"time"
)

// Set is a validated, compiled rule set. It is immutable, so one Set may
// decide for many goroutines at once; the zero value and nil have no
// rules.
type Set struct {
	rules    []rule
	variants split // the link-level split; empty without one
	query    queryIndex
	langs    langIndex
	needs    Needs
	id       uint64 // unique among the sets made (Memo)
	memo     bool   // its rules read only what a Memo keys on (memoable)

	src         []Rule // normalised, for Rules
	srcVariants []Variant
}

// rule is a Rule compiled.
type rule struct {
	name     string // the display name: Name, or "rule-<n>"
	cond     cond
	url      string
	appURL   string
	variants split
}

// wire is the JSON object Parse reads and a rule set's stored form.
type wire struct {
	Rules    []Rule    `json:"rules,omitempty"`
	Variants []Variant `json:"variants,omitempty"`
}

// Parse reads the JSON object {"rules": [...], "variants": [...]} and
// compiles it with New. An empty input, null or a set without rules and
// variants gives nil and no error. Input over MaxJSON bytes is refused
// unread. Every error is a *FieldError.
func Parse(data []byte, opts Options) (*Set, error) {
	if len(data) > MaxJSON {
		return nil, fieldErr("", "the rule set is %d bytes, at most %d are allowed", len(data), MaxJSON)
	}
	if t := bytes.TrimSpace(data); len(t) == 0 || string(t) == "null" {
		return nil, nil
	}
	if err := checkShape(data); err != nil {
		return nil, err
	}
	var w wire
	if err := json.Unmarshal(data, &w); err != nil { // checkShape let through only what decodes
		return nil, fieldErr("", "invalid JSON: %v", err)
	}
	return New(w.Rules, w.Variants, opts)
}

// New judges and compiles the rules and link-level variants of a link, as
// decoded from its "rules" and "variants" fields. No rules and no
// variants give nil and no error. Every error is a *FieldError naming the
// first offending field.
func New(rules []Rule, variants []Variant, opts Options) (*Set, error) {
	if len(rules) > MaxRules {
		return nil, fieldErr("rules", "%d rules given, at most %d are allowed", len(rules), MaxRules)
	}
	if len(rules) == 0 && len(variants) == 0 {
		return nil, nil
	}
	c := &compiler{opts: opts, names: map[string]bool{}, locations: map[string]*time.Location{}}
	s := &Set{}
	for i := range rules {
		r, norm, err := c.rule(i, rules[i], &s.query)
		if err != nil {
			return nil, err
		}
		s.rules = append(s.rules, r)
		s.src = append(s.src, norm)
		s.needs |= r.cond.needs
		if r.variants.n() > 0 {
			s.needs |= NeedVisitor
		}
	}
	s.langs = c.langs
	if len(variants) > 0 {
		sp, norm, err := c.split("variants", variants)
		if err != nil {
			return nil, err
		}
		s.variants, s.srcVariants = sp, norm
		s.needs |= NeedVisitor
	}
	// Measured as json.Marshal writes it ('&', '<', '>' escaped), so that
	// the stored form of any set New accepts parses again.
	if b, _ := json.Marshal(wire{s.src, s.srcVariants}); len(b) > MaxJSON {
		return nil, fieldErr("", "the rule set is %d bytes as normalised, at most %d are allowed", len(b), MaxJSON)
	}
	s.id, s.memo = setIDs.Add(1), s.memoable()
	return s, nil
}

// compiler holds what judging one rule set needs across its rules.
type compiler struct {
	opts      Options
	names     map[string]bool           // rule names given so far
	locations map[string]*time.Location // time zones loaded so far
	langs     langIndex                 // the language tags of the rules so far
}

// Rules returns the rules in normalised form: what to store and show.
// Marshalled and parsed again, they give the same set.
func (s *Set) Rules() []Rule {
	if s == nil || len(s.src) == 0 {
		return nil
	}
	out := make([]Rule, len(s.src))
	for i, r := range s.src {
		out[i] = r.clone()
	}
	return out
}

// Variants returns the link-level variants in normalised form.
func (s *Set) Variants() []Variant {
	if s == nil {
		return nil
	}
	return cloneSlice(s.srcVariants)
}

// Needs tells which visitor values Decide may read, so that a redirect
// computes only those.
func (s *Set) Needs() Needs {
	if s == nil {
		return 0
	}
	return s.needs
}

func (r Rule) clone() Rule {
	r.Variants = cloneSlice(r.Variants)
	if r.If != nil {
		c := *r.If
		c.Device, c.OS, c.Browser = cloneSlice(c.Device), cloneSlice(c.OS), cloneSlice(c.Browser)
		c.Country, c.Language, c.IP = cloneSlice(c.Country), cloneSlice(c.Language), cloneSlice(c.IP)
		c.Query = cloneSlice(c.Query)
		for i, q := range c.Query {
			if q.Equals != nil {
				v := *q.Equals
				c.Query[i].Equals = &v
			}
		}
		if c.Time != nil {
			t := *c.Time
			t.Days = cloneSlice(t.Days)
			if t.Hours != nil {
				h := *t.Hours
				t.Hours = &h
			}
			c.Time = &t
		}
		r.If = &c
	}
	return r
}

// cloneSlice copies s; nil stays nil.
func cloneSlice[T any](s []T) []T {
	if s == nil {
		return nil
	}
	return append(make([]T, 0, len(s)), s...)
}
