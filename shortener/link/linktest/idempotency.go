package linktest

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// testTxStore checks TxStore on an empty store: Insert and Reusable, the
// Idempotency-Key record (replay, another body, 5xx and errors not
// recorded, expiry), and concurrent duplicates creating one link.
func testTxStore(t *testing.T, ctx context.Context, s link.Store, base time.Time) {
	ts, ok := s.(link.TxStore)
	if !ok {
		t.Fatalf("%T does not implement TxStore", s)
	}
	t.Run("Insert", func(t *testing.T) { testTxInsert(t, ctx, s, ts, base) })
	t.Run("Reusable", func(t *testing.T) { testTxReusable(t, ctx, s, ts, base) })
	t.Run("Idempotency", func(t *testing.T) { testTxIdempotency(t, ctx, s, ts, base) })
	t.Run("ConcurrentClaims", func(t *testing.T) { testTxConcurrentClaims(t, ctx, s, ts, base) })
}

// createAnswer is a CreateTx function inserting links and answering with
// status and their codes.
func createAnswer(status int, links ...link.Link) func(context.Context, link.LinkTx) (link.IdemAnswer, error) {
	return func(ctx context.Context, tx link.LinkTx) (link.IdemAnswer, error) {
		stored, err := tx.Insert(ctx, links)
		if err != nil {
			return link.IdemAnswer{}, err
		}
		return link.IdemAnswer{Status: status, Body: fmt.Appendf(nil, "%v %v", links, stored)}, nil
	}
}

func testTxInsert(t *testing.T, ctx context.Context, s link.Store, ts link.TxStore, base time.Time) {
	if err := s.Create(ctx, link.Link{Code: "tx-taken", LongURL: "https://example.com/taken", CreatedAt: base, Custom: true}); err != nil {
		t.Fatal(err)
	}
	links := []link.Link{
		{Code: "tx-b", LongURL: "https://example.com/b", CreatedAt: base, Title: "B", Tags: []string{"x"}},
		{Code: "tx-taken", LongURL: "https://example.com/other", CreatedAt: base},
		{Code: "tx-a", LongURL: "https://example.com/a", CreatedAt: base, ExpiresAt: base.Add(time.Hour), Custom: true},
		{Code: "tx-b", LongURL: "https://example.com/b2", CreatedAt: base}, // same code as the first
	}
	var stored []bool
	_, _, err := ts.CreateTx(ctx, nil, base, func(ctx context.Context, tx link.LinkTx) (link.IdemAnswer, error) {
		var err error
		stored, err = tx.Insert(ctx, links)
		return link.IdemAnswer{Status: 201}, err
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []bool{true, false, true, false}; !slices.Equal(stored, want) {
		t.Errorf("Insert stored %v, want %v", stored, want)
	}
	for _, i := range []int{0, 2} {
		got, err := s.Get(ctx, links[i].Code)
		if err != nil {
			t.Fatal(err)
		}
		AssertLink(t, got, links[i])
		if got.Custom != links[i].Custom {
			t.Errorf("Get(%q).Custom = %v, want %v", links[i].Code, got.Custom, links[i].Custom)
		}
	}
	if got, _ := s.Get(ctx, "tx-taken"); got.LongURL != "https://example.com/taken" || !got.Custom {
		t.Errorf("taken code: %+v, want it unchanged", got)
	}
	// A 5xx answer or an error rolls the inserts back.
	for _, fn := range []func(context.Context, link.LinkTx) (link.IdemAnswer, error){
		createAnswer(503, link.Link{Code: "tx-rolled", LongURL: "https://example.com/r", CreatedAt: base}),
		func(ctx context.Context, tx link.LinkTx) (link.IdemAnswer, error) {
			_, err := createAnswer(201, link.Link{Code: "tx-rolled", LongURL: "https://example.com/r", CreatedAt: base})(ctx, tx)
			return link.IdemAnswer{}, errors.Join(err, errors.New("boom"))
		},
	} {
		_, _, _ = ts.CreateTx(ctx, nil, base, fn)
		if _, err := s.Get(ctx, "tx-rolled"); !errors.Is(err, link.ErrNotFound) {
			t.Errorf("after a rolled-back CreateTx: Get = %v, want ErrNotFound", err)
		}
	}
}

func testTxReusable(t *testing.T, ctx context.Context, s link.Store, ts link.TxStore, base time.Time) {
	now := base.Add(time.Minute)
	u := "https://example.com/reuse"
	exp := base.Add(48 * time.Hour)
	for _, l := range []link.Link{
		{Code: "r-custom", LongURL: u, CreatedAt: base, Custom: true},
		{Code: "r-old", LongURL: u, CreatedAt: base, RevokedAt: base},
		{Code: "r-expired", LongURL: u, CreatedAt: base, ExpiresAt: now},
		{Code: "r-plain2", LongURL: u, CreatedAt: base.Add(time.Second)},
		{Code: "r-plain1", LongURL: u, CreatedAt: base},
		{Code: "r-exp", LongURL: u, CreatedAt: base, ExpiresAt: exp},
	} {
		if err := s.Create(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	want := []link.Link{
		{LongURL: u},
		{LongURL: u, ExpiresAt: exp},
		{LongURL: u, ExpiresAt: exp.Add(time.Microsecond)},
		{LongURL: u, ExpiresAt: now},
		{LongURL: u + "/other"},
	}
	var found []link.Link
	_, _, err := ts.CreateTx(ctx, nil, now, func(ctx context.Context, tx link.LinkTx) (link.IdemAnswer, error) {
		var err error
		found, err = tx.Reusable(ctx, want, now)
		return link.IdemAnswer{Status: 200}, err
	})
	if err != nil {
		t.Fatal(err)
	}
	codes := make([]string, len(found))
	for i, l := range found {
		codes[i] = l.Code
	}
	// The oldest match; custom, revoked and expired links never; expiry
	// compared to the microsecond.
	if w := []string{"r-plain1", "r-exp", "", "", ""}; !slices.Equal(codes, w) {
		t.Errorf("Reusable = %q, want %q", codes, w)
	}
}

func testTxIdempotency(t *testing.T, ctx context.Context, s link.Store, ts link.TxStore, base time.Time) {
	body := sha256.Sum256([]byte(`{"long_url":"https://example.com/i"}`))
	claim := &link.IdemClaim{Scope: "0123456789abcdef", Key: "key-1", BodySHA256: body}
	l := link.Link{Code: "idem-1", LongURL: "https://example.com/i", CreatedAt: base}
	ans, replayed, err := ts.CreateTx(ctx, claim, base, createAnswer(http.StatusCreated, l))
	if err != nil || replayed || ans.Status != 201 {
		t.Fatalf("first CreateTx = %d %v %v, want 201 not replayed", ans.Status, replayed, err)
	}
	first := ans
	// Replayed without running fn, also just before the TTL ends.
	for _, at := range []time.Time{base.Add(time.Second), base.Add(link.IdemTTL - time.Second)} {
		ans, replayed, err = ts.CreateTx(ctx, claim, at, func(context.Context, link.LinkTx) (link.IdemAnswer, error) {
			t.Error("fn ran for a recorded key")
			return link.IdemAnswer{}, nil
		})
		if err != nil || !replayed || ans.Status != first.Status || string(ans.Body) != string(first.Body) {
			t.Errorf("replay at %v = %d %q %v %v, want %d %q replayed", at, ans.Status, ans.Body, replayed, err, first.Status, first.Body)
		}
	}
	if d, a, found, err := ts.IdemLookup(ctx, claim.Scope, claim.Key, base.Add(time.Hour)); err != nil || !found || d != body || string(a.Body) != string(first.Body) {
		t.Errorf("IdemLookup = %v %v %v, want the record", a, found, err)
	}
	// Another body, or another scope with the same key.
	other := *claim
	other.BodySHA256[0] ^= 1
	if _, _, err := ts.CreateTx(ctx, &other, base.Add(time.Second), createAnswer(201)); !errors.Is(err, link.ErrIdemMismatch) {
		t.Errorf("other body: err = %v, want ErrIdemMismatch", err)
	}
	scoped := *claim
	scoped.Scope = "fedcba9876543210"
	if _, replayed, err := ts.CreateTx(ctx, &scoped, base.Add(time.Second), createAnswer(201)); err != nil || replayed {
		t.Errorf("other scope: replayed %v, err %v; want a fresh create", replayed, err)
	}
	// After the TTL the key is free again.
	after := base.Add(link.IdemTTL + time.Second)
	if _, _, found, _ := ts.IdemLookup(ctx, claim.Scope, claim.Key, after); found {
		t.Errorf("IdemLookup after the TTL found the record")
	}
	l2 := link.Link{Code: "idem-2", LongURL: "https://example.com/i", CreatedAt: after}
	if ans, replayed, err := ts.CreateTx(ctx, &other, after, createAnswer(201, l2)); err != nil || replayed || ans.Status != 201 {
		t.Errorf("CreateTx after the TTL = %d %v %v, want a fresh 201", ans.Status, replayed, err)
	}
	testTxNotRecorded(t, ctx, s, ts, base)
}

// testTxNotRecorded: a 5xx answer and an error leave no record.
func testTxNotRecorded(t *testing.T, ctx context.Context, s link.Store, ts link.TxStore, base time.Time) {
	claim := &link.IdemClaim{Scope: "0123456789abcdef", Key: "key-5xx", BodySHA256: sha256.Sum256(nil)}
	l := link.Link{Code: "idem-5xx", LongURL: "https://example.com/5", CreatedAt: base}
	if _, _, err := ts.CreateTx(ctx, claim, base, createAnswer(http.StatusServiceUnavailable, l)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ts.CreateTx(ctx, claim, base, func(context.Context, link.LinkTx) (link.IdemAnswer, error) {
		return link.IdemAnswer{}, errors.New("store failed")
	}); err == nil {
		t.Errorf("CreateTx: fn's error was not returned")
	}
	if _, _, found, err := ts.IdemLookup(ctx, claim.Scope, claim.Key, base); found || err != nil {
		t.Errorf("IdemLookup after 5xx = %v %v, want nothing recorded", found, err)
	}
	if _, err := s.Get(ctx, l.Code); !errors.Is(err, link.ErrNotFound) {
		t.Errorf("Get after 5xx = %v, want ErrNotFound", err)
	}
	ans, replayed, err := ts.CreateTx(ctx, claim, base, createAnswer(201, l))
	if err != nil || replayed || ans.Status != 201 {
		t.Errorf("retry after 5xx = %d %v %v, want a fresh 201", ans.Status, replayed, err)
	}
}

// testTxConcurrentClaims: 50 concurrent CreateTx with one claim run fn
// once; the others replay its answer.
func testTxConcurrentClaims(t *testing.T, ctx context.Context, s link.Store, ts link.TxStore, base time.Time) {
	claim := &link.IdemClaim{Scope: "0123456789abcdef", Key: "concurrent", BodySHA256: sha256.Sum256([]byte("x"))}
	const n = 50
	answers := make([]link.IdemAnswer, n)
	replays := make([]bool, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			l := link.Link{Code: fmt.Sprintf("cc-%02d", i), LongURL: "https://example.com/c", CreatedAt: base}
			answers[i], replays[i], errs[i] = ts.CreateTx(ctx, claim, base, createAnswer(201, l))
		})
	}
	wg.Wait()
	fresh := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("CreateTx #%d: %v", i, errs[i])
		}
		if !replays[i] {
			fresh++
		}
		if answers[i].Status != answers[0].Status || string(answers[i].Body) != string(answers[0].Body) {
			t.Errorf("answer #%d = %d %q, want %d %q", i, answers[i].Status, answers[i].Body, answers[0].Status, answers[0].Body)
		}
	}
	created := 0
	for i := range n {
		if _, err := s.Get(ctx, fmt.Sprintf("cc-%02d", i)); err == nil {
			created++
		}
	}
	if fresh != 1 || created != 1 {
		t.Errorf("%d fresh answers and %d links created, want 1 and 1", fresh, created)
	}
}
