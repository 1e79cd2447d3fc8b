package shortener

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	verrors "github.com/pb33f/libopenapi-validator/errors"
)

// The API's answers are checked against openapi.json by an independent
// validator (libopenapi-validator, which implements OpenAPI 3.1): every
// request that serve() sends to a handler's API goes through checkExchange.

var (
	specOnce sync.Once
	specMu   sync.Mutex // the validator is not documented as safe for concurrent use
	specV    validator.Validator
	specErr  []error
)

func openAPIValidator(t testing.TB) validator.Validator {
	t.Helper()
	specOnce.Do(func() {
		doc, err := libopenapi.NewDocument(openAPIDocument)
		if err != nil {
			specErr = []error{err}
			return
		}
		specV, specErr = validator.NewValidator(doc, config.WithFormatAssertions())
	})
	if len(specErr) > 0 {
		t.Fatalf("openapi.json does not load: %v", specErr)
	}
	return specV
}

// checkExchange validates one API exchange against the document: the
// answer always (every status and body the handler gives must be
// documented); the request when the handler accepted it (2xx: the document
// must allow what the handler serves) and when it answered 400 (the
// document must predict the refusal: the request breaks a schema, or the
// error is one of the BadRequest examples, the rules JSON Schema cannot
// state). A batch is judged item by item (checkBatchItems). A path or
// method the document lacks is accepted only when the handler refused it
// with 401, 403, 404 or 405. rest is the path after the handler's API
// mount; the document's server is /api.
func checkExchange(t testing.TB, method string, target *url.URL, rest string, header http.Header, body string, w *httptest.ResponseRecorder) {
	t.Helper()
	if method == http.MethodHead {
		return // no body to check; HEAD mirrors GET
	}
	v := openAPIValidator(t)
	req := func(body string) *http.Request {
		u := *target
		u.Host, u.Path, u.RawPath = "sho.rt", "/api"+rest, ""
		r := (&http.Request{Method: method, URL: &u, Header: header.Clone(), Host: u.Host}).WithContext(context.Background())
		r.Body = io.NopCloser(strings.NewReader(body))
		if body != "" && r.Header.Get("Content-Type") == "" {
			// The handler reads POST bodies as JSON whatever their type; the
			// document names the type well-behaved clients send.
			r.Header.Set("Content-Type", "application/json")
		}
		return r
	}
	specMu.Lock()
	defer specMu.Unlock()
	for _, part := range answerParts(w) {
		resp := w.Result()
		resp.Body = io.NopCloser(bytes.NewReader(part))
		_, errs := v.ValidateHttpResponse(req(body), resp)
		for _, e := range errs {
			if !undocumentedRefusal(e, w.Code) {
				t.Errorf("openapi.json: %s %s answered %d %.300s\n  %s", method, rest, w.Code, w.Body, describe(e))
			}
		}
	}
	switch {
	case rest == "/links/batch" && w.Code == http.StatusOK:
		checkBatchItems(t, v, req, body, w.Body.Bytes())
	case w.Code/100 == 2:
		if _, errs := v.ValidateHttpRequest(req(body)); len(errs) > 0 {
			t.Errorf("openapi.json forbids a request the handler served: %s %s %.300s answered %d\n  %s", method, target.RawQuery, body, w.Code, describe(errs[0]))
		}
	case w.Code == http.StatusBadRequest:
		checkRefusal(t, v, req(body), method+" "+rest+"?"+target.RawQuery+" "+body, errorOf(t, w.Body.Bytes()))
	}
}

// checkRefusal: the document predicts a 400 with message msg to r.
func checkRefusal(t testing.TB, v validator.Validator, r *http.Request, what, msg string) {
	t.Helper()
	if ok, _ := v.ValidateHttpRequest(r); ok && !documentedRefusal(msg) {
		t.Errorf("openapi.json allows a request the handler refused with 400 %q, and no BadRequest example states the rule: %.300s", msg, what)
	}
}

// checkBatchItems judges a batch the handler answered 200: the items it
// accepted, sent alone, are a request the document allows; each item it
// refused with 400 (or as refused, in an import), sent alone, is one the
// document refuses or a documented rule.
func checkBatchItems(t testing.TB, v validator.Validator, req func(string) *http.Request, body string, answer []byte) {
	t.Helper()
	var in struct {
		Mode   *string           `json:"mode"`
		DryRun *bool             `json:"dry_run"`
		Links  []json.RawMessage `json:"links"`
	}
	var out struct {
		Results []struct {
			Status int    `json:"status"`
			Result string `json:"result"`
			Error  string `json:"error"`
		} `json:"results"`
	}
	if json.Unmarshal([]byte(body), &in) != nil || json.Unmarshal(answer, &out) != nil || len(out.Results) != len(in.Links) {
		t.Errorf("batch %.200s answered 200 %.300s: results do not match the items", body, answer)
		return
	}
	wrap := func(items []json.RawMessage) string {
		env := map[string]any{"links": items}
		if in.Mode != nil {
			env["mode"] = *in.Mode
		}
		if in.DryRun != nil {
			env["dry_run"] = *in.DryRun
		}
		b, _ := json.Marshal(env)
		return string(b)
	}
	var accepted []json.RawMessage
	for i, res := range out.Results {
		switch {
		case res.Status == http.StatusBadRequest || res.Result == "refused":
			checkRefusal(t, v, req(wrap(in.Links[i:i+1])), "batch item "+string(in.Links[i]), res.Error)
		case res.Status/100 == 2 || res.Result == "created" || res.Result == "skipped" || res.Result == "conflict":
			accepted = append(accepted, in.Links[i])
		}
	}
	if len(accepted) > 0 {
		if _, errs := v.ValidateHttpRequest(req(wrap(accepted))); len(errs) > 0 {
			t.Errorf("openapi.json forbids batch items the handler accepted: %.300s\n  %s", wrap(accepted), describe(errs[0]))
		}
	}
}

// documentedRefusal reports whether msg is one of the document's
// BadRequest examples, the parameter or field it starts with ("size: ..."),
// quoted values, numbers, times and code points taken as placeholders.
func documentedRefusal(msg string) bool {
	shape := refusalShape(msg)
	for _, ex := range badRequestExamples() {
		if refusalShape(ex) == shape {
			return true
		}
	}
	return false
}

var (
	refusalValues = regexp.MustCompile(`'[^']*'|"[^"]*"|U\+[0-9A-F]{4,6}|\d{4}-\d\d-\d\dT[0-9:.]+(Z|[+-]\d\d:\d\d)|\d+`)
	examplesOnce  sync.Once
	examples      []string
)

var refusalName = regexp.MustCompile(`^[A-Za-z_-]+(?:\[\d+\])?(?:\.[A-Za-z_-]+(?:\[\d+\])?)*( |:)`)

func refusalShape(msg string) string {
	return refusalValues.ReplaceAllString(refusalName.ReplaceAllString(msg, "_$1"), "_")
}

// badRequestExamples are the error messages of the BadRequest examples.
func badRequestExamples() []string {
	examplesOnce.Do(func() {
		var doc struct {
			Components struct {
				Responses struct {
					BadRequest struct {
						Content map[string]struct {
							Examples map[string]struct {
								Value struct {
									Error string `json:"error"`
								} `json:"value"`
							} `json:"examples"`
						} `json:"content"`
					} `json:"BadRequest"`
				} `json:"responses"`
			} `json:"components"`
		}
		if err := json.Unmarshal(openAPIDocument, &doc); err != nil {
			panic(err)
		}
		for _, ex := range doc.Components.Responses.BadRequest.Content["application/json"].Examples {
			examples = append(examples, ex.Value.Error)
		}
	})
	return examples
}

// answerParts splits an NDJSON answer into its lines, each checked against
// the document's schema (that of one line); other answers are one part.
func answerParts(w *httptest.ResponseRecorder) [][]byte {
	if w.Header().Get("Content-Type") != "application/x-ndjson" {
		return [][]byte{w.Body.Bytes()}
	}
	var parts [][]byte
	for line := range bytes.Lines(w.Body.Bytes()) {
		parts = append(parts, line)
	}
	return parts
}

// undocumentedRefusal: an unknown path or method, refused as such (keys
// are checked before routing, so 401 and 403 too).
func undocumentedRefusal(e *verrors.ValidationError, status int) bool {
	if !e.IsPathMissingError() && !e.IsOperationMissingError() {
		return false
	}
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusMethodNotAllowed:
		return true
	}
	return false
}

func describe(e *verrors.ValidationError) string {
	s := e.Error()
	for _, se := range e.SchemaValidationErrors {
		s += "\n    " + se.Reason + " at " + se.FieldPath
	}
	return s
}

// TestOpenAPIDocument: the document is valid OpenAPI 3.1, and the handler
// serves it without a key, with its own mount as the server.
func TestOpenAPIDocument(t *testing.T) {
	v := openAPIValidator(t)
	if ok, errs := v.ValidateDocument(); !ok {
		for _, e := range errs {
			t.Errorf("openapi.json: %s", describe(e))
		}
	}
	h := newHandler(t, newMemStore(), func(h *Handler) { h.API = "/admin/api/" })
	w := serve(t, h, "GET", "/admin/api/openapi.json", "")
	if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("GET openapi.json = %d %q", w.Code, w.Header().Get("Content-Type"))
	}
	if !strings.Contains(w.Body.String(), `"url": "/admin/api"`) || !strings.Contains(w.Body.String(), `"openapi": "3.1.0"`) {
		t.Errorf("served document lacks its server or version:\n%.300s", w.Body)
	}
	if w := serve(t, h, "POST", "/admin/api/openapi.json", "{}"); w.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST openapi.json = %d, want 405", w.Code)
	}
}
