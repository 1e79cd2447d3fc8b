package clicks

import (
	"net/http"
	"net/netip"
	"strings"
	"time"
)

// UAClass is the coarse kind of client behind a click.
type UAClass uint8

// User-agent classes. Bots are counted apart from people; browser and other
// (apps, unknown clients) are people.
const (
	ClassBrowser UAClass = iota
	ClassBot
	ClassOther
)

// Click is one counted redirect.
type Click struct {
	Code     string
	At       time.Time
	Referrer string // host of the Referer header, lowercase; "" if none
	Class    UAClass

	// Addr (Caddy's client IP, so trusted_proxies applies) and UA (the
	// User-Agent, at most MaxUserAgent bytes) are held in process only:
	// the recorder's writer derives the click's dimensions from them and
	// clears both before the click leaves the process (see derive). They
	// are never encoded into the stream nor given to a sink.
	Addr netip.Addr
	UA   string

	// Dimensions the writer derives (see derive); "" until then. Device
	// is one of the Device* values; OS and Browser are the parser's names,
	// lowercase, or UnknownDim.
	Device  string
	OS      string
	Browser string

	// Geography the writer derives from Addr with clicks_geoip (see
	// ValidCountry, validRegion, ValidCity): Country is an ISO 3166-1
	// alpha-2 code, uppercase, or UnknownDim; Region an ISO 3166-2
	// subdivision code ("US-CA") and City an English name, "" when the
	// database does not tell them.
	Country string
	Region  string
	City    string

	// QR: the request carried QRMarker (a scan of the link's QR code).
	QR bool

	// Visitor is the keyed hash of the client (VisitorHash under the
	// Day's salt); 0: unknown, not counted in uniques.
	Visitor uint64

	// Rule and Variant are the link's destination rule that matched (its
	// display name, see shortener/targeting) and the A/B variant chosen;
	// "" for none. Bounds: validTargetDim.
	Rule    string
	Variant string
}

// Bot reports whether the click comes from a crawler, link previewer or
// script rather than a person.
func (c Click) Bot() bool { return c.Class == ClassBot }

// CountedRequest reports whether a redirect request counts as a click: HEAD
// requests and prefetches (`Sec-Purpose: prefetch`, also with `;prerender`,
// `Purpose: prefetch`, `X-Moz: prefetch`) do not. The caller also skips
// 404 and 410 answers.
func CountedRequest(r *http.Request) bool {
	if r.Method == http.MethodHead {
		return false
	}
	for _, k := range [...]string{"Sec-Purpose", "Purpose", "X-Moz"} {
		for _, v := range r.Header[k] {
			if hasFoldPrefixAt(v, "prefetch") {
				return false
			}
		}
	}
	return true
}

// hasFoldPrefixAt reports whether v contains lower (lowercase ASCII) at the
// start of one of its ';'- or ','-separated items.
func hasFoldPrefixAt(v, lower string) bool {
	for len(v) > 0 {
		v = strings.TrimLeft(v, " \t")
		if hasPrefixFold(v, lower) {
			return true
		}
		i := strings.IndexAny(v, ";,")
		if i < 0 {
			return false
		}
		v = v[i+1:]
	}
	return false
}

// ClassifyRequest returns whether r counts as a click and, if so, the click
// for code at now, with the client's address (addr: Caddy's client IP,
// clientip.Addr) and user agent for the
// writer to derive dimensions from. It allocates nothing for the common
// request (at most a copy of the referrer host when the Referer header is
// long, of the user agent's first MaxUserAgent bytes when it is longer).
func ClassifyRequest(r *http.Request, addr netip.Addr, code string, now time.Time) (Click, bool) {
	return classifyRequest(r, addr, code, now, 0, false)
}

// ClassifyRequestAs is ClassifyRequest for a request whose User-Agent
// (of at most MaxUserAgent bytes) a redirect has classified already
// (uaParser.Dims): the click takes class instead of classifying again.
func ClassifyRequestAs(r *http.Request, addr netip.Addr, code string, now time.Time, class UAClass) (Click, bool) {
	return classifyRequest(r, addr, code, now, class, true)
}

func classifyRequest(r *http.Request, addr netip.Addr, code string, now time.Time, class UAClass, known bool) (Click, bool) {
	if !CountedRequest(r) {
		return Click{}, false
	}
	var ua, ref string
	if v := r.Header["User-Agent"]; len(v) > 0 {
		ua = v[0]
	}
	if v := r.Header["Referer"]; len(v) > 0 {
		ref = v[0]
	}
	if len(r.URL.Path) > 128 {
		// Code is the path's last segment: do not pin a long path in
		// memory until the flush (the buffer counts only the code).
		code = strings.Clone(code)
	}
	if !known || len(ua) > MaxUserAgent {
		class = ClassifyUserAgent(ua)
	}
	c := Click{Code: code, At: now, Referrer: ReferrerHost(ref), Class: class, Addr: addr, UA: ua}
	if len(ua) > MaxUserAgent {
		// Do not pin a long header until the flush: its start is enough
		// to tell a device, system and browser.
		c.UA = strings.Clone(ua[:MaxUserAgent])
	}
	return c, true
}

// botMarkers are lowercase substrings of crawler, previewer and script
// user agents, indexed by their first byte; botBigrams has a bit set for
// the first two bytes of each, so one pass over the user agent with one
// table test per byte finds the few places worth comparing.
var (
	botMarkers [256][]string
	botBigrams [65536 / 64]uint64
)

func init() {
	for _, m := range []string{
		"bot", "crawl", "spider", "slurp", "preview", "facebookexternalhit", "embedly",
		"curl/", "wget/", "python", "go-http-client", "java/", "libwww", "httpclient", "http_request",
		"axios/", "node-fetch", "undici", "okhttp/", "headless", "lighthouse", "pingdom", "monitor",
		"scanner", "archiver", "whatsapp", "vkshare", "postman", "feed", "validator",
	} {
		botMarkers[m[0]] = append(botMarkers[m[0]], m)
		bg := uint16(m[0])<<8 | uint16(m[1])
		botBigrams[bg/64] |= 1 << (bg % 64)
	}
}

// ClassifyUserAgent sorts a User-Agent into browser, bot or other, without
// regular expressions or allocation. An empty user agent is a bot (scripts
// send none; browsers always do).
func ClassifyUserAgent(ua string) UAClass {
	if ua == "" {
		return ClassBot
	}
	for i := 0; i+1 < len(ua); i++ {
		bg := uint16(lowerASCII(ua[i]))<<8 | uint16(lowerASCII(ua[i+1]))
		if botBigrams[bg/64]&(1<<(bg%64)) == 0 {
			continue
		}
		for _, m := range botMarkers[lowerASCII(ua[i])] {
			if hasPrefixFold(ua[i:], m) {
				return ClassBot
			}
		}
	}
	if strings.HasPrefix(ua, "Mozilla/") || strings.HasPrefix(ua, "Opera/") {
		return ClassBrowser
	}
	return ClassOther
}

func lowerASCII(c byte) byte { return lowerTable[c] }

var lowerTable = func() (t [256]byte) {
	for i := range t {
		t[i] = byte(i)
		if 'A' <= i && i <= 'Z' {
			t[i] = byte(i) + 'a' - 'A'
		}
	}
	return t
}()

// hasPrefixFold reports whether s starts with lower, ASCII case-insensitively.
func hasPrefixFold(s, lower string) bool {
	if len(s) < len(lower) {
		return false
	}
	for i := 0; i < len(lower); i++ {
		if lowerASCII(s[i]) != lower[i] {
			return false
		}
	}
	return true
}

// ReferrerHost reduces a Referer value to its host, lowercase, without port
// or user info: "https://News.Example.com:8443/a?b" → "news.example.com".
// Anything that is not an absolute URL with a plausible host gives "".
func ReferrerHost(ref string) string {
	i := strings.Index(ref, "://")
	if i <= 0 || len(ref) > 4096 {
		return ""
	}
	host := ref[i+3:]
	if j := strings.IndexAny(host, "/?#"); j >= 0 {
		host = host[:j]
	}
	if j := strings.LastIndexByte(host, '@'); j >= 0 {
		host = host[j+1:]
	}
	if strings.HasPrefix(host, "[") {
		j := strings.IndexByte(host, ']')
		if j < 0 {
			return ""
		}
		host = host[:j+1]
	} else if j := strings.LastIndexByte(host, ':'); j >= 0 {
		host = host[:j]
	}
	host = strings.TrimSuffix(host, ".")
	if host == "" || len(host) > MaxReferrerHost {
		return ""
	}
	upper := false
	for k := 0; k < len(host); k++ {
		switch c := host[k]; {
		case hostByte[c]:
		case 'A' <= c && c <= 'Z':
			upper = true
		default:
			return ""
		}
	}
	if upper {
		return strings.ToLower(host)
	}
	if len(ref) > 128 {
		// Do not pin a long header in memory until the flush.
		return strings.Clone(host)
	}
	return host
}

// hostByte holds the bytes of a referrer host as ReferrerHost keeps it:
// lowercase letters, digits, '.', '-', '_', and ':', '[', ']' of IPv6.
var hostByte = func() (t [256]bool) {
	for _, c := range []byte("abcdefghijklmnopqrstuvwxyz0123456789.-_:[]") {
		t[c] = true
	}
	return t
}()

// ValidReferrerHost reports whether h can be a stored referrer host: ""
// (none) or what ReferrerHost returns, at most MaxReferrerHost bytes of
// hostByte. Clicks decoded from the stream, or given to Record by a
// program, are held to it: a host stored is always bounded.
func ValidReferrerHost(h string) bool {
	if len(h) > MaxReferrerHost {
		return false
	}
	for i := 0; i < len(h); i++ {
		if !hostByte[h[i]] {
			return false
		}
	}
	return true
}
