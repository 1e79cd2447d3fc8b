package cli_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/cli"
)

// statsClicks is how many redirects each link of TestExportWithStatsMove
// gets from a browser (people) and from curl (bots).
var statsClicks = map[string][2]int{"ws-a": {5, 2}, "ws-b": {1, 0}, "ws-c": {0, 3}, "ws-d": {0, 0}}

// fastClicks makes the click writer flush every 100ms, so the test waits
// for its totals in a fraction of a second.
const fastClicks = "\n\t\tclicks_batch 50 100ms"

// hourPoint is one bucket of a stats timeseries, as it must survive a
// move: unique visitors never move (docs/cli.md), so they are left out.
type hourPoint struct {
	Start                string
	Clicks, People, Bots int64
}

// linkStats is what a move with --with-stats keeps of a link's clicks.
type linkStats struct {
	Clicks, Total, AllTime int64
	Hours                  []hourPoint
}

// TestExportWithStatsMove (issue 20: export --with-stats then import
// --from ndjson is the move between stores): links with real clicks on
// the embedded store are exported with their rollups, imported into
// PostgreSQL and back into a fresh embedded store; each time the click
// totals and the hourly timeseries are the same field by field, and a
// second import skips every link.
func TestExportWithStatsMove(t *testing.T) {
	s := startCaddy(t)
	s.load(embeddedStore(t) + fastClicks)
	codes := make([]string, 0, len(statsClicks))
	for code, n := range statsClicks {
		codes = append(codes, code)
		s.must("create", "https://example.com/"+code, "--code", code, "--title", "stats "+code)
		redirect(t, s, code, "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0", n[0])
		redirect(t, s, code, "curl/8.5.0", n[1])
	}
	from := time.Now().UTC().Truncate(time.Hour).Add(-time.Hour)
	before := map[string]linkStats{}
	for _, code := range codes {
		before[code] = waitClicks(t, s, code, from)
		var people, bots int64
		for _, h := range before[code].Hours {
			people, bots = people+h.People, bots+h.Bots
		}
		if n, st := statsClicks[code], before[code]; st.Clicks != int64(n[0]+n[1]) || st.Total != st.Clicks || people != int64(n[0]) || bots != int64(n[1]) {
			t.Fatalf("%s: %+v (people %d, bots %d), want %d people and %d bots", code, st, people, bots, n[0], n[1])
		}
	}
	dir := t.TempDir()
	a := exportWithStats(t, s, filepath.Join(dir, "a.ndjson"), len(codes))
	file := a // into PostgreSQL the embedded store's export, back its own
	for _, target := range []struct{ name, store string }{{"postgres", postgresStore(t)}, {"embedded", embeddedStore(t)}} {
		start := time.Now()
		s.load(target.store + fastClicks)
		if sum := importedMode(t, s, file); sum["created"] != float64(len(codes)) || sum["mode"] != "import" {
			t.Fatalf("import into %s: %v", target.name, sum)
		}
		for _, code := range codes {
			if got := linkStatsOf(t, s, code, from); !reflect.DeepEqual(got, before[code]) {
				t.Errorf("%s on %s: %+v, want %+v as before the move", code, target.name, got, before[code])
			}
		}
		if sum := importedMode(t, s, file); sum["created"] != float64(0) || sum["skipped"] != float64(len(codes)) {
			t.Errorf("second import into %s: %v, want every link skipped", target.name, sum)
		}
		b := exportWithStats(t, s, filepath.Join(dir, target.name+".ndjson"), len(codes))
		sameHourly(t, a, b)
		sameLinks(t, readExport(t, a), readExport(t, b), true)
		file = b
		t.Logf("%s: imported, compared, imported again and exported in %v", target.name, time.Since(start))
	}
}

// redirect follows the short link n times with the given user agent.
func redirect(t *testing.T, s *server, code, ua string, n int) {
	t.Helper()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for range n {
		req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://localhost:%d/%s", s.port, code), nil)
		req.Header.Set("User-Agent", ua)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusFound {
			t.Fatalf("GET /%s = %d, want 302", code, resp.StatusCode)
		}
	}
}

// waitClicks polls the link's stats until its click total stops growing
// and equals its hourly sum (the writer flushed every click).
func waitClicks(t *testing.T, s *server, code string, from time.Time) linkStats {
	t.Helper()
	want := int64(statsClicks[code][0] + statsClicks[code][1])
	deadline := time.Now().Add(15 * time.Second)
	for {
		st := linkStatsOf(t, s, code, from)
		if st.Clicks == want && st.Total == want || time.Now().After(deadline) {
			return st
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// linkStatsOf reads the link's click total (get) and its hourly
// timeseries over three hours from from (stats).
func linkStatsOf(t *testing.T, s *server, code string, from time.Time) linkStats {
	t.Helper()
	var l cli.Link
	if err := json.Unmarshal([]byte(s.must("get", code, "--json")), &l); err != nil || l.Clicks == nil {
		t.Fatalf("get %s --json: %v, clicks %v", code, err, l.Clicks)
	}
	var st struct {
		Total   int64 `json:"total"`
		AllTime struct {
			Total int64 `json:"total"`
		} `json:"all_time"`
		Timeseries []hourPoint `json:"timeseries"`
	}
	out := s.must("stats", code, "--json", "--granularity", "hour",
		"--from", from.Format(time.RFC3339), "--to", from.Add(3*time.Hour).Format(time.RFC3339))
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("stats %s --json: %v in %q", code, err, out)
	}
	return linkStats{Clicks: *l.Clicks, Total: st.Total, AllTime: st.AllTime.Total, Hours: st.Timeseries}
}

// exportWithStats runs export --with-stats to path and checks its count.
func exportWithStats(t *testing.T, s *server, path string, n int) string {
	t.Helper()
	if r := s.run("export", "--with-stats", "-o", path); r.code != 0 || !strings.Contains(r.stderr, fmt.Sprintf("exported %d links", n)) {
		t.Fatalf("export --with-stats: exit %d %q", r.code, r.stderr)
	}
	return path
}

// sameHourly compares the "hourly" rollups of two exports link by link.
func sameHourly(t *testing.T, a, b string) {
	t.Helper()
	ha, hb := hourlyOf(t, a), hourlyOf(t, b)
	if !reflect.DeepEqual(ha, hb) {
		t.Errorf("hourly rollups differ:\n%s: %v\n%s: %v", a, ha, b, hb)
	}
	for code, n := range statsClicks {
		if n[0]+n[1] > 0 && ha[code] == "" {
			t.Errorf("%s: %s has no hourly rollups for %d clicks", code, a, n[0]+n[1])
		}
	}
}

// hourlyOf reads each link's "hourly" from an export, as compact JSON.
func hourlyOf(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l struct {
			Code   string          `json:"code"`
			Hourly json.RawMessage `json:"hourly"`
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(l.Hourly) > 0 && string(l.Hourly) != "null" && string(l.Hourly) != "[]" {
			out[l.Code] = string(l.Hourly)
		}
	}
	return out
}
