package shortener

import (
	"net/url"
	"strings"
	"testing"

	"github.com/edgekit/caddy-edgekit/shortener/urlpolicy"
)

// FuzzWithQuery appends any request query to a long URL: the result is the
// long URL alone, or the long URL's part before its fragment, a separator,
// the query (bytes a Location may not hold escaped), then the same
// fragment; within MaxLongURL, with no control, space or non-ASCII byte,
// and the query's parameters read back as the request sent them.
func FuzzWithQuery(f *testing.F) {
	for _, seed := range [][2]string{
		{"https://example.com/a", "utm=x"},
		{"https://example.com/a?k=v#frag", "a=1&b=%20"},
		{"https://example.com/a?", "x=\r\nSet-Cookie: y"},
		{"https://example.com/a", "é#x"},
		{"https://example.com/" + strings.Repeat("a", 2030), "long=query"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, long, query string) {
		if long == "" || strings.ContainsAny(long, " \r\n\t") || strings.Contains(long, "#") && strings.Count(long, "#") > 1 {
			return
		}
		got := withQuery(long, query)
		if got == long {
			return
		}
		if len(got) > urlpolicy.MaxLongURL {
			t.Fatalf("withQuery(%q, %q) is %d bytes", long, query, len(got))
		}
		base, frag, hasFrag := strings.Cut(long, "#")
		if !strings.HasPrefix(got, base) || hasFrag && !strings.HasSuffix(got, "#"+frag) {
			t.Fatalf("withQuery(%q, %q) = %q: not the long URL with the query before its fragment", long, query, got)
		}
		rest := strings.TrimPrefix(got, base)
		if hasFrag {
			rest = strings.TrimSuffix(rest, "#"+frag)
		}
		if !strings.Contains(base, "?") || !strings.HasSuffix(base, "?") && !strings.HasSuffix(base, "&") {
			rest = rest[1:] // the separator
		}
		for i := 0; i < len(rest); i++ {
			if c := rest[i]; c <= ' ' || c >= 0x7f || c == '#' {
				t.Fatalf("withQuery(%q, %q) = %q: the query holds byte %#x", long, query, got, c)
			}
		}
		if want, err := url.ParseQuery(query); err == nil {
			if gotQ, err := url.ParseQuery(rest); err != nil || gotQ.Encode() != want.Encode() {
				t.Fatalf("withQuery(%q, %q) = %q: query %q reads %v, %v; want %v", long, query, got, rest, gotQ, err, want)
			}
		}
	})
}
