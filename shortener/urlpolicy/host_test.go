package urlpolicy

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"io"
	"math/rand/v2"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"unicode"

	"golang.org/x/text/unicode/rangetable"
)

// whatwgOracle is Node.js's WHATWG URL parser behind a pipe: one node
// process (testdata/whatwg/hostname.js) answers every question of a test
// or of a fuzz worker.
type whatwgOracle struct {
	mu  sync.Mutex
	in  io.WriteCloser
	out *bufio.Reader
}

type whatwgAnswer struct {
	OK       bool   `json:"ok"`
	Hostname string `json:"hostname"`
	Href     string `json:"href"`
	Error    string `json:"error"`
}

// startOracle starts node; without node the test is skipped, or fails
// under CI=true.
func startOracle(tb testing.TB) *whatwgOracle {
	tb.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("node (the WHATWG URL oracle) is not installed: %v", err)
		}
		tb.Skipf("node (the WHATWG URL oracle) is not installed: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, node, "testdata/whatwg/hostname.js")
	in, err := cmd.StdinPipe()
	if err != nil {
		cancel()
		tb.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		tb.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		cancel()
		tb.Fatalf("starting node: %v", err)
	}
	tb.Cleanup(func() {
		_ = in.Close()
		_ = cmd.Wait()
		cancel()
	})
	return &whatwgOracle{in: in, out: bufio.NewReaderSize(out, 64<<10)}
}

// parse asks node what new URL(raw) is.
func (o *whatwgOracle) parse(tb testing.TB, raw string) whatwgAnswer {
	tb.Helper()
	return o.parseAll(tb, []string{raw})[0]
}

// parseAll asks node about many URLs at once: the questions are written
// while the answers are read, so a batch costs one round trip.
func (o *whatwgOracle) parseAll(tb testing.TB, raws []string) []whatwgAnswer {
	tb.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	var buf []byte
	for _, raw := range raws {
		q, err := json.Marshal(raw)
		if err != nil {
			tb.Fatal(err)
		}
		buf = append(append(buf, q...), '\n')
	}
	written := make(chan error, 1)
	go func() {
		_, err := o.in.Write(buf)
		written <- err
	}()
	answers := make([]whatwgAnswer, len(raws))
	for i := range answers {
		line, err := o.out.ReadBytes('\n')
		if err != nil {
			tb.Fatalf("reading from node: %v (writing: %v)", err, <-written)
		}
		if err := json.Unmarshal(line, &answers[i]); err != nil {
			tb.Fatalf("node answered %q: %v", line, err)
		}
	}
	if err := <-written; err != nil {
		tb.Fatalf("writing to node: %v", err)
	}
	return answers
}

// differentialPolicy accepts every scheme of the table and denies
// nothing, so that only the host parser decides.
func differentialPolicy(tb testing.TB) Policy {
	tb.Helper()
	p, err := New([]string{"http", "https", "ws", "wss", "ftp", "myapp"}, nil, false)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// agreeWithNode checks the differential property for one input: when
// Check accepts raw, Node reads raw and the stored URL to the host check
// stored, and that host is ASCII. It returns whether check accepted and
// what Node said of raw. self are the shortener's own hosts.
func agreeWithNode(t testing.TB, o *whatwgOracle, p Policy, raw string, self ...string) (bool, whatwgAnswer) {
	t.Helper()
	accepted, nodes := agreeAllWithNode(t, o, p, []string{raw}, self...)
	return accepted[0], nodes[0]
}

// agreeAllWithNode is agreeWithNode for many inputs in one batch; Node's
// answer is only asked for (and only returned for) accepted inputs.
func agreeAllWithNode(t testing.TB, o *whatwgOracle, p Policy, raws []string, self ...string) ([]bool, []whatwgAnswer) {
	t.Helper()
	accepted := make([]bool, len(raws))
	var asked []string // raw, stored: pairs
	for i, raw := range raws {
		out, err := p.Check(raw, self...)
		if accepted[i] = err == nil; accepted[i] {
			asked = append(asked, raw, out)
		}
	}
	answers := o.parseAll(t, asked)
	nodes := make([]whatwgAnswer, len(raws))
	for i, k := 0, 0; i < len(raws); i++ {
		if !accepted[i] {
			continue
		}
		raw, out, node, again := raws[i], asked[k+1], answers[k], answers[k+1]
		k += 2
		nodes[i] = node
		st, err := splitTarget(out)
		switch {
		case err != nil:
			t.Errorf("check(%q) stored %q, which does not split: %v", raw, out, err)
		case !isASCII(out):
			t.Errorf("check(%q) stored %q: not ASCII", raw, out)
		case !node.OK:
			t.Errorf("check(%q) accepted host %q; node refuses the URL: %s", raw, st.host, node.Error)
		case st.host != node.Hostname:
			t.Errorf("check(%q) host = %q, node hostname = %q", raw, st.host, node.Hostname)
		case !again.OK || again.Hostname != node.Hostname:
			t.Errorf("stored %q reads as host %q (ok %v) in node, want %q", out, again.Hostname, again.OK, node.Hostname)
		}
	}
	return accepted, nodes
}

// Refusals beyond the standard, each from the documented list
// (/work/notes/sh-hosts.md, "refused although a browser accepts").
const (
	accepts  = "accepts"  // both accept, same host
	refuses  = "refuses"  // node refuses too
	stricter = "stricter" // node accepts; refused from the documented list
)

func TestLongURLHostWHATWG(t *testing.T) {
	o := startOracle(t)
	p := differentialPolicy(t)
	for _, tc := range []struct{ raw, want string }{
		// The finding's examples.
		{"https://ｅｖｉｌ.com", accepts},
		{"https://evil。com", accepts},
		{"https://ev\u00adil.com", stricter}, // format control
		{"https://%EF%BD%85vil.com", accepts},
		{"https://ｓｈｏ.ｒｔ/abc", accepts},
		{"http://2130706433/", accepts},
		{"http://0x7f.1/", accepts},
		{"http://127.1/", accepts},
		{"http://[::ffff:127.0.0.1]/", accepts},
		{"https://evil\u202e.com/", refuses}, // bidi control
		{"https://example.com/\u202egnp.exe", stricter},
		{"https://a\u200db.com/", refuses}, // zero-width joiner (CheckJoiners)
		{"https://a\u2066b.com/", refuses},
		{"https://%E2%80%AEevil.com/", refuses}, // percent-encoded U+202E: IDNA refuses it
		{"https://ev%C2%ADil.com/", stricter},   // percent-encoded soft hyphen: IDNA would drop it
		// Ordinary hosts.
		{"https://example.com/path?q=1#frag", accepts},
		{"HTTPS://EXAMPLE.COM/", accepts},
		{"http://example.com:8080/", accepts},
		{"http://example.com:80/", accepts},
		{"https://example.com:0443/", accepts},
		{"https://example.com:65535/", accepts},
		{"https://example.com:65536/", refuses},
		{"https://example.com:8x/", refuses},
		{"https://example.com:/", accepts},
		{"ws://example.com/socket", accepts},
		{"ftp://ftp.example.com/pub", accepts},
		{"https://a-b_c.example/", accepts},
		// IDN and mixed scripts.
		{"https://bücher.example/", accepts},
		{"https://BÜCHER.example/", accepts},
		{"https://münchen.de/straße", accepts},
		{"https://faß.de/", accepts}, // non-transitional: xn--fa-hia.de
		{"https://ΣΊΣΥΦΟΣ.gr/", accepts},
		{"https://pаypal.com/", accepts}, // Cyrillic а: a homoglyph, but a valid IDN
		{"https://аррӏе.com/", accepts},
		{"https://例え.テスト/", accepts},
		{"https://مثال.إختبار/", accepts},
		{"https://a.מ1/", accepts},    // an RTL label may end in a digit
		{"https://1מ.com/", stricter}, // RFC 5893 rule 1: x/net/idna refuses, Node's Ada accepts
		{"https://💩.la/", accepts},
		{"https://a\U0001FAE5.com/", accepts},         // an emoji of Unicode 14
		{"https://\u05d0.a\U0001FAE5.com/", stricter}, // ... in a Bidi domain name
		{"https://\u05d6\u061d1/", refuses},           // U+061D (Unicode 14): x/net/idna alone accepts
		{"https://①.com/", accepts},                   // maps to 1.com
		{"https://ａ．ｂ/", accepts},                     // fullwidth full stop
		{"https://x｡y/", accepts},                     // halfwidth ideographic full stop
		{"https://１２７.０.０.１/", accepts},               // fullwidth digits: an IPv4 address
		{"https://⑴.com/", stricter},                  // maps to "(1)", not a DNS name
		{"https://a\u0301.com/", accepts},
		{"https://\u0301a.com/", refuses}, // leading combining mark
		{"https://\ufffd.com/", refuses},
		// Userinfo.
		{"https://user@example.com/", stricter},
		{"https://evil.com@good.example/", stricter},
		{"https://:@example.com/", stricter},
		// IPv4 forms.
		{"http://0177.0.0.1/", accepts},
		{"http://0x7F000001/", accepts},
		{"http://017700000001/", accepts},
		{"http://127.0.0.1./", accepts},
		{"http://127.0.1/", accepts},
		{"http://0/", accepts},
		{"http://0x/", accepts},
		{"http://4294967295/", accepts},
		{"http://4294967296/", refuses},
		{"http://1.2.3.4.5/", refuses},
		{"http://256.1.1.1/", refuses},
		{"http://1.16777216/", refuses},
		{"http://1.16777215/", accepts},
		{"http://09.1/", refuses},
		{"http://1.2.3.09/", refuses},
		{"http://foo.09/", refuses},
		{"http://foo.0x/", refuses},
		{"http://foo.1/", refuses},
		{"http://1.foo/", accepts},
		{"http://0x1g/", accepts}, // not a number: a domain
		{"http://99999999999999999999999/", refuses},
		// IPv6 forms.
		{"http://[::1]/", accepts},
		{"http://[::]/", accepts},
		{"http://[0:0:0:0:0:ffff:7f00:1]/", accepts},
		{"http://[::127.0.0.1]/", accepts},
		{"http://[1:2:3:4:5:6:7:8]/", accepts},
		{"http://[1:0:0:2:0:0:0:3]/", accepts},
		{"http://[1:0:0:2:0:0:3:4]/", accepts},
		{"http://[1:2:3:4:5:6:7::]/", accepts},
		{"http://[::2:3:4:5:6:7:8]/", accepts},
		{"http://[FE80::A]:8080/", accepts},
		{"http://[64:ff9b::10.0.0.1]/", accepts},
		{"http://[2001:db8::1]/", accepts},
		{"http://[1:2:3:4:5:6:7:8:9]/", refuses},
		{"http://[1:2:3:4:5:6:1.2.3.4]/", accepts},
		{"http://[1:2:3:4:5:6:7:1.2.3.4]/", refuses},
		{"http://[::1.2.3.04]/", refuses},
		{"http://[::1.2.3]/", refuses},
		{"http://[::1.2.3.4.]/", refuses},
		{"http://[::256.0.0.1]/", refuses},
		{"http://[1::2::3]/", refuses},
		{"http://[:1]/", refuses},
		{"http://[1:]/", refuses},
		{"http://[12345::]/", refuses},
		{"http://[fe80::1%25eth0]/", refuses},
		{"http://[::1/", refuses},
		{"http://[::1]x/", refuses},
		{"http://[]/", refuses},
		{"http://[::ffff:1a.2.3.4]/", refuses},
		// Percent-encodings.
		{"https://%65vil.com/", accepts},
		{"https://ex%41mple.com/", accepts},
		{"https://%E4%BE%8B.com/", accepts},
		{"https://%zz.com/", refuses},
		{"https://%.com/", refuses},
		{"https://a%00b.com/", refuses},
		{"https://a%2Fb.com/", refuses},
		{"https://%2e/", stricter}, // "." : no labels
		{"https://%ff.com/", refuses},
		{"https://%31%32%37.0.0.1/", accepts},
		// Trailing dots and empty labels.
		{"https://example.com./", accepts},
		{"https://example.com../", stricter},
		{"https://a..b/", stricter},
		{"https://.example.com/", stricter},
		{"https://./", stricter},
		// xn-- labels and invalid punycode.
		{"https://xn--bcher-kva.example/", accepts},
		{"https://XN--BCHER-KVA.example/", accepts},
		{"https://xn--ls8h.la/", accepts},
		{"https://xn--55qx5d.cn/", accepts},
		{"https://xn--/", refuses},
		{"https://xn--a/", refuses},
		{"https://a.xn--/", refuses},
		{"https://a.xn--.b/", refuses},
		{"https://XN--㌀-.com/", refuses},
		{"https://xn--a.com/", refuses},
		{"https://xn--abc-!!.com/", refuses},
		{"https://xn--zz-/", stricter}, // an xn-- label decoding to ASCII: x/net/idna refuses
		{"https://xn--999999999999.com/", refuses},
		{"https://xn--bcher-kva.xn--bcher-kva/", accepts},
		{"https://xn--fa-hia.de/", accepts},
		// What WHATWG keeps in a domain and DNS cannot resolve.
		{"https://a!b.com/", stricter},
		{"https://a{b}.com/", stricter},
		{"https://a*b.com/", stricter},
		{"https://" + strings.Repeat("a", 64) + ".com/", stricter},
		{"https://" + strings.Repeat("a.", 127) + "com/", stricter},
		{"https://a<b.com/", refuses},
		{"https://a^b.com/", refuses},
		{"https://a|b.com/", refuses},
		// Hosts the standard maps elsewhere: localhost and friends.
		{"http://localhost/", accepts},
		{"http://LOCALHOST./", accepts},
		{"http://foo.localhost:3000/", accepts},
		// Non-special schemes: the host is opaque to a browser.
		{"myapp://example.com/x", accepts},
		{"myapp://Example.com/x", stricter},
		{"myapp://bücher.example/", stricter},
		{"myapp://[::1]/", accepts},
	} {
		accepted, _ := agreeWithNode(t, o, p, tc.raw)
		node := o.parse(t, tc.raw)
		var got string
		switch {
		case accepted:
			got = accepts
		case node.OK:
			got = stricter
		default:
			got = refuses
		}
		if got != tc.want {
			_, err := p.Check(tc.raw)
			t.Errorf("%q: %s (node ok=%v hostname=%q; check: %v), want %s", tc.raw, got, node.OK, node.Hostname, err, tc.want)
		}
	}
}

// nodeHostPrivate judges a hostname as Node serialized it, independently
// of private.go: net/netip's own classes and the names under localhost.
func nodeHostPrivate(hostname string) bool {
	name := strings.TrimSuffix(hostname, ".")
	if name == "localhost" || strings.HasSuffix(name, ".localhost") {
		return true
	}
	a, err := netip.ParseAddr(strings.Trim(hostname, "[]"))
	if err != nil {
		return false
	}
	a = a.Unmap()
	return a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsUnspecified() ||
		netip.MustParsePrefix("100.64.0.0/10").Contains(a)
}

// hostPieces are the parts TestLongURLHostWHATWGGenerated builds hosts
// from: dots of several scripts, digits and number prefixes, percent
// escapes, ACE prefixes, mapped, deviation, joiner, RTL and combining
// characters, IPv6 punctuation.
var hostPieces = []string{
	"a", "b", "z", "Q", "0", "1", "7", "9", "09", "0x", "0X", "ff", "127", "255", "256", "4294967295", "0177",
	".", "..", "。", "．", "｡", "-", "--", "_", "xn--", "XN--", "bcher-kva", "ls8h", "zz-", "%", "%2e", "%41",
	"%EF%BD%85", "%C3%BC", "%E3%80%82", "%ff", "ü", "ß", "ς", "Σ", "ｅ", "１", "①", "⑴", "а", "מ", "ا", "١",
	"\u0301", "\u200c", "\u200d", "\u00df", "[", "]", ":", "::", "ffff", "localhost", "com", "!", "~", "*", "ǅ",
	"ﬀ", "㌀", "℡", "İ", "ℌ", "\U0001F4A9", "\u0663", "\u06f3", "\u05d0\u05d1", "1.2.3.4", "0x7f", ":80", ":0",
}

// TestLongURLHostWHATWGGenerated runs the differential property over
// hosts assembled at random (fixed seed) from hostPieces.
func TestLongURLHostWHATWGGenerated(t *testing.T) {
	o := startOracle(t)
	p := differentialPolicy(t)
	n := 20000
	if testing.Short() {
		n = 2000
	}
	rng := rand.New(rand.NewPCG(13, 4))
	schemes := []string{"http://", "https://", "ws://", "ftp://", "myapp://"}
	raws := make([]string, n)
	for i := range raws {
		var b strings.Builder
		b.WriteString(schemes[rng.IntN(len(schemes))])
		for range 1 + rng.IntN(6) {
			b.WriteString(hostPieces[rng.IntN(len(hostPieces))])
		}
		b.WriteString("/p")
		raws[i] = b.String()
	}
	ok, _ := agreeAllWithNode(t, o, p, raws)
	accepted := 0
	for _, a := range ok {
		if a {
			accepted++
		}
	}
	t.Logf("%d of %d generated URLs accepted, each with node's host", accepted, n)
}

var whatwgFull = flag.Bool("whatwg.full", false, "TestLongURLHostWHATWGEveryRune tries every code point (about 15 s, a minute with -race)")

// TestLongURLHostWHATWGEveryRune runs the differential property for the
// code points assigned in Unicode 15.0 in left-to-right, right-to-left and
// Arabic-number contexts, where the tables of x/net/idna and of Node may
// differ: every third one (every 31st under -short), each of them with
// -whatwg.full.
func TestLongURLHostWHATWGEveryRune(t *testing.T) {
	o := startOracle(t)
	p := differentialPolicy(t)
	step := rune(3)
	switch {
	case *whatwgFull:
		step = 1
	case testing.Short():
		step = 31
	}
	assigned := rangetable.Assigned("15.0.0")
	contexts := [][2]string{{"a", "b.com"}, {"\u05d0", "\u05d0.com"}, {"\u0628", "\u0628"}, {"\u0628", "1"}, {"x", ""}, {"xn--", ".com"}}
	var raws []string
	for r := rune(0x80); r <= unicode.MaxRune; r += step {
		if !unicode.Is(assigned, r) || unicode.Is(unicode.Cs, r) {
			continue
		}
		for _, c := range contexts {
			raws = append(raws, "https://"+c[0]+string(r)+c[1]+"/")
		}
	}
	ok, _ := agreeAllWithNode(t, o, p, raws)
	accepted := 0
	for _, a := range ok {
		if a {
			accepted++
		}
	}
	t.Logf("%d host spellings accepted, each with node's host", accepted)
}
