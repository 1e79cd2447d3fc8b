package shortener

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.etcd.io/bbolt"

	"github.com/edgekit/caddy-edgekit/internal/clientip"
	"github.com/edgekit/caddy-edgekit/internal/testenv"
	"github.com/edgekit/caddy-edgekit/shortener/clicks"
	"github.com/edgekit/caddy-edgekit/shortener/link"
	"github.com/edgekit/caddy-edgekit/shortener/store"
)

// FuzzClickRecord feeds hostile paths, Referer and User-Agent values to
// the classification and the stream encoding. Properties: a stored host is
// at most MaxReferrerHost bytes of host characters; a click Record accepts
// is held for at most MaxHeldSize bytes and, derived, keeps no address or
// user agent, encodes within its counted size (at most MaxClickSize) and
// decodes to itself; a click Record refuses is one whose encoding could not come
// back; decoding any string never yields an unbounded click.
func FuzzClickRecord(f *testing.F) {
	f.Add("abc1234", "https://News.Example.com:8443/a?b", "Mozilla/5.0", int64(1764547200000))
	f.Add(strings.Repeat("x", 64), "http://"+strings.Repeat("a", 300)+"/", "", int64(-1))
	f.Add("a\tb", "http://ex\tample/", "curl/8", int64(0))
	f.Add("Q9", "http://[::1]:80/", "Googlebot", int64(1<<62))
	deriver := &clicks.Recorder{Ua: clicks.NewUAParser()}
	f.Fuzz(func(t *testing.T, code, ref, ua string, ms int64) {
		r := httptest.NewRequest("GET", "/", nil)
		r.URL.Path = "/" + strings.Repeat("p", int(uint8(len(ua)))) + "/" + code
		r.Header["Referer"] = []string{ref}
		r.Header["User-Agent"] = []string{ua}
		c, ok := clicks.ClassifyRequest(r, clientip.Addr(r), code, time.UnixMilli(ms).UTC())
		if !ok {
			t.Fatal("a GET without prefetch headers was not counted")
		}
		if len(c.Referrer) > clicks.MaxReferrerHost || !clicks.ValidReferrerHost(c.Referrer) {
			t.Fatalf("ReferrerHost(%q) = %q: not a bounded host", ref, c.Referrer)
		}
		size := clicks.ClickSize(c)
		if size < 0 {
			if link.ValidLookupCode(code) {
				t.Fatalf("clickSize refused a click with a valid code: %+v", c)
			}
			return // Record drops it as invalid
		}
		if size > clicks.MaxHeldSize {
			t.Fatalf("clickSize = %d > %d", size, clicks.MaxHeldSize)
		}
		deriver.Derive(&c)
		if c.Addr.IsValid() || c.UA != "" || c.Device == "" || clicks.ClickSize(c) < 0 {
			t.Fatalf("derive kept the address or user agent: %+v", c)
		}
		enc := clicks.EncodeClicks([]clicks.Click{c})
		if w := clicks.WireBytes(c); int64(len(enc)) > w || w > clicks.MaxClickSize {
			t.Fatalf("encoding of %+v is %d bytes, counted %d (max %d)", c, len(enc), w, clicks.MaxClickSize)
		}
		got, err := clicks.DecodeClicks(enc)
		if err != nil || len(got) != 1 || !reflect.DeepEqual(got[0], c) {
			t.Fatalf("decode(encode(%+v)) = %+v, %v", c, got, err)
		}
		if clickList, err := clicks.DecodeClicks(ref + "\n" + ua); err == nil {
			for _, d := range clickList {
				if clicks.ClickSize(d) < 0 {
					t.Fatalf("decodeClicks let through an unbounded click %+v", d)
				}
			}
		}
	})
}

// The stats API shows the link's all-time totals next to the window's.
func TestClicksStatsAPIAllTime(t *testing.T) {
	st, err := store.OpenEmbedded(filepath.Join(t.TempDir(), "links.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	h := newHandler(t, st, func(h *Handler) { h.ClicksInterval = caddy.Duration(10 * time.Millisecond) })
	sink, err := h.clickSink()
	if err != nil {
		t.Fatal(err)
	}
	code := create(t, h, `{"long_url":"https://example.com/x"}`).Code
	for _, ua := range []string{"Mozilla/5.0", "Mozilla/5.0", "curl/8"} {
		if w := serve(t, h, "GET", "/"+code, "", "User-Agent", ua); w.Code != http.StatusFound {
			t.Fatalf("redirect = %d", w.Code)
		}
	}
	waitCodeTotal(t, sink, code, 3)
	var out struct {
		Total   int64          `json:"total"`
		AllTime *clicks.Totals `json:"all_time"`
	}
	getJSON(t, h, "/api/links/"+code+"/stats", http.StatusOK, &out)
	if out.Total != 3 || out.AllTime == nil || *out.AllTime != (clicks.Totals{Total: 3, People: 2, Bots: 1}) {
		t.Errorf("stats = total %d, all_time %+v; want 3 and {3 2 1}", out.Total, out.AllTime)
	}
}

// Migration 003 fills the totals and the referrer day counts from the
// rollups written before it, and from then on totals follow every write.
func TestClickMigrationBackfillPostgres(t *testing.T) {
	dsn := testenv.Postgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pool := testClickPool(t, dsn) // migrated to the end; roll 003 (and 011, 016 on its table) back by hand
	for _, q := range []string{
		`DROP TABLE shortener_link_click_totals, shortener_link_referrer_days`,
		`DROP TRIGGER shortener_link_click_totals_count ON shortener_link_clicks_hourly`,
		`DROP FUNCTION shortener_link_click_totals_count()`,
		`DROP INDEX shortener_link_clicks_hourly_hour, shortener_link_referrers_daily_day`,
		`DELETE FROM shortener_schema_migrations WHERE version IN (3, 11, 16)`, // 011 and 016 index the totals dropped
		`INSERT INTO shortener_link_clicks_hourly VALUES ('a', '2026-01-01 10:00Z', 5, 1), ('a', '2026-01-02 10:00Z', 2, 0), ('b', '2026-01-01 10:00Z', 0, 4)`,
		`INSERT INTO shortener_link_referrers_daily VALUES ('a', '2026-01-01', 'x.example', 3), ('a', '2026-01-01', 'y.example', 1),
			('a', '2026-01-01', 'other', 2), ('b', '2026-01-01', 'x.example', 4)`,
	} {
		if _, err := pool.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if _, err := store.OpenPostgres(ctx, pool); err != nil {
		t.Fatal(err)
	}
	s := store.NewPostgresClickSink(pool, 0)
	for code, want := range map[string]int64{"a": 8, "b": 4, "none": 0} {
		if n, err := s.ClickTotal(ctx, code); err != nil || n != want {
			t.Errorf("ClickTotal(%s) = %d, %v; want %d", code, n, err, want)
		}
	}
	var hosts int
	if err := pool.QueryRow(ctx, `SELECT hosts FROM shortener_link_referrer_days WHERE code = 'a' AND day = '2026-01-01'`).Scan(&hosts); err != nil || hosts != 2 {
		t.Errorf("referrer day a/2026-01-01 = %d hosts, %v; want 2 (other not counted)", hosts, err)
	}
	// A writer of an older version (no totals in its transaction) still
	// moves the totals: the trigger keeps them.
	if _, err := pool.Exec(ctx, `INSERT INTO shortener_link_clicks_hourly AS h VALUES ('a', '2026-01-02 10:00Z', 1, 1)
		ON CONFLICT (code, hour) DO UPDATE SET people = h.people + excluded.people, bots = h.bots + excluded.bots`); err != nil {
		t.Fatal(err)
	}
	if n, err := s.ClickTotal(ctx, "a"); err != nil || n != 10 {
		t.Errorf("ClickTotal(a) after an old-style write = %d, %v; want 10", n, err)
	}
}

// The embedded store fills its new buckets from a file of an older version.
func TestClickMigrationBackfillEmbedded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "links.db")
	st, err := store.OpenEmbedded(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	s, err := store.NewEmbeddedClickSink(st.Db, 2)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	day := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var clickList []clicks.Click
	for i := range 5 {
		clickList = append(clickList, clicks.Click{Code: "old", At: day.Add(time.Duration(i) * time.Hour), Referrer: fmt.Sprintf("h%d.example", i%2), Class: clicks.UAClass(i % 2)})
	}
	if _, err := s.ApplyClicks(ctx, []clicks.Batch{{ID: "1", Clicks: clickList}}); err != nil {
		t.Fatal(err)
	}
	if err := st.Db.Update(func(tx *bbolt.Tx) error { // a file written before the bounds
		if err := tx.DeleteBucket(store.BucketClickTotals); err != nil {
			return err
		}
		return tx.DeleteBucket(store.BucketReferrerDays)
	}); err != nil {
		t.Fatal(err)
	}
	s, err = store.NewEmbeddedClickSink(st.Db, 2)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := s.ClickTotal(ctx, "old"); err != nil || n != 5 {
		t.Errorf("ClickTotal after backfill = %d, %v; want 5", n, err)
	}
	// The day already holds 2 hosts, the cap: a third goes to other.
	if _, err := s.ApplyClicks(ctx, []clicks.Batch{{ID: "2", Clicks: []clicks.Click{{Code: "old", At: day, Referrer: "new.example"}}}}); err != nil {
		t.Fatal(err)
	}
	stats, err := s.ClickStats(ctx, "old", day, day.Add(24*time.Hour))
	if named, other := splitOther(stats.Referrers); len(named) != 2 || other != 1 {
		t.Errorf("referrers after backfill = %+v, %v; want 2 named and other 1", stats.Referrers, err)
	}
}
