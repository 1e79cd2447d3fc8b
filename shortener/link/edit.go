package link

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Errors of a LinkEditor.
var (
	// ErrRevoked: the link is revoked and can no longer be edited.
	ErrRevoked = errors.New("link revoked")
	// ErrVersionMismatch: the link's version is none of those the edit
	// required (If-Match); nothing was changed.
	ErrVersionMismatch = errors.New("link version does not match")
)

// LinkEditor changes stored links and keeps their history. Both stores
// implement it.
//
// Every link has a version: 1 when created (and for links stored before
// versions existed), one more with every change, revocation included. The
// API's ETag is the version (etag).
type LinkEditor interface {
	// Edit changes one link atomically: it reads the link under a write lock
	// (PostgreSQL: SELECT ... FOR UPDATE in a transaction; embedded: one
	// write transaction), checks it, calls e.Apply on a copy and, if any
	// field changed, stores the result with the next version and one
	// HistoryEntry in the same transaction. It returns the link as stored
	// afterwards, or ErrNotFound, ErrRevoked, ErrVersionMismatch or the
	// error of Apply with nothing changed. An edit that changes nothing
	// keeps the version and writes no history.
	Edit(ctx context.Context, code string, e Edit) (Link, error)
	// History returns up to limit entries of the link's history, newest
	// first, with versions below before (0: from the newest); ErrNotFound
	// when no link has this code.
	History(ctx context.Context, code string, before int64, limit int) ([]HistoryEntry, error)
}

// Edit is one change to a link.
type Edit struct {
	// IfMatch lists the versions the link must have; nil: any.
	IfMatch []int64
	// Apply changes the link in place. It runs inside the store's
	// transaction (possibly more than once), so it must be quick and have
	// no side effects.
	Apply func(l *Link) error
	// Key is the fingerprint of the API key making the change (keyFingerprint).
	Key string
	// At is the time of the change.
	At time.Time
}

// HistoryEntry is one change of a link: the version it produced, when, by
// which key, and each changed field's old and new value as the API shows
// them (JSON; null for none).
type HistoryEntry struct {
	Version int64
	At      time.Time
	Key     string
	Changes map[string]Change
}

// Change is a field's value before and after an edit.
type Change struct {
	From json.RawMessage `json:"from"`
	To   json.RawMessage `json:"to"`
}

// MaxHistoryPage is the most history entries one History call returns.
const MaxHistoryPage = 1000

// EditableFields are the fields an edit may change, each with its value as
// the API shows it. diffLinks compares links through them.
var EditableFields = []struct {
	Name  string
	value func(Link) any
}{
	{"long_url", func(l Link) any { return l.LongURL }},
	{"title", func(l Link) any { return nullString(l.Title) }},
	{"tags", func(l Link) any { return TagsOrNil(l.Tags) }},
	{"notes", func(l Link) any { return nullString(l.Notes) }},
	{"expires_at", func(l Link) any { return nullTimeValue(l.ExpiresAt) }},
	{"redirect_status", func(l Link) any { return RulesResponse(l).RedirectStatus }},
	{"valid_from", func(l Link) any { return RulesResponse(l).ValidFrom }},
	{"max_clicks", func(l Link) any { return RulesResponse(l).MaxClicks }},
	{"forward_query", func(l Link) any { return RulesResponse(l).ForwardQuery }},
	{"rules", func(l Link) any { return TargetingPart(l.Targeting, "rules") }},
	{"variants", func(l Link) any { return TargetingPart(l.Targeting, "variants") }},
	{"fallback_url", func(l Link) any { return nullString(l.FallbackURL) }},
}

// TargetingPart is one member of a link's targeting object: its JSON, or
// null when absent.
func TargetingPart(targeting []byte, name string) json.RawMessage {
	var parts map[string]json.RawMessage
	if json.Unmarshal(targeting, &parts) != nil || len(parts[name]) == 0 {
		return json.RawMessage("null")
	}
	return parts[name]
}

// diffLinks returns the fields whose API value differs between old and
// new; empty when none does.
func diffLinks(old, new Link) (map[string]Change, error) {
	changes := map[string]Change{}
	for _, f := range EditableFields {
		from, err := json.Marshal(f.value(old))
		if err != nil {
			return nil, fmt.Errorf("encoding %s: %w", f.Name, err)
		}
		to, err := json.Marshal(f.value(new))
		if err != nil {
			return nil, fmt.Errorf("encoding %s: %w", f.Name, err)
		}
		if !bytes.Equal(from, to) {
			changes[f.Name] = Change{From: from, To: to}
		}
	}
	return changes, nil
}

// ApplyEdit runs the checks and the change of Edit on the current link cur
// (version included): the new link and its changes, none when nothing
// changed. The stores call it inside their transaction.
func ApplyEdit(cur Link, e Edit) (Link, map[string]Change, error) {
	if !cur.RevokedAt.IsZero() {
		return Link{}, nil, ErrRevoked
	}
	if e.IfMatch != nil && !containsVersion(e.IfMatch, cur.Version) {
		return Link{}, nil, ErrVersionMismatch
	}
	next := cur
	next.Tags = append([]string(nil), cur.Tags...)
	if err := e.Apply(&next); err != nil {
		return Link{}, nil, err
	}
	next.Code, next.CreatedAt, next.RevokedAt, next.Version = cur.Code, cur.CreatedAt, cur.RevokedAt, cur.Version
	next.ClicksServed = cur.ClicksServed
	next.Tags = TagsOrNil(next.Tags)
	if next.LongURL == "" {
		return Link{}, nil, errors.New("editing link: empty long URL")
	}
	if err := CheckMetadata(next.Title, next.Tags, next.Notes); err != nil {
		return Link{}, nil, fmt.Errorf("editing link: %w", err)
	}
	if err := CheckRules(next); err != nil {
		return Link{}, nil, fmt.Errorf("editing link: %w", err)
	}
	changes, err := diffLinks(cur, next)
	if err != nil {
		return Link{}, nil, err
	}
	if len(changes) == 0 {
		return cur, nil, nil
	}
	next.Version = cur.Version + 1
	return next, changes, nil
}

func containsVersion(vs []int64, v int64) bool {
	for _, x := range vs {
		if x == v {
			return true
		}
	}
	return false
}

// ETag is the ETag of a link: its version as a quoted decimal, a strong
// validator of the link's stored fields (the click total of a GET answer
// is not one of them). A link not read back from a store (just created)
// has version 1.
func ETag(l Link) string {
	v := l.Version
	if v < 1 {
		v = 1
	}
	return `"` + strconv.FormatInt(v, 10) + `"`
}

func nullString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func nullTimeValue(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}
