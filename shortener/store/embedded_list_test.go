package store

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// TestEmbeddedCreatedIndexBackfill: a file written before the creation
// index existed gets it when opened, and lists as one written with it.
func TestEmbeddedCreatedIndexBackfill(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	s, err := OpenEmbedded(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	want := []string{"c-new", "b-mid", "a-tie", "z-tie", "y-old"}
	for i, code := range want {
		at := base.Add(-time.Duration(i) * time.Hour)
		if code == "z-tie" {
			at = base.Add(-2 * time.Hour) // same time as a-tie: code breaks the tie
		}
		if err := s.Create(ctx, link.Link{Code: code, LongURL: "https://example.com/" + code, CreatedAt: at}); err != nil {
			t.Fatal(err)
		}
	}
	want[2], want[3] = "z-tie", "a-tie" // -created: ties by code, descending
	if err := s.Db.Update(func(tx *bolt.Tx) error { return tx.DeleteBucket(embeddedCreated) }); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = OpenEmbedded(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	page, err := s.ListLinks(ctx, link.ListQuery{Status: link.StatusAll, Now: base})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range page.Links {
		got = append(got, l.Code)
	}
	if !slices.Equal(got, want) {
		t.Errorf("after reopening = %q, want %q", got, want)
	}
}
