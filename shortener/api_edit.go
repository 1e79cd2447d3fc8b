package shortener

import (
	"context"
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"go.uber.org/zap"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// patchResponse is the answer to PATCH <api>/links/<code>: the link as
// edited, and a warning when browsers may keep the old destination.
type patchResponse struct {
	link.Response
	// Warning is set when the edit changed the long URL of a link served
	// with a permanent redirect (301 or 308): browsers cache those, and
	// visitors who followed the link before may keep going to the old one.
	Warning string `json:"warning,omitempty"`
}

// permanentWarning is the warning of an edited permanent redirect.
const permanentWarning = "this link is served with a permanent redirect (301 or 308): browsers that followed it before may keep going to the old long_url"

// apiPatch answers PATCH <api>/links/<code>: a JSON Merge Patch (RFC 7396)
// of the link's editable fields, applied atomically with its history entry,
// under If-Match when given; then published to Redis and every L1 like a
// create or delete.
func (h *Handler) apiPatch(w http.ResponseWriter, r *http.Request, code string) error {
	if !validKey(code) {
		return apiErr(http.StatusNotFound, "link not found")
	}
	if err := checkPatchType(r.Header.Values("Content-Type")); err != nil {
		return err
	}
	ifMatch, err := parseIfMatch(r.Header.Values("If-Match"))
	if err != nil {
		return err
	}
	body, err := readBody(w, r, maxBody)
	if err != nil {
		return err
	}
	p, err := h.parsePatch(r, body)
	if err != nil {
		return err
	}
	editor, ok := h.editor()
	if !ok {
		return apiErr(http.StatusNotImplemented, "this link store cannot edit links")
	}
	ctx, cancel := context.WithTimeout(r.Context(), apiTimeout)
	defer cancel()
	var urlChanged bool
	l, err := editor.Edit(ctx, code, link.Edit{IfMatch: ifMatch, Key: keyFingerprint(r), At: h.now().UTC(),
		Apply: func(l *link.Link) error {
			urlChanged = p.longURL != nil && *p.longURL != l.LongURL
			p.apply(l)
			if err := link.CheckRules(*l); err != nil { // valid_from against expires_at
				return apiErr(http.StatusBadRequest, "%v", err)
			}
			return nil
		}})
	if err != nil {
		return h.editErr(err)
	}
	w.Header().Set("ETag", link.ETag(l))
	if err := h.cache.publishLink(ctx, l); err != nil {
		// Other instances would keep the old destination from Redis: say
		// so, so the client retries (the same patch again changes nothing
		// more, and this answer's ETag matches).
		h.logger.Warn("publishing edited link to redis", zap.Error(err))
		return apiErr(http.StatusServiceUnavailable, "link changed in the store, but the shared cache could not be updated; retry the PATCH")
	}
	out := patchResponse{Response: h.response(r, l)}
	if urlChanged && h.permanent(l) {
		out.Warning = permanentWarning
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// editor is the handler's store as a LinkEditor (both stores are one; a
// store given to the handler by a test may not be).
func (h *Handler) editor() (link.LinkEditor, bool) {
	s := h.store
	if sh, ok := s.(sharedStore); ok {
		s = sh.Store
	}
	e, ok := s.(link.LinkEditor)
	return e, ok
}

// permanent reports whether the link is served with a permanent redirect.
func (h *Handler) permanent(l link.Link) bool {
	s := l.RedirectStatus
	if s == 0 {
		s = h.Status
	}
	return s == http.StatusMovedPermanently || s == http.StatusPermanentRedirect
}

// editErr answers a failed Edit. As for a create, a write that timed out
// may still commit, so the client is told the outcome is unknown.
func (h *Handler) editErr(err error) error {
	var ae apiError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, link.ErrNotFound):
		return apiErr(http.StatusNotFound, "link not found")
	case errors.Is(err, link.ErrRevoked):
		return apiErr(http.StatusConflict, "link is revoked and cannot be edited")
	case errors.Is(err, link.ErrVersionMismatch):
		return apiErr(http.StatusPreconditionFailed, "If-Match does not match the link's current ETag; nothing was changed")
	case pgconn.Timeout(err) || errors.Is(err, context.DeadlineExceeded):
		h.logger.Warn("shortener api: store did not answer in time; the edit may have been applied", zap.Error(err))
		return apiErr(http.StatusServiceUnavailable, "link store did not answer in time: the edit may have been applied; GET the link to see")
	}
	return h.storeErr(err)
}

// checkPatchType accepts a merge patch (application/merge-patch+json) or
// plain JSON; anything else, or no Content-Type, is 415.
func checkPatchType(values []string) error {
	if len(values) == 1 {
		mt, params, err := mime.ParseMediaType(values[0])
		cs, hasCS := params["charset"]
		if err == nil && (mt == "application/merge-patch+json" || mt == "application/json") &&
			(!hasCS || strings.EqualFold(cs, "utf-8")) {
			return nil
		}
	}
	return apiErr(http.StatusUnsupportedMediaType, "Content-Type must be application/merge-patch+json (or application/json)")
}

// maxIfMatchTags bounds the entity tags of one If-Match.
const maxIfMatchTags = 32

// parseIfMatch reads If-Match (RFC 9110 13.1.1): nil when absent or "*"
// (any version), else the versions of its strong entity tags in etag's
// form; tags of another form, and weak ones, match no version (If-Match
// compares strongly), so the list may be empty. A malformed header is 400.
func parseIfMatch(values []string) ([]int64, error) {
	if len(values) == 0 {
		return nil, nil
	}
	tags := strings.Split(strings.Join(values, ","), ",")
	if len(tags) > maxIfMatchTags {
		return nil, apiErr(http.StatusBadRequest, "If-Match: more than %d entity tags", maxIfMatchTags)
	}
	versions := []int64{}
	for _, tag := range tags {
		tag = strings.TrimSpace(tag)
		if tag == "*" && len(tags) == 1 {
			return nil, nil
		}
		weak := strings.HasPrefix(tag, "W/")
		tag = strings.TrimPrefix(tag, "W/")
		if len(tag) < 2 || tag[0] != '"' || tag[len(tag)-1] != '"' || !validETagChars(tag[1:len(tag)-1]) {
			return nil, apiErr(http.StatusBadRequest, "If-Match: malformed entity tag (want \"<version>\" as the ETag header gave it, or *)")
		}
		if v, ok := etagVersion(tag); ok && !weak {
			versions = append(versions, v)
		}
	}
	return versions, nil
}

// validETagChars reports RFC 9110's etagc: 0x21, 0x23-0x7E and obs-text.
func validETagChars(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x21 || c == '"' || c == 0x7f {
			return false
		}
	}
	return true
}

// etagVersion is the version of a quoted entity tag in etag's form.
func etagVersion(tag string) (int64, bool) {
	digits := tag[1 : len(tag)-1]
	if digits == "" || len(digits) > 18 || digits[0] == '0' {
		return 0, false
	}
	var v int64
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, false
		}
		v = v*10 + int64(digits[i]-'0')
	}
	return v, true
}

// decodeField decodes one patch field's raw JSON into v, or answers 400
// naming the field and its expected type.
func decodeField(name, want string, raw json.RawMessage, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return apiErr(http.StatusBadRequest, "%s must be %s", name, want)
	}
	return nil
}
