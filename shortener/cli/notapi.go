package cli

import (
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strings"
)

// maxShownHeader bounds a header value of the server quoted in an error.
const maxShownHeader = 120

// isPage reports whether a 2xx answer is a web page, which the API never
// answers (JSON, NDJSON, CSV, PNG, SVG or nothing): --api names a site,
// not its API. (Plain text is not judged here: a server that leaves
// Content-Type out of JSON gets it sniffed as text/plain; an answer that
// is not the JSON expected is caught where it is decoded.)
func isPage(resp *http.Response) bool {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return mt == "text/html" || mt == "application/xhtml+xml"
}

// notAPI says that resp is not an answer of the shortener's API, and why
// (what came instead): the method and URL requested, the status, the
// Content-Type (and where a redirect points), and what --api must be,
// e.g. the server's origin with /api. Server values are made safe for a
// terminal and bounded.
func (c *client) notAPI(resp *http.Response, what string) string {
	ctype := "no Content-Type"
	if v := resp.Header.Get("Content-Type"); v != "" {
		ctype = fmt.Sprintf("Content-Type %q", shown(v))
	}
	status := strings.TrimSpace(fmt.Sprintf("%d %s", resp.StatusCode, http.StatusText(resp.StatusCode)))
	msg := fmt.Sprintf("%s %s answered %s with %s, %s: not the shortener's API", resp.Request.Method,
		Sanitize(resp.Request.URL.String()), status, ctype, what)
	if loc := resp.Header.Get("Location"); loc != "" && resp.StatusCode/100 == 3 {
		msg += fmt.Sprintf(" (redirected to %s)", shown(loc))
	}
	return msg + "; --api must be the shortener's API URL (the handler's api path), e.g. " + c.apiExample()
}

// apiExample is the API URL the handler's default-looking `api /api` would
// give on the server --api names.
func (c *client) apiExample() string {
	u, err := url.Parse(c.base)
	if err != nil {
		return "https://sho.rt/api"
	}
	return u.Scheme + "://" + u.Host + "/api"
}

// shown is a server's header value fit for an error: safe and bounded.
func shown(v string) string {
	if len(v) > maxShownHeader {
		v = v[:maxShownHeader] + "…"
	}
	return Sanitize(v)
}
