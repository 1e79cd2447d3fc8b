package linktest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// testEdits is the LinkEditor part of the store suite: versions, atomic
// compare-and-set edits and the history, on an empty store s.
func testEdits(t *testing.T, open func(t *testing.T) link.Store, ctxFor func(t *testing.T) context.Context, base time.Time) {
	t.Run("EditAndHistory", func(t *testing.T) {
		s, ctx := open(t), ctxFor(t)
		testEditAndHistory(t, ctx, editor(t, s), base)
	})
	t.Run("EditRefusals", func(t *testing.T) {
		s, ctx := open(t), ctxFor(t)
		testEditRefusals(t, ctx, editor(t, s), base)
	})
	t.Run("EditHistoryPages", func(t *testing.T) {
		s, ctx := open(t), ctxFor(t)
		testHistoryPages(t, ctx, editor(t, s), base)
	})
	t.Run("EditConcurrentIfMatch", func(t *testing.T) {
		s, ctx := open(t), ctxFor(t)
		testConcurrentIfMatch(t, ctx, editor(t, s), base)
	})
}

// storeEditor is a Store that edits.
type storeEditor interface {
	link.Store
	link.LinkEditor
}

func editor(t *testing.T, s link.Store) storeEditor {
	t.Helper()
	return implementing[storeEditor](t, s)
}

func setURL(u string) func(*link.Link) error {
	return func(l *link.Link) error { l.LongURL = u; return nil }
}

func mustGet(t *testing.T, ctx context.Context, s link.Store, code string) link.Link {
	t.Helper()
	l, err := s.Get(ctx, code)
	if err != nil {
		t.Fatalf("Get(%q): %v", code, err)
	}
	return l
}

func testEditAndHistory(t *testing.T, ctx context.Context, s storeEditor, base time.Time) {
	orig := link.Link{Code: "ed1", LongURL: "https://example.com/old", CreatedAt: base, Title: "T", Tags: []string{"a"}}
	if err := s.Create(ctx, orig); err != nil {
		t.Fatal(err)
	}
	if v := mustGet(t, ctx, s, "ed1").Version; v != 1 {
		t.Fatalf("new link version = %d, want 1", v)
	}
	at := base.Add(time.Hour)
	exp := base.Add(48 * time.Hour)
	got, err := s.Edit(ctx, "ed1", link.Edit{IfMatch: []int64{7, 1}, Key: "fp1", At: at, Apply: func(l *link.Link) error {
		l.LongURL, l.Title, l.Tags, l.Notes, l.ExpiresAt = "https://example.com/new", "", []string{"b", "c"}, "n\nx", exp
		return nil
	}})
	if err != nil {
		t.Fatalf("Edit: %v", err)
	}
	want := link.Link{Code: "ed1", LongURL: "https://example.com/new", CreatedAt: base, ExpiresAt: exp,
		Tags: []string{"b", "c"}, Notes: "n\nx", Version: 2}
	AssertLink(t, got, want)
	stored := mustGet(t, ctx, s, "ed1")
	AssertLink(t, stored, want)
	if stored.Version != 2 || got.Version != 2 {
		t.Errorf("version after an edit: answered %d, stored %d, want 2", got.Version, stored.Version)
	}
	// The same values again change nothing: no version, no history.
	if again, err := s.Edit(ctx, "ed1", link.Edit{Key: "fp2", At: at, Apply: setURL("https://example.com/new")}); err != nil || again.Version != 2 {
		t.Errorf("no-op Edit = version %d, %v, want 2, nil", again.Version, err)
	}
	h, err := s.History(ctx, "ed1", 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 1 {
		t.Fatalf("History = %d entries, want 1: %+v", len(h), h)
	}
	e := h[0]
	if e.Version != 2 || !e.At.Equal(at) || e.Key != "fp1" || e.At.Location() != time.UTC {
		t.Errorf("entry = version %d at %v key %q, want 2 at %v fp1", e.Version, e.At, e.Key, at)
	}
	wantChanges := map[string][2]string{
		"long_url":   {`"https://example.com/old"`, `"https://example.com/new"`},
		"title":      {`"T"`, `null`},
		"tags":       {`["a"]`, `["b","c"]`},
		"notes":      {`null`, `"n\nx"`},
		"expires_at": {`null`, fmt.Sprintf("%q", exp.Format(time.RFC3339Nano))},
	}
	if len(e.Changes) != len(wantChanges) {
		t.Errorf("changes = %v, want %d fields", e.Changes, len(wantChanges))
	}
	for f, w := range wantChanges {
		c := e.Changes[f]
		if CompactJSON(t, c.From) != w[0] || CompactJSON(t, c.To) != w[1] {
			t.Errorf("changes[%s] = %s → %s, want %s → %s", f, c.From, c.To, w[0], w[1])
		}
	}
	// Revocation raises the version once and ends editing.
	if err := s.Revoke(ctx, "ed1", at); err != nil {
		t.Fatal(err)
	}
	if err := s.Revoke(ctx, "ed1", at.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if v := mustGet(t, ctx, s, "ed1").Version; v != 3 {
		t.Errorf("version after two revocations = %d, want 3", v)
	}
	if _, err := s.Edit(ctx, "ed1", link.Edit{At: at, Apply: setURL("https://example.com/x")}); !errors.Is(err, link.ErrRevoked) {
		t.Errorf("Edit(revoked) = %v, want ErrRevoked", err)
	}
}

func testEditRefusals(t *testing.T, ctx context.Context, s storeEditor, base time.Time) {
	orig := link.Link{Code: "ed2", LongURL: "https://example.com/keep", CreatedAt: base, Title: "keep"}
	if err := s.Create(ctx, orig); err != nil {
		t.Fatal(err)
	}
	orig.Version = 1
	if _, err := s.Edit(ctx, "nope", link.Edit{At: base, Apply: setURL("https://example.com/x")}); !errors.Is(err, link.ErrNotFound) {
		t.Errorf("Edit(missing) = %v, want ErrNotFound", err)
	}
	if _, err := s.History(ctx, "nope", 0, 10); !errors.Is(err, link.ErrNotFound) {
		t.Errorf("History(missing) = %v, want ErrNotFound", err)
	}
	boom := errors.New("boom")
	for name, e := range map[string]link.Edit{
		"version":    {IfMatch: []int64{2}, Apply: setURL("https://example.com/x")},
		"no version": {IfMatch: []int64{}, Apply: setURL("https://example.com/x")},
		"apply":      {Apply: func(l *link.Link) error { l.LongURL = "https://example.com/x"; return boom }},
		"empty url":  {Apply: setURL("")},
		"bad tags":   {Apply: func(l *link.Link) error { l.Tags = []string{"a b"}; return nil }},
		"code":       {Apply: func(l *link.Link) error { l.Code, l.LongURL = "other", "https://example.com/x"; return nil }},
	} {
		e.At = base
		_, err := s.Edit(ctx, "ed2", e)
		switch {
		case name == "code":
			// The code, creation time and version are not the caller's to set.
			if err != nil {
				t.Errorf("Edit(%s) = %v", name, err)
			}
			if _, err := s.Get(ctx, "other"); !errors.Is(err, link.ErrNotFound) {
				t.Errorf("Edit moved the link to another code: %v", err)
			}
			if _, err := s.Edit(ctx, "ed2", link.Edit{At: base, Apply: setURL(orig.LongURL)}); err != nil {
				t.Fatal(err)
			}
			orig.Version = 3
		case name == "version" || name == "no version":
			if !errors.Is(err, link.ErrVersionMismatch) {
				t.Errorf("Edit(%s) = %v, want ErrVersionMismatch", name, err)
			}
		case name == "apply" && !errors.Is(err, boom), err == nil:
			t.Errorf("Edit(%s) = %v, want an error", name, err)
		}
		AssertLink(t, mustGet(t, ctx, s, "ed2"), orig)
	}
	if h, err := s.History(ctx, "ed2", 0, 10); err != nil || len(h) != 2 {
		t.Errorf("History after refused edits = %d entries, %v, want the 2 that changed something", len(h), err)
	}
}

func testHistoryPages(t *testing.T, ctx context.Context, s storeEditor, base time.Time) {
	// "ab" and "abc" share a prefix: their histories stay apart.
	for _, code := range []string{"ab", "abc"} {
		if err := s.Create(ctx, link.Link{Code: code, LongURL: "https://example.com/0", CreatedAt: base}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i <= 5; i++ {
		for _, code := range []string{"abc", "ab"} {
			if _, err := s.Edit(ctx, code, link.Edit{Key: code, At: base.Add(time.Duration(i) * time.Minute), Apply: setURL(fmt.Sprintf("https://example.com/%s/%d", code, i))}); err != nil {
				t.Fatal(err)
			}
		}
	}
	var versions []int64
	var before int64
	for range 5 {
		page, err := s.History(ctx, "ab", before, 2)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) > 2 {
			t.Fatalf("History(limit 2) = %d entries", len(page))
		}
		for _, e := range page {
			versions = append(versions, e.Version)
			if e.Key != "ab" {
				t.Errorf("entry of ab has key %q: another code's history", e.Key)
			}
			want := fmt.Sprintf(`"https://example.com/ab/%d"`, e.Version-1)
			if got := CompactJSON(t, e.Changes["long_url"].To); got != want {
				t.Errorf("version %d long_url → %s, want %s", e.Version, got, want)
			}
		}
		if len(page) < 2 {
			break
		}
		before = page[len(page)-1].Version
	}
	if fmt.Sprint(versions) != "[6 5 4 3 2]" {
		t.Errorf("history versions over pages = %v, want [6 5 4 3 2] (newest first, each once)", versions)
	}
	first, err := s.History(ctx, "ab", 3, 10)
	if err != nil || len(first) != 1 || CompactJSON(t, first[0].Changes["long_url"].From) != `"https://example.com/0"` {
		t.Errorf("History(before 3) = %+v, %v: want the first edit, from the created destination", first, err)
	}
}

func testConcurrentIfMatch(t *testing.T, ctx context.Context, s storeEditor, base time.Time) {
	if err := s.Create(ctx, link.Link{Code: "race", LongURL: "https://example.com/0", CreatedAt: base}); err != nil {
		t.Fatal(err)
	}
	const n = 50
	for round := int64(1); round <= 3; round++ {
		errs := make([]error, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				<-start
				_, errs[i] = s.Edit(ctx, "race", link.Edit{IfMatch: []int64{round}, At: base, Apply: setURL(fmt.Sprintf("https://example.com/%d/%d", round, i))})
			})
		}
		close(start)
		wg.Wait()
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Fatalf("round %d: edits %d and %d both won", round, winner, i)
			case err == nil:
				winner = i
			case !errors.Is(err, link.ErrVersionMismatch):
				t.Fatalf("round %d: edit %d = %v, want nil or ErrVersionMismatch", round, i, err)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: no edit won", round)
		}
		l := mustGet(t, ctx, s, "race")
		if want := fmt.Sprintf("https://example.com/%d/%d", round, winner); l.LongURL != want || l.Version != round+1 {
			t.Fatalf("round %d: stored %q version %d, want the winner's %q version %d", round, l.LongURL, l.Version, want, round+1)
		}
	}
}

// CompactJSON is raw JSON without insignificant space, for comparing a
// history entry's values.
func CompactJSON(t *testing.T, raw []byte) string {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		t.Fatalf("compacting %q: %v", raw, err)
	}
	return buf.String()
}
