package webhookapi

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/edgekit/caddy-edgekit/internal/strictjson"
	"github.com/edgekit/caddy-edgekit/shortener/link"
	"github.com/edgekit/caddy-edgekit/shortener/webhook"
)

// Bounds of a listing of messages.
const (
	DefaultMessages = 50
	MaxMessages     = 200
)

// messages answers GET <api>/webhooks/<id>/messages?state=&before=&limit=:
// the endpoint's messages, newest first, and "next", the before of the
// next page (absent on the last).
func (a *API) messages(w http.ResponseWriter, r *http.Request, id string) error {
	q := r.URL.Query()
	state := webhook.State(q.Get("state"))
	switch state {
	case "", webhook.StatePending, webhook.StateDelivered, webhook.StateFailed:
	default:
		return bad("state: %q is not pending, delivered or failed", state)
	}
	before := q.Get("before")
	if before != "" && !webhook.ValidID(before) {
		return bad("before: not a message id")
	}
	limit := DefaultMessages
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxMessages {
			return bad("limit: %q is not 1 to %d", v, MaxMessages)
		}
		limit = n
	}
	if _, err := a.Store.Endpoint(r.Context(), id); err != nil {
		return notFound(err, id)
	}
	msgs, err := a.Store.Messages(r.Context(), id, state, before, limit)
	if err != nil {
		return err
	}
	out := struct {
		Messages []MessageResponse `json:"messages"`
		Next     string            `json:"next,omitempty"`
	}{Messages: make([]MessageResponse, len(msgs))}
	for i, m := range msgs {
		out.Messages[i] = messageOf(m)
	}
	if len(msgs) == limit {
		out.Next = msgs[len(msgs)-1].ID
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// message answers GET <api>/webhooks/<id>/messages/<msg>: the message,
// its body as sent, and its attempts.
func (a *API) message(w http.ResponseWriter, r *http.Request, id, msgID string) error {
	if !webhook.ValidID(msgID) {
		return errorf(http.StatusNotFound, "no message %q", msgID)
	}
	logs, err := a.Store.Attempts(r.Context(), id, msgID)
	if errors.Is(err, webhook.ErrNoMessage) {
		return errorf(http.StatusNotFound, "no message %q of webhook endpoint %q", msgID, id)
	}
	if err != nil {
		return err
	}
	m, err := a.findMessage(r, id, msgID)
	if err != nil {
		return err
	}
	out := struct {
		MessageResponse
		Body     string            `json:"body"`
		Attempts []AttemptResponse `json:"attempt_log"`
	}{MessageResponse: messageOf(m), Body: string(m.Body), Attempts: make([]AttemptResponse, len(logs))}
	for i, l := range logs {
		out.Attempts[i] = AttemptResponse{N: l.N, At: l.At.UTC(), Status: l.Status,
			LatencyMS: float64(l.Latency.Microseconds()) / 1000, Body: validText(l.Body), Error: l.Error}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// findMessage reads one message: the listing from just after its id.
func (a *API) findMessage(r *http.Request, id, msgID string) (webhook.Message, error) {
	msgs, err := a.Store.Messages(r.Context(), id, "", nextID(msgID), 1)
	if err != nil {
		return webhook.Message{}, err
	}
	if len(msgs) == 0 || msgs[0].ID != msgID {
		return webhook.Message{}, errorf(http.StatusNotFound, "no message %q of webhook endpoint %q", msgID, id)
	}
	return msgs[0], nil
}

// nextID is a string after id and before every longer id: listing
// "before" it starts at id ('~' sorts after every character of an id, and
// ids have one length).
func nextID(id string) string { return id + "~" }

// validText is b as text, invalid UTF-8 replaced.
func validText(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// replayOne answers POST <api>/webhooks/<id>/messages/<msg>/replay: the
// message is sent again, under its id, with a new series of attempts.
func (a *API) replayOne(w http.ResponseWriter, r *http.Request, id, msgID string) error {
	if !webhook.ValidID(msgID) {
		return errorf(http.StatusNotFound, "no message %q", msgID)
	}
	n, err := a.Store.Replay(r.Context(), id, msgID, time.Time{}, a.now())
	if errors.Is(err, webhook.ErrNoMessage) {
		return errorf(http.StatusNotFound, "no message %q of webhook endpoint %q", msgID, id)
	}
	if err != nil {
		return notFound(err, id)
	}
	writeJSON(w, http.StatusAccepted, map[string]int{"replayed": n})
	return nil
}

// replaySince answers POST <api>/webhooks/<id>/replay {"since": RFC 3339}:
// every message of the endpoint made at or after since is sent again.
func (a *API) replaySince(w http.ResponseWriter, r *http.Request, id string) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	var req struct {
		Since string `json:"since"`
	}
	if err := strictjson.Decode(body, &req); err != nil {
		return bad("invalid JSON: %v", err)
	}
	since, err := link.ParseTime(req.Since)
	if err != nil {
		return bad("since: %v", err)
	}
	if _, err := a.Store.Endpoint(r.Context(), id); err != nil {
		return notFound(err, id)
	}
	n, err := a.Store.Replay(r.Context(), id, "", since, a.now())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, map[string]int{"replayed": n})
	return nil
}
