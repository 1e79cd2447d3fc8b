package shortener

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
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
		specV, specErr = validator.NewValidator(doc)
	})
	if len(specErr) > 0 {
		t.Fatalf("openapi.json does not load: %v", specErr)
	}
	return specV
}

// checkExchange validates one API exchange: the answer always (every status
// and body the handler gives must be documented), the request when the
// handler accepted it (2xx: a request the handler serves must be one the
// document allows). A path or method the document lacks is accepted only
// when the handler refused it with 404 or 405. rest is the path after the
// handler's API mount; the document's server is /api.
func checkExchange(t testing.TB, method string, target *url.URL, rest string, header http.Header, body string, w *httptest.ResponseRecorder) {
	t.Helper()
	if method == http.MethodHead {
		return // no body to check; HEAD mirrors GET
	}
	v := openAPIValidator(t)
	u := *target
	u.Host, u.Path, u.RawPath = "sho.rt", "/api"+rest, ""
	u.RawQuery = withoutEmptyValues(u.Query())
	r := (&http.Request{Method: method, URL: &u, Header: header.Clone(), Host: u.Host}).WithContext(context.Background())
	r.Body = io.NopCloser(strings.NewReader(body))
	if body != "" && r.Header.Get("Content-Type") == "" {
		// The handler reads POST bodies as JSON whatever their type; the
		// document names the type well-behaved clients send.
		r.Header.Set("Content-Type", "application/json")
	}
	specMu.Lock()
	var errs []*verrors.ValidationError
	for _, part := range answerParts(w) {
		resp := w.Result()
		resp.Body = io.NopCloser(bytes.NewReader(part))
		_, perrs := v.ValidateHttpResponse(r, resp)
		errs = append(errs, perrs...)
	}
	if w.Code/100 == 2 {
		r.Body = io.NopCloser(strings.NewReader(body))
		_, reqErrs := v.ValidateHttpRequest(r)
		errs = append(errs, reqErrs...)
	}
	specMu.Unlock()
	for _, e := range errs {
		if undocumentedRefusal(e, w.Code) {
			continue
		}
		t.Errorf("openapi.json: %s %s answered %d %.300s\n  %s", method, rest, w.Code, w.Body, describe(e))
	}
}

// withoutEmptyValues drops parameters given empty (?status=): the handler
// reads them as absent, as the document's description says, which OpenAPI's
// enums and integers cannot express.
func withoutEmptyValues(q url.Values) string {
	for k, vs := range q {
		if len(vs) == 1 && vs[0] == "" {
			delete(q, k)
		}
	}
	return q.Encode()
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
