package webhookapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/link"
	"github.com/edgekit/caddy-edgekit/shortener/webhook"
)

// API serves <api>/webhooks. Set the fields before the first request.
type API struct {
	Store  webhook.Store
	Log    link.EventLog // new endpoints start at its end
	Client *webhook.Client
	// CheckURL applies the handler's URL policy to an endpoint's URL (the
	// same as a link's, private targets judged by Client.Allow instead)
	// and returns it in canonical form (an IDNA host), which is stored.
	CheckURL func(raw string) (string, error)
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// Changed, when set, is called after every change of an endpoint (so
	// the handler can turn click events on or off).
	Changed func()
}

// Error is an API error: a status and a message naming the field.
type Error struct {
	Status int
	Msg    string
}

func (e *Error) Error() string   { return e.Msg }
func (e *Error) HTTPStatus() int { return e.Status }

func errorf(status int, format string, args ...any) error {
	return &Error{status, fmt.Sprintf(format, args...)}
}

// MaxBody bounds a request body.
const MaxBody = 64 << 10

// Serve answers one request for rest, the path after <api> ("/webhooks",
// "/webhooks/<id>", ...). write says whether the caller's key may change
// things; reads are for every key. An error is an *Error (the API's JSON
// error) or a store failure (a 500).
func (a *API) Serve(w http.ResponseWriter, r *http.Request, rest string, write bool) error {
	parts := strings.Split(strings.TrimPrefix(rest, "/webhooks"), "/")[1:]
	if r.Method != http.MethodGet && r.Method != http.MethodHead && !write {
		return errorf(http.StatusForbidden, "this API key may only read")
	}
	if len(parts) > 0 && !webhook.ValidEndpointID(parts[0]) {
		return errorf(http.StatusNotFound, "no webhook endpoint %q", parts[0])
	}
	switch {
	case len(parts) == 0:
		return a.collection(w, r)
	case len(parts) == 1:
		return a.endpoint(w, r, parts[0])
	case len(parts) == 2 && parts[1] == "rotate":
		return only(w, r, http.MethodPost, func() error { return a.rotate(w, r, parts[0]) })
	case len(parts) == 2 && parts[1] == "replay":
		return only(w, r, http.MethodPost, func() error { return a.replaySince(w, r, parts[0]) })
	case len(parts) == 2 && parts[1] == "messages":
		return only(w, r, http.MethodGet, func() error { return a.messages(w, r, parts[0]) })
	case len(parts) == 3 && parts[1] == "messages":
		return only(w, r, http.MethodGet, func() error { return a.message(w, r, parts[0], parts[2]) })
	case len(parts) == 4 && parts[1] == "messages" && parts[3] == "replay":
		return only(w, r, http.MethodPost, func() error { return a.replayOne(w, r, parts[0], parts[2]) })
	}
	return errorf(http.StatusNotFound, "no such API endpoint")
}

// only runs f for method (GET also answers HEAD), else answers 405.
func only(w http.ResponseWriter, r *http.Request, method string, f func() error) error {
	if r.Method == method || method == http.MethodGet && r.Method == http.MethodHead {
		return f()
	}
	allow := method
	if method == http.MethodGet {
		allow = "GET, HEAD"
	}
	w.Header().Set("Allow", allow)
	return errorf(http.StatusMethodNotAllowed, "method %s not allowed here", r.Method)
}

func (a *API) collection(w http.ResponseWriter, r *http.Request) error {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		eps, err := a.Store.Endpoints(r.Context())
		if err != nil {
			return err
		}
		out := make([]EndpointResponse, len(eps))
		for i, e := range eps {
			out[i] = responseOf(e)
		}
		writeJSON(w, http.StatusOK, map[string]any{"endpoints": out})
		return nil
	case http.MethodPost:
		return a.create(w, r)
	}
	w.Header().Set("Allow", "GET, HEAD, POST")
	return errorf(http.StatusMethodNotAllowed, "method %s not allowed on webhooks", r.Method)
}

func (a *API) endpoint(w http.ResponseWriter, r *http.Request, id string) error {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		e, err := a.Store.Endpoint(r.Context(), id)
		if err != nil {
			return notFound(err, id)
		}
		writeJSON(w, http.StatusOK, responseOf(e))
		return nil
	case http.MethodPatch:
		return a.patch(w, r, id)
	case http.MethodDelete:
		if err := a.Store.DeleteEndpoint(r.Context(), id); err != nil {
			return notFound(err, id)
		}
		a.changed()
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	w.Header().Set("Allow", "GET, HEAD, PATCH, DELETE")
	return errorf(http.StatusMethodNotAllowed, "method %s not allowed on a webhook endpoint", r.Method)
}

// notFound maps a store's ErrNotFound to a 404.
func notFound(err error, id string) error {
	if errors.Is(err, webhook.ErrNotFound) {
		return errorf(http.StatusNotFound, "no webhook endpoint %q", id)
	}
	return err
}

func (a *API) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

func (a *API) changed() {
	if a.Changed != nil {
		a.Changed()
	}
}

// readBody reads at most MaxBody bytes of a JSON body.
func readBody(r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r.Body, MaxBody+1))
	if err != nil {
		return nil, errorf(http.StatusBadRequest, "reading the body: %v", err)
	}
	if len(b) > MaxBody {
		return nil, errorf(http.StatusRequestEntityTooLarge, "the body is over %d bytes", MaxBody)
	}
	return b, nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
