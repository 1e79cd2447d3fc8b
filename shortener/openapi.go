package shortener

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
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
