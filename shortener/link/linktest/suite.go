package linktest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// runSuite runs every check, each on a fresh store.
func runSuite(t *testing.T, h Harness) {
	open := h.Open
	// Times as the stores keep them: UTC, microseconds.
	base := time.Date(2026, 3, 14, 15, 9, 26, 535897000, time.UTC)

	ctxFor := func(t *testing.T) context.Context {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		t.Cleanup(cancel)
		return ctx
	}

	for _, c := range coreChecks {
		t.Run(c.name, func(t *testing.T) { c.check(t, ctxFor(t), open(t), base) })
	}
	t.Run("Rules", func(t *testing.T) { s := open(t); testRulesRoundTrip(t, ctxFor(t), s, base) })
	t.Run("Targeting", func(t *testing.T) { s := open(t); testTargetingRoundTrip(t, ctxFor(t), s, base) })
	t.Run("link.ServeCounter", func(t *testing.T) { s := open(t); testServeCounter(t, ctxFor(t), s, base) })
	t.Run("Transactions", func(t *testing.T) { testTxStore(t, ctxFor(t), open(t), base) })
	t.Run("ListsLinks", func(t *testing.T) { s := open(t); testLinkLister(t, ctxFor(t), h, s, base) })
	testEdits(t, open, ctxFor, base)
}

// coreChecks are the checks of Store itself, each on a fresh store.
var coreChecks = []struct {
	name  string
	check func(t *testing.T, ctx context.Context, s link.Store, base time.Time)
}{
	{"Missing", testMissing},
	{"RoundTrip", testRoundTrip},
	{"CreatedAtDefaultsToNow", testCreatedAtDefaultsToNow},
	{"RefusesEmpty", testRefusesEmpty},
	{"Conflict", testConflict},
	{"Revoke", testRevoke},
	{"ConcurrentDistinctCreates", testConcurrentDistinctCreates},
	{"ConcurrentSameCode", testConcurrentSameCode},
	{"NextBlock", testNextBlock},
	{"ConcurrentNextBlock", testConcurrentNextBlock},
	{"Metadata", testMetadataRoundTrip},
	{"ListsCodes", testCodeLister},
}

func testMissing(t *testing.T, ctx context.Context, s link.Store, base time.Time) {
	if l, err := s.Get(ctx, "nope123"); !errors.Is(err, link.ErrNotFound) {
		t.Errorf("Get(missing) = %+v, %v, want ErrNotFound", l, err)
	}
	if err := s.Revoke(ctx, "nope123", base); !errors.Is(err, link.ErrNotFound) {
		t.Errorf("Revoke(missing) = %v, want ErrNotFound", err)
	}
	if _, err := s.Get(ctx, "nope123"); !errors.Is(err, link.ErrNotFound) {
		t.Errorf("Get after Revoke(missing) = %v, want ErrNotFound (Revoke must not create)", err)
	}
}

func testRoundTrip(t *testing.T, ctx context.Context, s link.Store, base time.Time) {
	links := []link.Link{
		{Code: "abc1234", LongURL: "https://example.com/a?b=c&d=e#f", CreatedAt: base},
		{Code: "with-expiry_1", LongURL: "https://exämple.org/päth/ü?q=%20x", CreatedAt: base, ExpiresAt: base.Add(90 * time.Minute)},
		{Code: "born-revoked", LongURL: "http://example.net/", CreatedAt: base, RevokedAt: base.Add(time.Second)},
		{Code: "ABC1234", LongURL: "https://example.com/upper", CreatedAt: base.Add(time.Microsecond)},
	}
	createAndRead(t, ctx, s, links)
	// Codes are case sensitive.
	if _, err := s.Get(ctx, "aBc1234"); !errors.Is(err, link.ErrNotFound) {
		t.Errorf("Get(%q) = %v, want ErrNotFound", "aBc1234", err)
	}
}

func testCreatedAtDefaultsToNow(t *testing.T, ctx context.Context, s link.Store, base time.Time) {
	before := time.Now().Add(-time.Second)
	if err := s.Create(ctx, link.Link{Code: "nodate", LongURL: "https://example.com/"}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, "nodate")
	if err != nil {
		t.Fatal(err)
	}
	if got.CreatedAt.Before(before) || got.CreatedAt.After(time.Now().Add(time.Second)) {
		t.Errorf("CreatedAt = %v, want about now", got.CreatedAt)
	}
}

func testRefusesEmpty(t *testing.T, ctx context.Context, s link.Store, base time.Time) {
	for _, l := range []link.Link{{LongURL: "https://example.com/"}, {Code: "nourl"}} {
		if err := s.Create(ctx, l); err == nil || errors.Is(err, link.ErrCodeTaken) {
			t.Errorf("Create(%+v) = %v, want an error", l, err)
		}
	}
	if _, err := s.Get(ctx, "nourl"); !errors.Is(err, link.ErrNotFound) {
		t.Errorf("Get(nourl) = %v, want ErrNotFound", err)
	}
}

func testConflict(t *testing.T, ctx context.Context, s link.Store, base time.Time) {
	first := link.Link{Code: "taken", LongURL: "https://example.com/first", CreatedAt: base}
	if err := s.Create(ctx, first); err != nil {
		t.Fatal(err)
	}
	second := link.Link{Code: "taken", LongURL: "https://example.com/second", CreatedAt: base.Add(time.Hour), ExpiresAt: base.Add(2 * time.Hour)}
	if err := s.Create(ctx, second); !errors.Is(err, link.ErrCodeTaken) {
		t.Fatalf("Create(taken code) = %v, want ErrCodeTaken", err)
	}
	got, err := s.Get(ctx, "taken")
	if err != nil {
		t.Fatal(err)
	}
	AssertLink(t, got, first)
}

func testRevoke(t *testing.T, ctx context.Context, s link.Store, base time.Time) {
	l := link.Link{Code: "revokeme", LongURL: "https://example.com/r", CreatedAt: base, ExpiresAt: base.Add(time.Hour)}
	if err := s.Create(ctx, l); err != nil {
		t.Fatal(err)
	}
	at := base.Add(10 * time.Minute)
	if err := s.Revoke(ctx, "revokeme", at); err != nil {
		t.Fatalf("Revoke: %v", err)
	}
	// A second revocation succeeds and keeps the first time.
	if err := s.Revoke(ctx, "revokeme", at.Add(time.Minute)); err != nil {
		t.Fatalf("second Revoke: %v", err)
	}
	got, err := s.Get(ctx, "revokeme")
	if err != nil {
		t.Fatal(err)
	}
	l.RevokedAt = at
	AssertLink(t, got, l)
	if !got.Gone(base) {
		t.Errorf("revoked link: Gone = false, want true")
	}
	// A revoked code stays taken.
	err = s.Create(ctx, link.Link{Code: "revokeme", LongURL: "https://example.com/new", CreatedAt: base})
	if !errors.Is(err, link.ErrCodeTaken) {
		t.Errorf("Create(revoked code) = %v, want ErrCodeTaken", err)
	}
	if got, _ := s.Get(ctx, "revokeme"); got.LongURL != l.LongURL {
		t.Errorf("after Create(revoked code): LongURL = %q, want %q", got.LongURL, l.LongURL)
	}
}

func testConcurrentDistinctCreates(t *testing.T, ctx context.Context, s link.Store, base time.Time) {
	const n = 1000
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			errs[i] = s.Create(ctx, link.Link{Code: fmt.Sprintf("c%04d", i), LongURL: fmt.Sprintf("https://example.com/%d", i), CreatedAt: base})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Create(c%04d): %v", i, err)
		}
	}
	for i := range n {
		code := fmt.Sprintf("c%04d", i)
		got, err := s.Get(ctx, code)
		if err != nil {
			t.Fatalf("Get(%q): %v", code, err)
		}
		if want := fmt.Sprintf("https://example.com/%d", i); got.LongURL != want {
			t.Fatalf("Get(%q).LongURL = %q, want %q", code, got.LongURL, want)
		}
	}
}

func testConcurrentSameCode(t *testing.T, ctx context.Context, s link.Store, base time.Time) {
	const n = 200
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			errs[i] = s.Create(ctx, link.Link{Code: "race", LongURL: fmt.Sprintf("https://example.com/%d", i), CreatedAt: base})
		})
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil:
			if winner >= 0 {
				t.Fatalf("Create succeeded for both %d and %d", winner, i)
			}
			winner = i
		case !errors.Is(err, link.ErrCodeTaken):
			t.Fatalf("Create #%d: %v, want nil or ErrCodeTaken", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no Create succeeded")
	}
	got, err := s.Get(ctx, "race")
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("https://example.com/%d", winner); got.LongURL != want {
		t.Errorf("stored LongURL = %q, want the winner's %q", got.LongURL, want)
	}
}

func testNextBlock(t *testing.T, ctx context.Context, s link.Store, base time.Time) {
	first, err := s.NextBlock(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if first != 1 {
		t.Errorf("first NextBlock(10) = %d, want 1", first)
	}
	if next, err := s.NextBlock(ctx, 1); err != nil || next != 11 {
		t.Errorf("NextBlock(1) = %d, %v, want 11", next, err)
	}
	for _, size := range []int64{0, -5} {
		if got, err := s.NextBlock(ctx, size); err == nil {
			t.Errorf("NextBlock(%d) = %d, want an error", size, got)
		}
	}
	if next, err := s.NextBlock(ctx, 1); err != nil || next != 12 {
		t.Errorf("NextBlock(1) after refused sizes = %d, %v, want 12", next, err)
	}
}

func testConcurrentNextBlock(t *testing.T, ctx context.Context, s link.Store, base time.Time) {
	type block struct{ first, size int64 }
	sizes := []int64{1, 7, 1000, 64, 3}
	const workers, each = 100, 4
	var (
		mu     sync.Mutex
		blocks []block
		wg     sync.WaitGroup
	)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				size := sizes[(w+i)%len(sizes)]
				first, err := s.NextBlock(ctx, size)
				if err != nil {
					t.Errorf("NextBlock(%d): %v", size, err)
					return
				}
				mu.Lock()
				blocks = append(blocks, block{first, size})
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	sort.Slice(blocks, func(i, j int) bool { return blocks[i].first < blocks[j].first })
	// The blocks tile [1, total] exactly: no overlap, and (nothing
	// failed) no gap.
	next := int64(1)
	for _, b := range blocks {
		if b.first != next {
			t.Fatalf("block [%d, %d) follows ID %d: want it to start at %d", b.first, b.first+b.size, next-1, next)
		}
		next += b.size
	}
	if len(blocks) != workers*each {
		t.Errorf("%d blocks, want %d", len(blocks), workers*each)
	}
}

// testCodeLister checks CodeLister on an empty store s: the full listing
// in byte order page by page, the creation order, and LastSeq.
func testCodeLister(t *testing.T, ctx context.Context, s link.Store, base time.Time) {
	t.Helper()
	cl, ok := s.(link.CodeLister)
	if !ok {
		t.Fatalf("%T does not implement CodeLister", s)
	}
	if codes, err := cl.ScanCodes(ctx, "", 10); err != nil || len(codes) != 0 {
		t.Errorf("ScanCodes on an empty store = %q, %v, want none", codes, err)
	}
	if last, err := cl.LastSeq(ctx); err != nil || last != 0 {
		t.Errorf("LastSeq on an empty store = %d, %v, want 0", last, err)
	}
	// Created in this order; byte order differs (C collation: '-' < digits
	// < upper case < '_' < lower case).
	created := []string{"zeta", "Alpha", "alpha", "9lives", "a_b", "a-b", "ZZ", "m"}
	for i, code := range created {
		l := link.Link{Code: code, LongURL: "https://example.com/" + code, CreatedAt: base.Add(-time.Duration(i) * time.Hour)}
		if code == "m" {
			l.RevokedAt = base // listed too
		}
		if err := s.Create(ctx, l); err != nil {
			t.Fatalf("Create(%q): %v", code, err)
		}
	}
	if err := s.Create(ctx, link.Link{Code: "zeta", LongURL: "https://example.com/again"}); !errors.Is(err, link.ErrCodeTaken) {
		t.Fatalf("Create(taken) = %v, want ErrCodeTaken", err)
	}
	wantSorted := []string{"9lives", "Alpha", "ZZ", "a-b", "a_b", "alpha", "m", "zeta"}
	var got []string
	after := ""
	for range len(created) + 2 {
		page, err := cl.ScanCodes(ctx, after, 3)
		if err != nil {
			t.Fatalf("ScanCodes(%q, 3): %v", after, err)
		}
		if len(page) > 3 {
			t.Fatalf("ScanCodes(%q, 3) = %d codes", after, len(page))
		}
		got = append(got, page...)
		if len(page) < 3 {
			break
		}
		after = page[len(page)-1]
	}
	if fmt.Sprint(got) != fmt.Sprint(wantSorted) {
		t.Errorf("ScanCodes pages = %q, want %q", got, wantSorted)
	}
	if page, err := cl.ScanCodes(ctx, "a-b", 2); err != nil || fmt.Sprint(page) != "[a_b alpha]" {
		t.Errorf(`ScanCodes("a-b", 2) = %q, %v, want [a_b alpha]`, page, err)
	}

	all, err := cl.CodesSince(ctx, 0, 100)
	if err != nil {
		t.Fatalf("CodesSince(0): %v", err)
	}
	if len(all) != len(created) {
		t.Fatalf("CodesSince(0) = %v, want the %d created codes", all, len(created))
	}
	for i, sc := range all {
		if sc.Code != created[i] {
			t.Errorf("CodesSince(0)[%d] = %q, want %q (creation order)", i, sc.Code, created[i])
		}
		if sc.Seq < 1 || (i > 0 && sc.Seq <= all[i-1].Seq) {
			t.Errorf("CodesSince(0)[%d].Seq = %d after %d, want ascending from 1", i, sc.Seq, all[max(i-1, 0)].Seq)
		}
	}
	page, err := cl.CodesSince(ctx, all[1].Seq, 2)
	if err != nil || len(page) != 2 || page[0] != all[2] || page[1] != all[3] {
		t.Errorf("CodesSince(%d, 2) = %v, %v, want %v", all[1].Seq, page, err, all[2:4])
	}
	last, err := cl.LastSeq(ctx)
	if err != nil || last != all[len(all)-1].Seq {
		t.Errorf("LastSeq = %d, %v, want %d", last, err, all[len(all)-1].Seq)
	}
	if page, err := cl.CodesSince(ctx, last, 10); err != nil || len(page) != 0 {
		t.Errorf("CodesSince(LastSeq) = %v, %v, want none", page, err)
	}
}

func AssertLink(t *testing.T, got, want link.Link) {
	t.Helper()
	if got.Code != want.Code || got.LongURL != want.LongURL ||
		!got.CreatedAt.Equal(want.CreatedAt) || !got.ExpiresAt.Equal(want.ExpiresAt) || !got.RevokedAt.Equal(want.RevokedAt) ||
		got.Title != want.Title || !slices.Equal(got.Tags, want.Tags) || got.Notes != want.Notes {
		t.Errorf("Get(%q) = %+v, want %+v", want.Code, got, want)
	}
	for name, tm := range map[string]time.Time{"CreatedAt": got.CreatedAt, "ExpiresAt": got.ExpiresAt, "RevokedAt": got.RevokedAt} {
		if !tm.IsZero() && tm.Location() != time.UTC {
			t.Errorf("Get(%q).%s is in %v, want UTC", want.Code, name, tm.Location())
		}
	}
}

// testMetadataRoundTrip checks on an empty store that title, tags and notes
// come back as stored (at their bounds, in any script), that no tags read
// back as nil, and that metadata out of bounds is refused with nothing
// stored.
func testMetadataRoundTrip(t *testing.T, ctx context.Context, s link.Store, base time.Time) {
	t.Helper()
	tags20 := make([]string, link.MaxTags)
	for i := range tags20 {
		tags20[i] = fmt.Sprintf("t%02d-", i) + strings.Repeat("x", link.MaxTagLen-4)
	}
	links := []link.Link{
		{Code: "meta-full", LongURL: "https://example.com/m", CreatedAt: base,
			Title: "Spring sale — flyer «QR» 日本語 👍🏽", Tags: []string{"print", "Q2:2026", "a.b_c-d", "Print"},
			Notes: "line one\nline two\r\n\ttabbed, ünïcode"},
		{Code: "meta-bounds", LongURL: "https://example.com/b", CreatedAt: base,
			Title: strings.Repeat("é", link.MaxTitle), Tags: tags20, Notes: strings.Repeat("日", link.MaxNotes)},
		{Code: "meta-title", LongURL: "https://example.com/t", CreatedAt: base, Title: "only a title"},
		{Code: "meta-none", LongURL: "https://example.com/n", CreatedAt: base},
	}
	for i, got := range createAndRead(t, ctx, s, links) {
		if want := links[i]; want.Tags == nil && got.Tags != nil {
			t.Errorf("Get(%q).Tags = %#v, want nil", want.Code, got.Tags)
		}
	}
	if err := s.Create(ctx, link.Link{Code: "meta-empty", LongURL: "https://example.com/e", Tags: []string{}}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(ctx, "meta-empty"); err != nil || got.Tags != nil {
		t.Errorf("Get(meta-empty) = %#v, %v: want Tags nil after storing an empty list", got.Tags, err)
	}
	for name, l := range map[string]link.Link{
		"title":     {Title: strings.Repeat("é", link.MaxTitle+1)},
		"tag count": {Tags: append(slices.Clone(tags20), "one-more")},
		"tag chars": {Tags: []string{"no space"}},
		"notes":     {Notes: strings.Repeat("日", link.MaxNotes+1)},
	} {
		l.Code, l.LongURL = "meta-refused", "https://example.com/r"
		if err := s.Create(ctx, l); err == nil || errors.Is(err, link.ErrCodeTaken) {
			t.Errorf("Create with bad %s = %v, want an error", name, err)
		}
	}
	if _, err := s.Get(ctx, "meta-refused"); !errors.Is(err, link.ErrNotFound) {
		t.Errorf("Get(meta-refused) = %v, want ErrNotFound", err)
	}
}

// createAndRead creates links, then reads each back and checks it equals
// what was created; it returns what Get answered, in order.
func createAndRead(t *testing.T, ctx context.Context, s link.Store, links []link.Link) []link.Link {
	t.Helper()
	for _, l := range links {
		if err := s.Create(ctx, l); err != nil {
			t.Fatalf("Create(%q): %v", l.Code, err)
		}
	}
	got := make([]link.Link, len(links))
	for i, want := range links {
		var err error
		if got[i], err = s.Get(ctx, want.Code); err != nil {
			t.Fatalf("Get(%q): %v", want.Code, err)
		}
		AssertLink(t, got[i], want)
	}
	return got
}
