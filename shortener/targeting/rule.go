package targeting

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// rule judges and compiles rules[i]; its query conditions join idx.
func (c *compiler) rule(i int, in Rule, idx *queryIndex) (rule, Rule, error) {
	path := "rules[" + strconv.Itoa(i) + "]"
	out := rule{name: defaultName(i)}
	norm := Rule{Name: in.Name}
	if in.Name != "" {
		if err := c.ruleName(path+".name", i, in.Name); err != nil {
			return out, norm, err
		}
		out.name = in.Name
	}
	if in.If != nil {
		cd, ncd, err := c.condition(path+".if", in.If, idx)
		if err != nil {
			return out, norm, err
		}
		out.cond, norm.If = cd, ncd
	}
	err := c.destination(path, in, norm.If, &out, &norm)
	return out, norm, err
}

// defaultName is the display name of the unnamed rules[i].
func defaultName(i int) string { return "rule-" + strconv.Itoa(i+1) }

// ruleName judges the name of rules[i]: 1 to MaxRuleName printable
// characters, unique in the set, and "rule-<n>" only at position n, so
// that no two rules show one name.
func (c *compiler) ruleName(path string, i int, name string) error {
	if !utf8.ValidString(name) {
		return fieldErr(path, "not valid UTF-8")
	}
	if n := utf8.RuneCountInString(name); n > MaxRuleName {
		return fieldErr(path, "%d characters long, at most %d are allowed", n, MaxRuleName)
	}
	for _, r := range name {
		if !unicode.IsPrint(r) {
			return fieldErr(path, "holds the unprintable character %U", r)
		}
	}
	if n, ok := defaultIndex(name); ok && n != i {
		return fieldErr(path, "%q is the name shown for an unnamed rule at that position", name)
	}
	if c.names[name] {
		return fieldErr(path, "%q is the name of an earlier rule", name)
	}
	c.names[name] = true
	return nil
}

// defaultIndex reports whether name is the display name of an unnamed
// rule, and of which: "rule-3" is rules[2]'s.
func defaultIndex(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, "rule-")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 1 || strconv.Itoa(n) != rest {
		return 0, false
	}
	return n - 1, true
}

// destination judges a rule's url, app_url and variants (cond is its
// normalised "if") and sets them on out and norm.
func (c *compiler) destination(path string, in Rule, cond *Condition, out *rule, norm *Rule) error {
	hasURL, hasVariants := in.URL != "", len(in.Variants) > 0
	switch {
	case hasURL && hasVariants:
		return fieldErr(path+".variants", "a rule has url or variants, not both")
	case !hasURL && !hasVariants:
		return fieldErr(path, "a rule needs url or variants")
	}
	if hasURL {
		if err := c.checkURL(path+".url", in.URL); err != nil {
			return err
		}
		out.url, norm.URL = in.URL, in.URL
	}
	if in.AppURL != "" {
		if err := c.appURL(path+".app_url", in.AppURL, hasURL, cond); err != nil {
			return err
		}
		out.appURL, norm.AppURL = in.AppURL, in.AppURL
	}
	if hasVariants {
		sp, nv, err := c.split(path+".variants", in.Variants)
		if err != nil {
			return err
		}
		out.variants, norm.Variants = sp, nv
	}
	return nil
}

// appURL judges a rule's app_url: beside a url, on a rule for iOS and/or
// Android only, with an allowed scheme.
func (c *compiler) appURL(path, raw string, hasURL bool, cond *Condition) error {
	if !hasURL {
		return fieldErr(path, "needs url (the store or web fallback) beside it, not variants")
	}
	if !mobileOnly(cond) {
		return fieldErr(path, `needs if.os holding only "ios" and/or "android"`)
	}
	return c.checkAppURL(path, raw)
}

// mobileOnly reports whether cond's os list is non-empty and holds only
// ios and android.
func mobileOnly(cond *Condition) bool {
	if cond == nil || len(cond.OS) == 0 {
		return false
	}
	for _, os := range cond.OS {
		if os != "ios" && os != "android" {
			return false
		}
	}
	return true
}
