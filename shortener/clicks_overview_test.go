package shortener

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/edgekit/caddy-edgekit/shortener/clicks"
	"github.com/edgekit/caddy-edgekit/shortener/store"
)

// A file of an older version (no buckets across links) gets them filled
// from its hourly and daily rollups and referrer rows when the sink opens
// it: the overview and the referrers across links count the old clicks.
func TestEmbeddedAcrossBackfill(t *testing.T) {
	st, err := store.OpenEmbedded(filepath.Join(t.TempDir(), "links.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s, err := store.NewEmbeddedClickSink(st.Db, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	day := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	var clickList []clicks.Click
	for i := range 30 {
		clickList = append(clickList, clicks.Click{Code: []string{"bf1", "bf2"}[i%2], At: day.Add(time.Duration(i) * time.Hour), Referrer: "r.example", Class: clicks.UAClass(i % 3)})
	}
	if _, err := s.ApplyClicks(ctx, []clicks.Batch{{ID: "bf", Clicks: clickList}}); err != nil {
		t.Fatal(err)
	}
	pruneAll(t, s, clicks.ClickCutoffs{Hourly: day.Add(24 * time.Hour)}, 100) // the first day into daily rollups
	before, err := s.ClickOverview(ctx, day, day.Add(48*time.Hour), 10)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Db.Update(func(tx *bbolt.Tx) error {
		for _, b := range [][]byte{store.BucketDayLinks, store.BucketDayDims} {
			if err := tx.DeleteBucket(b); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	s, err = store.NewEmbeddedClickSink(st.Db, 0)
	if err != nil {
		t.Fatal(err)
	}
	after, err := s.ClickOverview(ctx, day, day.Add(48*time.Hour), 10)
	if err != nil {
		t.Fatal(err)
	}
	refs, err := s.ClickBreakdown(ctx, "", clicks.DimReferrer, day, day.Add(48*time.Hour), 10)
	if err != nil {
		t.Fatal(err)
	}
	want := []clicks.LinkClicks{{Code: "bf1", Clicks: 15}, {Code: "bf2", Clicks: 15}}
	if !reflect.DeepEqual(after, before) || after.Total != 30 || !reflect.DeepEqual(after.Links, want) ||
		!reflect.DeepEqual(refs, []clicks.BreakdownEntry{{Value: "r.example", Clicks: 30}}) {
		t.Errorf("after backfill %+v (referrers %v), before %+v, want 30 clicks, links %v", after, refs, before, want)
	}
}
