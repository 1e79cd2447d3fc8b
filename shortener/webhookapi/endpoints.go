package webhookapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/edgekit/caddy-edgekit/internal/strictjson"
	"github.com/edgekit/caddy-edgekit/shortener/webhook"
)

// create answers POST <api>/webhooks: 201 with the endpoint and its
// signing secret, shown this once. The endpoint gets the events recorded
// from now on.
func (a *API) create(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	var req EndpointRequest
	if err := strictjson.Decode(body, &req); err != nil {
		return bad("invalid JSON: %v", err)
	}
	now := a.now().UTC()
	secret := webhook.NewSecret()
	e := webhook.Endpoint{ID: webhook.NewEndpointID(), URL: req.URL, Description: req.Description, Types: req.Types,
		Tags: req.Tags, Codes: req.Codes, Disabled: req.Disabled, Batch: req.Batch,
		BatchWait: time.Duration(req.BatchWaitMS) * time.Millisecond, Keys: []webhook.Key{{Secret: secret}},
		CreatedAt: now, UpdatedAt: now, Version: 1}
	if e.Disabled {
		e.DisabledReason = "disabled through the API"
	}
	if err := a.judge(r.Context(), &e); err != nil {
		return err
	}
	from, err := a.Log.EventsEnd(r.Context())
	if err != nil {
		return err
	}
	if err := a.Store.CreateEndpoint(r.Context(), e, from); err != nil {
		if errors.Is(err, webhook.ErrTooMany) {
			return errorf(http.StatusConflict, "at most %d webhook endpoints are allowed", webhook.MaxEndpoints)
		}
		return err
	}
	a.changed()
	out := responseOf(e)
	out.Secret = secret.Encode()
	w.Header().Set("Location", "webhooks/"+e.ID)
	writeJSON(w, http.StatusCreated, out)
	return nil
}

// patch answers PATCH <api>/webhooks/<id>: a JSON merge patch of url,
// description, types, tags, codes (null clears a filter), disabled,
// batch and batch_wait_ms.
func (a *API) patch(w http.ResponseWriter, r *http.Request, id string) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	var fields map[string]json.RawMessage
	if err := strictjson.Decode(body, &fields); err != nil || fields == nil {
		return bad("the body must be a JSON object (a merge patch)")
	}
	var judged error
	e, err := a.Store.UpdateEndpoint(r.Context(), id, a.now(), func(e *webhook.Endpoint) error {
		if err := applyPatch(e, fields); err != nil {
			return err
		}
		judged = a.judge(r.Context(), e)
		return judged
	})
	if judged != nil {
		return judged
	}
	var apiErr *Error
	if errors.As(err, &apiErr) {
		return err
	}
	if err != nil {
		return notFound(err, id)
	}
	a.changed()
	writeJSON(w, http.StatusOK, responseOf(e))
	return nil
}

// applyPatch applies the merge patch's fields to e.
func applyPatch(e *webhook.Endpoint, fields map[string]json.RawMessage) error {
	var waitMS int64 = e.BatchWait.Milliseconds()
	wasDisabled := e.Disabled
	targets := map[string]any{"url": &e.URL, "description": &e.Description, "types": &e.Types, "tags": &e.Tags,
		"codes": &e.Codes, "disabled": &e.Disabled, "batch": &e.Batch, "batch_wait_ms": &waitMS}
	for name, raw := range fields {
		dst, ok := targets[name]
		if !ok {
			return bad("%s: not a field of a webhook endpoint", name)
		}
		if string(raw) == "null" {
			switch name {
			case "tags", "codes", "description":
			default:
				return bad("%s: may not be null", name)
			}
		}
		if err := json.Unmarshal(raw, dst); err != nil {
			return bad("%s: %v", name, err)
		}
	}
	e.BatchWait = time.Duration(waitMS) * time.Millisecond
	switch {
	case e.Disabled && !wasDisabled:
		e.DisabledReason = "disabled through the API"
	case !e.Disabled:
		e.DisabledReason = ""
	}
	return nil
}

// rotate answers POST <api>/webhooks/<id>/rotate: a new signing secret,
// shown this once; the current one keeps signing for grace_seconds
// (default a day, at most a week) so receivers can switch over.
func (a *API) rotate(w http.ResponseWriter, r *http.Request, id string) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	req := struct {
		GraceSeconds *int64 `json:"grace_seconds"`
	}{}
	if len(body) > 0 {
		if err := strictjson.Decode(body, &req); err != nil {
			return bad("invalid JSON: %v", err)
		}
	}
	grace := int64(DefaultGraceSeconds)
	if req.GraceSeconds != nil {
		if grace = *req.GraceSeconds; grace < 0 || grace > MaxGraceSeconds {
			return bad("grace_seconds: %d is not 0 to %d", grace, MaxGraceSeconds)
		}
	}
	secret, now := webhook.NewSecret(), a.now()
	e, err := a.Store.UpdateEndpoint(r.Context(), id, now, func(e *webhook.Endpoint) error {
		e.Keys = rotated(e.Keys, secret, now, time.Duration(grace)*time.Second)
		return nil
	})
	if err != nil {
		return notFound(err, id)
	}
	out := responseOf(e)
	out.Secret = secret.Encode()
	writeJSON(w, http.StatusOK, out)
	return nil
}

// rotated puts secret first, ends the current key's signing after grace,
// drops keys whose grace has ended, and keeps at most webhook.MaxKeys.
func rotated(keys []webhook.Key, secret webhook.Secret, now time.Time, grace time.Duration) []webhook.Key {
	out := []webhook.Key{{Secret: secret}}
	for _, k := range keys {
		if k.Until.IsZero() {
			k.Until = now.Add(grace)
		}
		if k.Until.After(now) && len(out) < webhook.MaxKeys {
			out = append(out, k)
		}
	}
	return out
}
