package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	bolt "go.etcd.io/bbolt"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
	"github.com/edgekit/caddy-edgekit/shortener/clicks"
	"github.com/edgekit/caddy-edgekit/shortener/link"
	"github.com/edgekit/caddy-edgekit/shortener/store"
)

// beforeDomainsLink is one link of testdata/before-domains.json as the
// code before link domains (ab04a2e) read it back right after writing the
// fixtures: Clicks is the all-time total its listing and ClickTotal gave,
// History the number of entries History returned.
type beforeDomainsLink struct {
	Code      string   `json:"code"`
	LongURL   string   `json:"long_url"`
	Title     string   `json:"title"`
	Tags      []string `json:"tags"`
	Notes     string   `json:"notes"`
	ExpiresAt string   `json:"expires_at"`
	MaxClicks int64    `json:"max_clicks"`
	Custom    bool     `json:"custom"`
	Revoked   bool     `json:"revoked"`
	Version   int64    `json:"version"`
	Clicks    int64    `json:"clicks"`
	History   int      `json:"history"`
}

// beforeDomainsStore is what the test asks of a store opened on the
// fixtures.
type beforeDomainsStore interface {
	link.Store
	link.LinkEditor
	link.LinkLister
	link.DomainStore
}

// TestStoreWrittenBeforeDomains opens stores written by the code before
// link domains (testdata/before-domains.db and .sql, made at ab04a2e, with
// the state that code read back in before-domains.json) with today's
// code, which adds migration 023 and the embedded "domains" bucket. Links
// of the default domain keep their plain codes as keys, so every link,
// field, version, click total and history entry must be as before; there
// are no domains, and a domain and a link of it can be created afterwards.
func TestStoreWrittenBeforeDomains(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "before-domains.json"))
	if err != nil {
		t.Fatal(err)
	}
	var fx struct {
		Embedded []beforeDomainsLink `json:"embedded"`
		Postgres []beforeDomainsLink `json:"postgres"`
	}
	if err := json.Unmarshal(raw, &fx); err != nil {
		t.Fatal(err)
	}
	want := map[string][]beforeDomainsLink{"embedded": fx.Embedded, "postgres": fx.Postgres}
	for name, links := range want {
		if len(links) < 6 {
			t.Fatalf("%s: before-domains.json lists %d links", name, len(links))
		}
	}

	t.Run("embedded", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "shortener.db")
		copyFile(t, filepath.Join("testdata", "before-domains.db"), path)
		// The fixture is a store before domains: links, no domains bucket.
		db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		err = db.View(func(tx *bolt.Tx) error {
			if tx.Bucket(store.EmbeddedLinks) == nil || tx.Bucket([]byte("domains")) != nil {
				t.Errorf("before-domains.db: links bucket %v, domains bucket %v; want a links bucket and no domains bucket",
					tx.Bucket(store.EmbeddedLinks) != nil, tx.Bucket([]byte("domains")) != nil)
			}
			return nil
		})
		if err := errors.Join(err, db.Close()); err != nil {
			t.Fatal(err)
		}
		s, err := store.OpenEmbedded(path)
		if err != nil {
			t.Fatalf("opening the store written before domains: %v", err)
		}
		t.Cleanup(func() {
			if err := s.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
		sink, err := store.NewEmbeddedClickSink(s.Db, 0)
		if err != nil {
			t.Fatal(err)
		}
		checkBeforeDomains(t, s, sink, want["embedded"])
	})

	t.Run("postgres", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		dsn := testenv.Postgres(t)
		loadBeforeDomainsDump(t, ctx, dsn)
		pool, err := pgxpool.New(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		s, err := store.OpenPostgres(ctx, pool)
		if err != nil {
			t.Fatalf("opening the database written before domains: %v", err)
		}
		t.Cleanup(func() { s.Close() })
		var latest int
		if err := pool.QueryRow(ctx, "SELECT max(version) FROM shortener_schema_migrations").Scan(&latest); err != nil {
			t.Fatal(err)
		}
		if latest < 23 {
			t.Errorf("after OpenPostgres the latest migration is %d, want 23 or later", latest)
		}
		checkBeforeDomains(t, s, store.NewPostgresClickSink(pool, 0), want["postgres"])
	})
}

// loadBeforeDomainsDump loads testdata/before-domains.sql (pg_dump
// --inserts of a database at migration 022) into the fresh schema of dsn:
// psql's meta-commands (\restrict), the search_path reset and the
// extension statements (testenv installs pg_trgm in public) are left out,
// and the dump's public.shortener_ objects go to the test's schema.
func loadBeforeDomainsDump(t *testing.T, ctx context.Context, dsn string) {
	t.Helper()
	dump, err := os.ReadFile(filepath.Join("testdata", "before-domains.sql"))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var schema string
	if err := conn.QueryRow(ctx, "SELECT current_schema()").Scan(&schema); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(schema, "edgekit_test_") {
		t.Fatalf("current schema %q is not the test's own", schema)
	}
	var kept []string
	for _, line := range strings.Split(string(dump), "\n") {
		switch {
		case strings.HasPrefix(line, `\`),
			strings.HasPrefix(line, "SELECT pg_catalog.set_config('search_path'"),
			strings.HasPrefix(line, "CREATE EXTENSION "),
			strings.HasPrefix(line, "COMMENT ON EXTENSION "):
			continue
		}
		kept = append(kept, line)
	}
	sql := regexp.MustCompile(`\bpublic\.shortener_`).ReplaceAllString(strings.Join(kept, "\n"), schema+".shortener_")
	if strings.Contains(sql, "public.shortener_") {
		t.Fatal("the dump still names public.shortener_ objects")
	}
	// No arguments: the simple protocol, which runs many statements.
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("loading before-domains.sql: %v", err)
	}
	// The load worked: every link, at migration 022, in the test's schema.
	var links, latest int
	if err := conn.QueryRow(ctx, "SELECT (SELECT count(*) FROM shortener_links), (SELECT max(version) FROM shortener_schema_migrations)").Scan(&links, &latest); err != nil {
		t.Fatal(err)
	}
	var domains bool
	if err := conn.QueryRow(ctx, "SELECT to_regclass('shortener_domains') IS NOT NULL").Scan(&domains); err != nil {
		t.Fatal(err)
	}
	if links == 0 || latest != 22 || domains {
		t.Fatalf("loaded dump: %d links, latest migration %d, shortener_domains exists %v; want links, 22, false", links, latest, domains)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}

// checkBeforeDomains compares s, opened on a fixture, with want.
func checkBeforeDomains(t *testing.T, s beforeDomainsStore, sink clicks.Sink, want []beforeDomainsLink) {
	ctx := context.Background()
	for _, w := range want {
		l, err := s.Get(ctx, w.Code)
		if err != nil {
			t.Errorf("Get(%q): %v", w.Code, err)
			continue
		}
		var expires string
		if !l.ExpiresAt.IsZero() {
			expires = l.ExpiresAt.UTC().Format(time.RFC3339Nano)
		}
		got := beforeDomainsLink{Code: l.Code, LongURL: l.LongURL, Title: l.Title, Tags: l.Tags, Notes: l.Notes, ExpiresAt: expires,
			MaxClicks: l.MaxClicks, Custom: l.Custom, Revoked: !l.RevokedAt.IsZero(), Version: l.Version, Clicks: w.Clicks, History: w.History}
		if !sameBeforeDomains(got, w) {
			t.Errorf("Get(%q) = %+v\nwant %+v", w.Code, got, w)
		}
		h, err := s.History(ctx, w.Code, 0, link.MaxHistoryPage)
		if err != nil {
			t.Errorf("History(%q): %v", w.Code, err)
		} else if len(h) != w.History {
			t.Errorf("History(%q): %d entries, want %d", w.Code, len(h), w.History)
		}
		total, err := sink.ClickTotal(ctx, w.Code)
		if err != nil || total != w.Clicks {
			t.Errorf("ClickTotal(%q) = %d, %v; want %d", w.Code, total, err, w.Clicks)
		}
	}

	// The default domain's listing (ListQuery without a domain) has every
	// link, with its click total.
	page, err := s.ListLinks(ctx, link.ListQuery{Status: link.StatusAll, Limit: link.MaxListLimit})
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]int64{}
	for _, l := range page.Links {
		listed[l.Code] = l.Clicks
	}
	if len(listed) != len(want) || page.NextCursor != "" {
		t.Errorf("listing has %d links (next cursor %q), want %d", len(listed), page.NextCursor, len(want))
	}
	for _, w := range want {
		if n, ok := listed[w.Code]; !ok {
			t.Errorf("listing lacks %q", w.Code)
		} else if n != w.Clicks {
			t.Errorf("listing: %q has %d clicks, want %d", w.Code, n, w.Clicks)
		}
	}

	domains, err := s.Domains(ctx)
	if err != nil || len(domains) != 0 {
		t.Fatalf("Domains() = %v, %v; want none", domains, err)
	}

	// Domains work on the old store: a domain, a link of it, and the old
	// links untouched by it.
	now := time.Now()
	if err := s.CreateDomain(ctx, link.Domain{Host: "new.example", CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatalf("CreateDomain: %v", err)
	}
	key := link.DomainKey("new.example", "x")
	if err := s.Create(ctx, link.Link{Code: key, LongURL: "https://new.example/landing", CreatedAt: now}); err != nil {
		t.Fatalf("Create(%q): %v", key, err)
	}
	l, err := s.Get(ctx, key)
	if err != nil || l.LongURL != "https://new.example/landing" || l.Version != 1 {
		t.Errorf("Get(%q) = %+v, %v", key, l, err)
	}
	domains, err = s.Domains(ctx)
	if err != nil || len(domains) != 1 || domains[0].Host != "new.example" {
		t.Errorf("Domains() after CreateDomain = %+v, %v", domains, err)
	}
	if _, err := s.Get(ctx, "x"); err == nil {
		t.Errorf("Get(%q) finds the new domain's link under the default domain", "x")
	}
	for _, w := range want {
		if l, err := s.Get(ctx, w.Code); err != nil || l.Version != w.Version {
			t.Errorf("after the domain: Get(%q) = version %d, %v; want %d", w.Code, l.Version, err, w.Version)
		}
	}
}

// sameBeforeDomains compares two fixture links; nil and empty tags are the same.
func sameBeforeDomains(a, b beforeDomainsLink) bool {
	tagsA, tagsB := a.Tags, b.Tags
	a.Tags, b.Tags = nil, nil
	return a.Code == b.Code && a.LongURL == b.LongURL && a.Title == b.Title && a.Notes == b.Notes && a.ExpiresAt == b.ExpiresAt &&
		a.MaxClicks == b.MaxClicks && a.Custom == b.Custom && a.Revoked == b.Revoked && a.Version == b.Version &&
		slices.Equal(tagsA, tagsB)
}
