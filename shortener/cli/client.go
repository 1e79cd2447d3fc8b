package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// maxErrorBody bounds how much of an error answer is read.
const maxErrorBody = 64 << 10

// maxJSONBody bounds a JSON answer the client decodes whole (one link, a
// page of at most 1,000 links, a stats answer, a batch's results).
const maxJSONBody = 32 << 20

// APIError is a non-2xx answer of the API: its status and the message of
// its {"error": "..."} body (which names the field at fault).
type APIError struct {
	Status int
	Msg    string
	// NotAPI: the answer did not come from the shortener's API (no JSON
	// error body, or a page): Msg says what came (see notAPI) and the
	// command exits ExitServer whatever the status.
	NotAPI bool
}

func (e *APIError) Error() string {
	if e.NotAPI {
		return e.Msg
	}
	if e.Msg == "" {
		return fmt.Sprintf("HTTP %d %s", e.Status, http.StatusText(e.Status))
	}
	return fmt.Sprintf("%s (HTTP %d)", e.Msg, e.Status)
}

// client talks to one shortener API.
type client struct {
	base string // the API's URL without a trailing slash, e.g. https://sho.rt/api
	key  string
	http *http.Client
	// domain is the link domain of every <api>/links call (--domain),
	// sent as ?domain=<host>; "" is the default domain.
	domain string
}

// newClient checks the API URL (http or https, a host, no query or
// fragment) and returns a client for it.
func newClient(api, key string, timeout time.Duration) (*client, error) {
	u, err := url.Parse(api)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, usageErr("--api must be an http or https URL like https://sho.rt/api, got %q", api)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, usageErr("--api must not carry a query, a fragment or credentials")
	}
	return &client{
		base: strings.TrimRight(u.String(), "/"),
		key:  key,
		http: &http.Client{
			Timeout:       timeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}, nil
}

// linkPath is the path of one link's endpoint (the code path-escaped).
func linkPath(code string, rest ...string) string {
	return "/links/" + url.PathEscape(code) + strings.Join(rest, "")
}

// withDomain is q with the client's link domain added when path is under
// /links (a copy: q is the caller's); other paths, and the default
// domain, are left as they are.
func (c *client) withDomain(path string, q url.Values) url.Values {
	if c.domain == "" || (path != "/links" && !strings.HasPrefix(path, "/links/")) {
		return q
	}
	out := make(url.Values, len(q)+1)
	for k, v := range q {
		out[k] = v
	}
	out.Set("domain", c.domain)
	return out
}

// request sends one request; a non-2xx answer is returned as *APIError
// (its body read and closed), a 2xx answer with its body open.
func (c *client) request(ctx context.Context, method, path string, q url.Values, body []byte, hdr http.Header) (*http.Response, error) {
	q = c.withDomain(path, q)
	u := c.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, usageErr("building the request: %v", err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	if body != nil && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, exitErr(ExitServer, "%s %s: %v", method, c.base+path, stripURLError(err))
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		return nil, c.readAPIError(resp)
	}
	if isPage(resp) {
		resp.Body.Close()
		return nil, &APIError{Status: resp.StatusCode, Msg: c.notAPI(resp, "a page"), NotAPI: true}
	}
	return resp, nil
}

// stripURLError drops the *url.Error wrapper, which repeats the URL.
func stripURLError(err error) error {
	var ue *url.Error
	if e, ok := err.(*url.Error); ok {
		ue = e
		return ue.Err
	}
	return err
}

// readAPIError turns an error answer into *APIError, its message made
// safe for a terminal and put on one line. An answer without the API's
// {"error": "..."} body is not the API's (notAPI).
func (c *client) readAPIError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(b, &e) != nil || e.Error == "" {
		return &APIError{Status: resp.StatusCode, Msg: c.notAPI(resp, "no JSON error"), NotAPI: true}
	}
	return &APIError{Status: resp.StatusCode, Msg: Sanitize(e.Error)}
}

// getJSON sends a request and decodes its JSON answer into out.
func (c *client) getJSON(ctx context.Context, method, path string, q url.Values, body []byte, hdr http.Header, out any) (*http.Response, error) {
	resp, err := c.request(ctx, method, path, q, body, hdr)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(io.LimitReader(resp.Body, maxJSONBody))
	if err := dec.Decode(out); err != nil {
		return resp, exitErr(ExitServer, "%s", c.notAPI(resp, "not the JSON expected ("+err.Error()+")"))
	}
	return resp, nil
}
