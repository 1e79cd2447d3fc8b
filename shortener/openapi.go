package shortener

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
)

// openAPIDocument is the OpenAPI 3.1 description of the management API,
// kept in the repository beside the handler. Every request and response of
// the API's tests is validated against it (openapi_check_test.go), so the
// document cannot drift from what the handler answers.
//
//go:embed openapi.json
var openAPIDocument []byte

// openAPIFor returns the document with its servers entry set to the
// handler's API mount, so clients resolve its paths where they fetched it.
func openAPIFor(mount string) ([]byte, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(openAPIDocument, &doc); err != nil {
		return nil, fmt.Errorf("reading the embedded openapi.json: %w", err)
	}
	servers, err := json.Marshal([]map[string]string{{"url": mount}})
	if err != nil {
		return nil, err
	}
	doc["servers"] = servers
	return json.MarshalIndent(doc, "", "  ")
}

// serveOpenAPI answers GET <api>/openapi.json; no key is needed.
func (h *Handler) serveOpenAPI(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		return apiErr(http.StatusMethodNotAllowed, "method %s not allowed on openapi.json", r.Method)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write(h.openAPI)
	}
	return nil
}

// apiRoute is one path of the document: its segments (a "{name}" segment
// matches any one) and its operationIds by method.
type apiRoute struct {
	segs []string
	ops  map[string]string
}

// apiMethods are the document's operations' methods, as its keys spell them.
var apiMethods = map[string]string{
	"get": http.MethodGet, "post": http.MethodPost, "put": http.MethodPut,
	"patch": http.MethodPatch, "delete": http.MethodDelete,
}

// apiRoutes are the document's paths, read once: they name the API's spans.
var apiRoutes = sync.OnceValue(func() []apiRoute {
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openAPIDocument, &doc); err != nil {
		return nil // openapi_check_test.go reads it
	}
	var routes []apiRoute
	for path, item := range doc.Paths {
		rt := apiRoute{segs: strings.Split(path, "/"), ops: map[string]string{}}
		for key, raw := range item {
			var op struct {
				OperationID string `json:"operationId"`
			}
			if m, ok := apiMethods[key]; ok && json.Unmarshal(raw, &op) == nil && op.OperationID != "" {
				rt.ops[m] = op.OperationID
			}
		}
		routes = append(routes, rt)
	}
	return routes
})

// apiOperation is the operationId the document gives method on rest (the
// path under the API's mount; HEAD is GET's), "unknown" if none: of the
// paths that match, the one with the most literal segments (links/export
// before links/{code}).
func apiOperation(method, rest string) string {
	if method == http.MethodHead {
		method = http.MethodGet
	}
	best, bestLiteral := "unknown", -1
	for _, rt := range apiRoutes() {
		if literal, ok := rt.match(rest); ok && literal > bestLiteral {
			if op, ok := rt.ops[method]; ok {
				best, bestLiteral = op, literal
			}
		}
	}
	return best
}

// match reports whether path is one of rt's and how many of rt's segments
// are literal, without allocating.
func (rt apiRoute) match(path string) (literal int, ok bool) {
	for i, seg := range rt.segs {
		var got string
		if i == len(rt.segs)-1 {
			got, path = path, ""
			if strings.IndexByte(got, '/') >= 0 {
				return 0, false
			}
		} else {
			var found bool
			if got, path, found = strings.Cut(path, "/"); !found {
				return 0, false
			}
		}
		switch {
		case strings.HasPrefix(seg, "{"):
			if got == "" {
				return 0, false
			}
		case got != seg:
			return 0, false
		default:
			literal++
		}
	}
	return literal, true
}
