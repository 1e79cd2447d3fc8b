package shortener

import (
	"bufio"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/clicks"
)

// TestImportWithStatsRoundTrip: an export with stats imported into a fresh
// store of the other kind exports the same lines (links, totals and
// rollups), and gives the same window stats; a second import is a no-op.
func TestImportWithStatsRoundTrip(t *testing.T) {
	for _, pair := range [][2]string{{"embedded", "postgres"}, {"postgres", "embedded"}} {
		t.Run(pair[0]+"_to_"+pair[1], func(t *testing.T) {
			src := newHandler(t, txStores[pair[0]](t), nil)
			dst := newHandler(t, txStores[pair[1]](t), nil)
			now := time.Now().UTC()
			recent := now.Add(-2 * time.Hour).Truncate(time.Hour).Format(time.RFC3339)
			oldDay := now.AddDate(0, 0, -10).Truncate(24 * time.Hour).Format(time.RFC3339)
			seed := []string{
				fmt.Sprintf(`{"code":"st-a","long_url":"https://example.com/a","created_at":"2020-01-01T00:00:00Z","clicks":50,"hourly":[{"hour":%q,"people":3,"bots":1},{"hour":%q,"people":5,"bots":0}]}`, oldDay, recent),
				fmt.Sprintf(`{"code":"st-b","long_url":"https://example.com/b","hourly":[{"hour":%q,"people":0,"bots":2}]}`, recent),
				`{"code":"st-c","long_url":"https://example.com/c","clicks":7}`,
			}
			if status, out, body := postImport(t, src, seed, false); status != http.StatusOK || out.Created != 3 {
				t.Fatalf("seeding = %d %s", status, body)
			}
			exported := exportLines(t, src)
			if !strings.Contains(exported[0], `"clicks":50,"hourly":[{"hour":"`+oldDay+`","people":3,"bots":1},{"hour":"`+recent+`","people":5,"bots":0}]`) {
				t.Fatalf("export line of st-a: %s", exported[0])
			}
			for _, h := range []*Handler{src, dst} {
				if status, out, body := postImport(t, h, exported, false); status != http.StatusOK || out.Refused+out.Conflicts != 0 {
					t.Fatalf("importing the export = %d %s", status, body)
				}
			}
			if again := exportLines(t, dst); strings.Join(again, "\n") != strings.Join(exported, "\n") {
				t.Errorf("%s exports\n%s\nafter importing\n%s", pair[1], strings.Join(again, "\n"), strings.Join(exported, "\n"))
			}
			for _, code := range []string{"st-a", "st-b"} {
				a, b := apiTotal(t, src, code), apiTotal(t, dst, code)
				if a.Total != b.Total || *a.AllTime != *b.AllTime {
					t.Errorf("%s stats: %d %+v in %s, %d %+v in %s", code, a.Total, *a.AllTime, pair[0], b.Total, *b.AllTime, pair[1])
				}
			}
			if st := apiTotal(t, dst, "st-a"); st.Total != 9 || *st.AllTime != (clicks.Totals{Total: 50, People: 8, Bots: 1, Imported: 41}) {
				t.Errorf("st-a in %s: window %d, all_time %+v; want 9 and 50 (8 people, 1 bot, 41 imported)", pair[1], st.Total, *st.AllTime)
			}
			if _, out, _ := postImport(t, dst, exported, false); out.Skipped != 3 {
				t.Errorf("a second import: %+v, want 3 skipped", out)
			}
			if again := exportLines(t, dst); strings.Join(again, "\n") != strings.Join(exported, "\n") {
				t.Errorf("a second import changed the export:\n%s", strings.Join(again, "\n"))
			}
		})
	}
}

// exportLines is the NDJSON export with stats, a line a link.
func exportLines(t *testing.T, h *Handler) []string {
	t.Helper()
	w := serve(t, h, "GET", "/api/links/export?with_stats=1", "", auth()...)
	if w.Code != http.StatusOK {
		t.Fatalf("export = %d %s", w.Code, w.Body)
	}
	var lines []string
	sc := bufio.NewScanner(w.Body)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines
}

// TestImportHourlyRefusals: rollups out of bounds refuse the item, naming
// the field.
func TestImportHourlyRefusals(t *testing.T) {
	h := newHandler(t, openTestEmbedded(t), nil)
	items := []string{
		`{"code":"h1","long_url":"https://example.com/","hourly":[{"hour":"2026-01-01T00:30:00Z","people":1,"bots":0}]}`,
		`{"code":"h2","long_url":"https://example.com/","hourly":[{"hour":"2026-01-01T00:00:00Z","people":1,"bots":0},{"hour":"2026-01-01T00:00:00Z","people":1,"bots":0}]}`,
		`{"code":"h3","long_url":"https://example.com/","hourly":[{"hour":"2026-01-01T00:00:00Z","people":-1,"bots":0}]}`,
		`{"code":"h4","long_url":"https://example.com/","clicks":1,"hourly":[{"hour":"2026-01-01T00:00:00Z","people":1,"bots":1}]}`,
		`{"code":"h5","long_url":"https://example.com/","hourly":[{"hour":"2999-01-01T00:00:00Z","people":1,"bots":0}]}`,
		`{"code":"h6","long_url":"https://example.com/","hourly":[{"hour":"2026-01-01T00:00:00Z","people":1,"bots":0,"uniques":1}]}`,
	}
	want := []string{"hourly", "hourly", "hourly", "clicks", "hourly", "uniques"}
	_, out, body := postImport(t, h, items, false)
	if out.Refused != len(items) {
		t.Fatalf("import = %s, want every item refused", body)
	}
	for i, r := range out.Results {
		if r.Field == nil || *r.Field != want[i] {
			t.Errorf("item %d refused in %v (%s), want %s", i, r.Field, r.Error, want[i])
		}
	}
	if w := serve(t, h, "GET", "/api/links/export?with_stats=1&format=csv", "", auth()...); w.Code != http.StatusBadRequest {
		t.Errorf("with_stats with csv = %d, want 400", w.Code)
	}
	if w := serve(t, h, "GET", "/api/links/export?with_stats=yes", "", auth()...); w.Code != http.StatusBadRequest {
		t.Errorf("with_stats=yes = %d, want 400", w.Code)
	}
}
