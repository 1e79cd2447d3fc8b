package targeting

import (
	"net/netip"
	"strconv"
)

// cond is a Condition compiled; an empty one always holds.
type cond struct {
	needs                        Needs
	device, os, browser, country []string
	lang                         langSet
	ips                          []netip.Prefix
	queryFrom, queryTo           int // the rule's slots of the set's queryIndex
	time                         *window
}

// Values device and os may take, as the clicks user-agent parser names them.
var (
	deviceNames = []string{"mobile", "tablet", "desktop", "tv", "bot", "other"}
	osNames     = []string{"ios", "android", "windows", "macos", "linux", "chromeos", "other"}
)

// condition judges and compiles a rule's "if" at path; an empty one
// normalises to nil.
func (c *compiler) condition(path string, in *Condition, idx *queryIndex) (cond, *Condition, error) {
	var out cond
	var norm Condition
	var err error
	lists := []struct {
		field string
		in    []string
		max   int
		value func(string) (string, string)
		dst   *[]string
	}{
		{"device", in.Device, MaxUAValues, oneOf(deviceNames), &norm.Device},
		{"os", in.OS, MaxUAValues, oneOf(osNames), &norm.OS},
		{"browser", in.Browser, MaxUAValues, browserValue, &norm.Browser},
		{"country", in.Country, MaxCountries, countryValue, &norm.Country},
		{"language", in.Language, MaxLanguages, languageValue, &norm.Language},
		{"ip", in.IP, MaxIPs, ipValue, &norm.IP},
	}
	for _, l := range lists {
		if l.field == "country" && len(l.in) > 0 && !c.opts.GeoIP {
			return out, nil, fieldErr(path+".country", "a country condition needs a GeoIP database, and none is loaded")
		}
		if *l.dst, err = normList(path+"."+l.field, l.in, l.max, l.value); err != nil {
			return out, nil, err
		}
	}
	if norm.Query, err = c.query(path+".query", in.Query, idx, &out); err != nil {
		return out, nil, err
	}
	if in.Time != nil {
		if out.time, norm.Time, err = c.window(path+".time", in.Time); err != nil {
			return out, nil, err
		}
	}
	out.compile(&norm, &c.langs)
	if out.needs == 0 {
		return cond{}, nil, nil
	}
	return out, &norm, nil
}

// compile fills c's lists from the normalised condition and says what
// they need.
func (c *cond) compile(n *Condition, langs *langIndex) {
	c.device, c.os, c.browser, c.country = n.Device, n.OS, n.Browser, n.Country
	c.lang = langs.add(n.Language)
	for _, s := range n.IP {
		c.ips = append(c.ips, netip.MustParsePrefix(s)) // ipValue wrote it
	}
	flags := []struct {
		on   bool
		need Needs
	}{
		{len(c.device)+len(c.os)+len(c.browser) > 0, NeedUA},
		{len(c.country) > 0, NeedCountry},
		{len(c.lang.tags) > 0, NeedLanguage},
		{len(c.ips) > 0, NeedAddr},
		{c.queryTo > c.queryFrom, NeedQuery},
		{c.time != nil, NeedTime},
	}
	for _, f := range flags {
		if f.on {
			c.needs |= f.need
		}
	}
}

// normList judges a list of values at path: at most max, each normalised
// by value (which returns a message for a bad one), none twice. An empty
// list is nil.
func normList(path string, in []string, max int, value func(string) (string, string)) ([]string, error) {
	if len(in) == 0 {
		return nil, nil
	}
	if len(in) > max {
		return nil, fieldErr(path, "%d values given, at most %d are allowed", len(in), max)
	}
	out := make([]string, 0, len(in))
	seen := make(map[string]bool, len(in))
	for i, s := range in {
		v, msg := value(s)
		if msg != "" {
			return nil, fieldErr(path+"["+strconv.Itoa(i)+"]", "%s", msg)
		}
		if seen[v] {
			return nil, fieldErr(path+"["+strconv.Itoa(i)+"]", "%q is given twice", v)
		}
		seen[v] = true
		out = append(out, v)
	}
	return out, nil
}
