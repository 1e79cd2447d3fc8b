// Package targeting decides, at redirect time, where one link sends one
// visitor: an ordered list of rules, each a set of conditions on the
// visitor (device, OS, browser, country, language, address, query,
// time) with a destination, and A/B splits (variants) that share a
// destination's traffic by weight. It imports only the standard library,
// nothing of Caddy, zap or this module.
//
// # Model
//
// A link's targeting is the JSON object
//
//	{"rules": [<rule>...], "variants": [<variant>...]}
//
// whose two fields are the link's "rules" and "variants". Parse reads that
// object; New takes the decoded fields. Either judges every field, refuses
// the first offending one with a *FieldError naming its JSON path
// ("rules[2].if.country[0]"), and compiles the rest into a *Set.
//
// A rule is
//
//	{"name": "iPhone users",            optional
//	 "if": {<condition>...},            optional: no "if" (or {}) always matches
//	 "url": "https://example.com/ios",  one of url and variants
//	 "app_url": "myapp://open/item/42", optional, see below
//	 "variants": [<variant>...]}
//
// and a variant is {"name": "a", "url": "https://example.com/a", "weight": 30}.
//
// # Deciding
//
// Rules are tried in order and the first whose conditions all hold wins;
// a condition whose value is a list holds when any element matches. The
// winning rule's url is the destination, or its variants pick one. When
// no rule matches, the link-level variants pick; without them the link's
// own destination is used (Decision.URL is ""). A visitor value the
// caller does not know ("", the zero address, the zero time) matches no
// condition on it.
//
// A variant is picked by bucket: the visitor's key, the link's code and
// the rule's index (-1 for the link-level list) are hashed into 0..99
// with a fixed function (FNV-1a and splitmix64, split.go), and the
// variants own consecutive ranges of buckets in list order, as many as
// their weight. The same key sees the same variant on every call, in
// every process and on every machine.
//
// # Fields and bounds
//
// Rule fields:
//   - name: 1 to 64 printable characters, unique within the link. A rule
//     without one is shown as "rule-<n>" (n its 1-based position); the
//     name "rule-<n>" is only allowed on the rule at position n.
//   - url: 1 to 2048 bytes of printable ASCII, accepted by
//     Options.CheckURL (by default: an absolute http or https URL).
//   - variants: 2 to 10 variants, names 1 to 32 of [A-Za-z0-9_-] unique in
//     their list, url as above, integer weights 1 to 99 summing to 100.
//     A rule has exactly one of url and variants.
//   - app_url: a deep link into an app, 1 to 2048 bytes of printable
//     ASCII, whose scheme is one of Options.AppSchemes (compared without
//     case; javascript, data, vbscript, file, blob and about never are);
//     an http or https app_url (a universal link) also passes CheckURL.
//     Only on a rule with url (the store or web fallback) whose if.os is
//     non-empty and holds only "ios" and/or "android".
//
// Conditions ("if"); an empty list is no condition, and values are
// accepted in any case and shown as below:
//   - device: up to 16 of mobile, tablet, desktop, tv, bot, other.
//   - os: up to 16 of ios, android, windows, macos, linux, chromeos, other.
//   - browser: up to 16 names of 1 to 32 of [a-z0-9 _-], as the caller's
//     user-agent parser names them, lower-cased.
//   - country: up to 250 ISO 3166-1 alpha-2 codes (two ASCII letters,
//     shown upper-case); refused unless Options.GeoIP.
//   - language: up to 32 BCP 47 tags of at most 64 bytes (subtags of 1
//     to 8 letters or digits joined by '-', the first 2 or 3 letters),
//     shown in the usual case: "fr-CA", "zh-Hant-TW". Matched by RFC 4647
//     lookup against the first 1024 bytes and 32 ranges of the visitor's
//     Accept-Language (language.go, acceptlang.go).
//   - ip: up to 64 addresses or CIDR prefixes, IPv4 or IPv6 (no zone),
//     shown as masked prefixes ("198.51.100.7/32"); an IPv4-mapped IPv6
//     address or prefix (/96 or longer) is shown and compared as IPv4.
//   - query: up to 8 of {"name": n, "equals": v} (the parameter n has the
//     value v) or {"name": n, "present": true} (n is given, with any
//     value); n 1 to 128 bytes, v at most 256, both as decoded. The
//     visitor's query is read as url.ParseQuery reads it, up to 4 KiB.
//   - time: {"tz", "from", "until", "days", "hours"}, at least one of the
//     last four. tz: an IANA zone name (default UTC; "Local" refused).
//     from, until: RFC 3339 instants from 1970 to 9999, from inclusive,
//     until exclusive, from before until; shown in UTC. days: up to 7 of
//     mon..sun. hours: {"from": 0..23, "until": 1..24}, from < until, the
//     local hours [from, until) of tz.
//
// Each list refuses a value given twice (after normalisation). A rule set
// holds at most 50 rules, and its normalised JSON at most 64 KiB as
// json.Marshal writes it ('&', '<' and '>' escaped); Parse refuses a
// larger input before reading it. Unknown fields, keys in another case,
// duplicate keys, a value of the wrong JSON type and invalid UTF-8 are
// refused, each naming its field; null, "" and [] are the same as an
// absent field.
package targeting
