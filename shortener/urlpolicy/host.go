package urlpolicy

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/idna"
	"golang.org/x/text/unicode/bidi"
	"golang.org/x/text/unicode/rangetable"
)

// This file reads a URL host the way a browser does: the host parser of
// the WHATWG URL standard (https://url.spec.whatwg.org/#host-parsing), so
// deny_hosts, deny_private and the self-loop check judge the host the
// browser will resolve, and what is stored and sent in Location is its
// ASCII serialization. Beyond the standard, ParseHost refuses what a
// short link has no use for (see checkDNSName and the notes of
// validate.go); it never accepts a host the standard refuses.

// hostKind tells what a parsed host is.
type hostKind uint8

const (
	hostDomain hostKind = iota + 1
	hostIPv4
	hostIPv6
)

// Host is a parsed host.
type Host struct {
	kind  hostKind
	ASCII string     // serialization: a lower-case ASCII domain, dotted IPv4, or [IPv6]
	addr  netip.Addr // the address of an IPv4 or IPv6 host
}

var (
	errHostEmpty   = errors.New("the host is empty")
	errHostInvalid = errors.New("the host is not a valid domain name or IP address")
	errHostControl = errors.New("the host contains a control, bidi or format character")
	errHostBidiNew = errors.New("the host mixes right-to-left text with characters newer than Unicode 13.0")
	errHostName    = errors.New("the host is not a DNS name (letters, digits, '-', '_' and '.', labels of 1 to 63 bytes)")
)

// whatwgIDNA is the standard's "domain to ASCII" with beStrict false:
// UTS #46 ToASCII with CheckHyphens=false, CheckBidi=true,
// CheckJoiners=true, UseSTD3ASCIIRules=false, Transitional_Processing=false
// and VerifyDnsLength=false. MapForLookup supplies the UTS #46 mapping and
// label validation; the later options override what it sets by default
// (STD3 rules and hyphen checks), in the order given.
var whatwgIDNA = idna.New(
	idna.MapForLookup(),
	idna.Transitional(false),
	idna.BidiRule(),
	idna.CheckJoiners(true),
	idna.CheckHyphens(false),
	idna.StrictDomainName(false),
	idna.VerifyDNSLength(false),
)

// ParseHost parses the host of a URL with a special scheme (http, https,
// ws, wss, ftp): input is the host as written between the authority's
// userinfo and port, still percent-encoded.
func ParseHost(input string) (Host, error) {
	if input == "" {
		return Host{}, errHostEmpty
	}
	if input[0] == '[' {
		if len(input) < 2 || input[len(input)-1] != ']' {
			return Host{}, errHostInvalid
		}
		a, ok := parseIPv6(input[1 : len(input)-1])
		if !ok {
			return Host{}, errHostInvalid
		}
		return ipv6Host(a), nil
	}
	domain := percentDecode(input)
	if !utf8.ValidString(domain) {
		return Host{}, errHostInvalid // the standard decodes it to U+FFFD, which IDNA refuses
	}
	if hasFormatControl(domain) {
		return Host{}, errHostControl
	}
	ascii, err := domainToASCII(domain)
	if err != nil {
		return Host{}, err
	}
	if strings.ContainsFunc(ascii, forbiddenDomainRune) {
		return Host{}, errHostInvalid
	}
	if endsInNumber(ascii) {
		v, ok := parseIPv4(ascii)
		if !ok {
			return Host{}, errHostInvalid
		}
		a := netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
		return Host{kind: hostIPv4, ASCII: a.String(), addr: a}, nil
	}
	if err := checkDNSName(ascii); err != nil {
		return Host{}, err
	}
	return Host{kind: hostDomain, ASCII: ascii}, nil
}

// percentDecode decodes %XX escapes; a '%' not followed by two hex digits
// stays as it is, as the standard says.
func percentDecode(s string) string {
	if strings.IndexByte(s, '%') < 0 {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			v, _ := strconv.ParseUint(s[i+1:i+3], 16, 8)
			b = append(b, byte(v))
			i += 2
			continue
		}
		b = append(b, s[i])
	}
	return string(b)
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// hasFormatControl reports a control character or one of Unicode's format
// characters (category Cf: bidi controls such as U+202E and U+2066-2069,
// marks U+200E/U+200F, the soft hyphen, zero-width joiners, the BOM).
// IDNA would drop some of them silently; a link never needs them.
func hasFormatControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool {
		return unicode.IsControl(r) || unicode.Is(unicode.Cf, r)
	})
}

// domainToASCII is the standard's domain to ASCII. An ASCII domain
// without an "xn--" label only needs lower-casing (the standard says so
// too); anything else goes through UTS #46.
func domainToASCII(domain string) (string, error) {
	if isASCII(domain) && !hasACELabel(domain) {
		return strings.ToLower(domain), nil
	}
	ascii, err := whatwgIDNA.ToASCII(domain)
	if err != nil || ascii == "" {
		return "", errHostInvalid
	}
	if hasBadACELabel(domain) {
		return "", errHostInvalid
	}
	// A valid result is a fixed point. The second pass sees the labels as
	// the standard does after mapping: x/net/idna decides whether the
	// Bidi rule applies from the runes before mapping, so "ℷn" (U+2137
	// maps to Hebrew dalet) escapes the rule in the first pass only.
	if again, err := whatwgIDNA.ToASCII(ascii); err != nil || again != ascii {
		return "", errHostInvalid
	}
	if unicodeForm, _ := whatwgIDNA.ToUnicode(ascii); newInBidiDomain(unicodeForm) {
		return "", errHostBidiNew
	}
	return ascii, nil
}

// unicode13 holds the code points assigned in Unicode 13.0.
var unicode13 = rangetable.Assigned("13.0.0")

// newInBidiDomain reports a Bidi domain name (one with a right-to-left or
// Arabic-number character) holding a character assigned after Unicode
// 13.0. Browsers' IDNA tables disagree on the bidi class of such
// characters (Node 20's refuses ؝ U+061D in "ز؝1" where x/net/idna
// accepts it), so whether the Bidi rule passes depends on the browser:
// refused, beyond the standard.
func newInBidiDomain(domain string) bool {
	bidiDomain, recent := false, false
	for _, r := range domain {
		switch p, _ := bidi.LookupRune(r); p.Class() {
		case bidi.R, bidi.AL, bidi.AN:
			bidiDomain = true
		}
		recent = recent || (r >= utf8.RuneSelf && !unicode.Is(unicode13, r))
	}
	return bidiDomain && recent
}

// idnaMapOnly maps without refusing anything (errors are ignored): used
// rune by rune to see the labels UTS #46 mapping makes.
var idnaMapOnly = idna.New(idna.MapForLookup(), idna.Transitional(false), idna.StrictDomainName(false))

// hasBadACELabel reports a label that the UTS #46 mapping turns into
// "xn--" alone or "xn--" followed by non-ASCII ("XN--㌀-" maps to
// "xn--アパート-"). UTS #46 refuses both; x/net/idna decodes the first to
// an empty label and the second as punycode with non-ASCII basic code
// points, returning a different, valid A-label. The runes are mapped one
// by one, without the final NFC step: NFC can merge a mapped "n" with a
// combining mark but never makes "x", "n" or "-", so this finds every such
// label and at worst a few more.
func hasBadACELabel(domain string) bool {
	var b strings.Builder
	for _, r := range domain {
		if r < utf8.RuneSelf {
			b.WriteRune(unicode.ToLower(r))
			continue
		}
		m, _ := idnaMapOnly.ToUnicode(string(r))
		b.WriteString(m)
	}
	for label := range strings.SplitSeq(b.String(), ".") {
		if strings.HasPrefix(label, "xn--") && (label == "xn--" || !isASCII(label)) {
			return true
		}
	}
	return false
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// hasACELabel reports a label starting with "xn--" in any case.
func hasACELabel(domain string) bool {
	for label := range strings.SplitSeq(domain, ".") {
		if len(label) >= 4 && strings.EqualFold(label[:4], "xn--") {
			return true
		}
	}
	return false
}

// forbiddenDomainRune: the standard's forbidden domain code points.
func forbiddenDomainRune(r rune) bool {
	if r <= 0x20 || r == 0x7f {
		return true
	}
	return strings.ContainsRune("#%/:<>?@[\\]^|", r)
}

// checkDNSName holds what this package refuses beyond the standard in a
// domain: characters other than letters, digits, '-', '_' and '.' (the
// standard lets "!$&'()*+,;=`{}~\"" through); empty labels except one
// trailing dot (the root); labels longer than 63 bytes and names longer
// than 253 (DNS cannot resolve them).
func checkDNSName(ascii string) error {
	name := strings.TrimSuffix(ascii, ".")
	if name == "" || len(name) > 253 {
		return errHostName
	}
	for label := range strings.SplitSeq(name, ".") {
		if label == "" || len(label) > 63 {
			return errHostName
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return errHostName
			}
		}
	}
	return nil
}

// endsInNumber: the standard's "ends in a number checker", deciding that
// a domain is to be read as an IPv4 address.
func endsInNumber(domain string) bool {
	parts := strings.Split(domain, ".")
	if parts[len(parts)-1] == "" {
		if len(parts) == 1 {
			return false
		}
		parts = parts[:len(parts)-1]
	}
	last := parts[len(parts)-1]
	if last != "" && strings.Trim(last, "0123456789") == "" {
		return true
	}
	_, ok := parseIPv4Number(last)
	return ok
}

// parseIPv4 is the standard's IPv4 parser: one to four parts, each
// decimal, octal (leading 0) or hex (0x), the last part filling the bytes
// the others left.
func parseIPv4(s string) (uint32, bool) {
	parts := strings.Split(s, ".")
	if parts[len(parts)-1] == "" && len(parts) > 1 {
		parts = parts[:len(parts)-1]
	}
	if len(parts) > 4 {
		return 0, false
	}
	var v uint64
	for i, p := range parts {
		n, ok := parseIPv4Number(p)
		if !ok {
			return 0, false
		}
		if i < len(parts)-1 {
			if n > 255 {
				return 0, false
			}
			v |= n << (8 * (3 - i))
			continue
		}
		if n >= 1<<(8*(5-len(parts))) {
			return 0, false
		}
		v += n
	}
	return uint32(v), true
}

// parseIPv4Number parses one part of an IPv4 address. Values saturate at
// 2^40, past any valid part, so a long part cannot overflow.
func parseIPv4Number(s string) (uint64, bool) {
	if s == "" {
		return 0, false
	}
	base := uint64(10)
	switch {
	case len(s) >= 2 && (s[:2] == "0x" || s[:2] == "0X"):
		s, base = s[2:], 16
	case len(s) >= 2 && s[0] == '0':
		s, base = s[1:], 8
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		d, ok := digitValue(s[i])
		if !ok || d >= base {
			return 0, false
		}
		n = min(n*base+d, 1<<40)
	}
	return n, true
}

func digitValue(c byte) (uint64, bool) {
	switch {
	case '0' <= c && c <= '9':
		return uint64(c - '0'), true
	case 'a' <= c && c <= 'f':
		return uint64(c-'a') + 10, true
	case 'A' <= c && c <= 'F':
		return uint64(c-'A') + 10, true
	}
	return 0, false
}

// ipv6Host builds the host of an IPv6 address, serialized as the standard
// does: lower-case hex, the first longest run of two or more zero pieces
// compressed, never a dotted IPv4 tail.
func ipv6Host(a [8]uint16) Host {
	var b [16]byte
	for i, p := range a {
		binary.BigEndian.PutUint16(b[2*i:], p)
	}
	return Host{kind: hostIPv6, ASCII: "[" + serializeIPv6(a) + "]", addr: netip.AddrFrom16(b)}
}

func serializeIPv6(a [8]uint16) string {
	compress, best := -1, 1
	for i := 0; i < 8; {
		j := i
		for j < 8 && a[j] == 0 {
			j++
		}
		if j-i > best {
			compress, best = i, j-i
		}
		i = j + 1
	}
	var sb strings.Builder
	for i := 0; i < 8; i++ {
		if i == compress {
			if i == 0 {
				sb.WriteString("::")
			} else {
				sb.WriteByte(':')
			}
			i += best - 1
			continue
		}
		sb.WriteString(strconv.FormatUint(uint64(a[i]), 16))
		if i != 7 {
			sb.WriteByte(':')
		}
	}
	return sb.String()
}

// parseIPv6 is the standard's IPv6 parser (without the brackets): up to
// eight hex pieces of up to four digits, one "::", an optional dotted
// IPv4 tail of four decimal parts without leading zeros.
func parseIPv6(s string) ([8]uint16, bool) {
	var a [8]uint16
	piece, compress, i := 0, -1, 0
	at := func(i int) byte {
		if i < len(s) {
			return s[i]
		}
		return 0
	}
	if at(0) == ':' {
		if at(1) != ':' {
			return a, false
		}
		i, piece = 2, 1
		compress = piece
	}
	for i < len(s) {
		if piece == 8 {
			return a, false
		}
		if s[i] == ':' {
			if compress != -1 {
				return a, false
			}
			i++
			piece++
			compress = piece
			continue
		}
		var v uint64
		n := 0
		for n < 4 && isHex(at(i)) {
			d, _ := digitValue(s[i])
			v = v*16 + d
			i++
			n++
		}
		switch at(i) {
		case '.':
			if n == 0 || piece > 6 || !parseIPv6Tail(s[i-n:], &a, piece) {
				return a, false
			}
			piece += 2
			i = len(s)
			continue
		case ':':
			i++
			if i == len(s) {
				return a, false
			}
		case 0:
			if i != len(s) {
				return a, false
			}
		default:
			return a, false
		}
		a[piece] = uint16(v)
		piece++
	}
	if compress != -1 {
		for swaps, p := piece-compress, 7; p != 0 && swaps > 0; p, swaps = p-1, swaps-1 {
			a[p], a[compress+swaps-1] = a[compress+swaps-1], a[p]
		}
	} else if piece != 8 {
		return a, false
	}
	return a, true
}

// parseIPv6Tail parses the dotted IPv4 tail of an IPv6 address into the
// pieces piece and piece+1.
func parseIPv6Tail(s string, a *[8]uint16, piece int) bool {
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return false
	}
	for k, p := range parts {
		if p == "" || len(p) > 3 || (len(p) > 1 && p[0] == '0') || strings.Trim(p, "0123456789") != "" {
			return false
		}
		v, _ := strconv.Atoi(p)
		if v > 255 {
			return false
		}
		a[piece+k/2] = a[piece+k/2]<<8 | uint16(v)
	}
	return true
}
