package cli_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/cli"
)

// roundTripLinks is how many links TestExportImportRoundTrip moves.
const roundTripLinks = 10_000

// writeLinksFile writes n links as an NDJSON import file: titles, tags,
// notes with a line break, rules, expiries, click totals, every 100th
// revoked.
func writeLinksFile(t *testing.T, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "links.ndjson")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	created := time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC)
	for i := range n {
		rec := map[string]any{
			"code": fmt.Sprintf("rt-%05d", i), "long_url": fmt.Sprintf("https://example.com/p/%d?q=%d#frag", i, i*7),
			"created_at": created.Add(time.Duration(i) * time.Second), "clicks": i % 97,
		}
		if i%3 == 0 {
			rec["title"] = fmt.Sprintf("Lien n°%d — “quoted”, =formula", i)
			rec["tags"] = []string{"bulk", fmt.Sprintf("t%d", i%7)}
		}
		if i%5 == 0 {
			rec["notes"] = "first line\nsecond line\twith a tab"
			rec["expires_at"] = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
		}
		if i%11 == 0 {
			rec["redirect_status"], rec["forward_query"] = 307, true
		}
		if i%100 == 0 {
			rec["revoked_at"] = created.Add(time.Duration(i)*time.Second + time.Hour)
		}
		b, _ := json.Marshal(rec)
		w.Write(append(b, '\n'))
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return path
}

// readExport reads an NDJSON export into links by code.
func readExport(t *testing.T, path string) map[string]cli.Link {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	links := map[string]cli.Link{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l cli.Link
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		links[l.Code] = l
	}
	return links
}

// sameLinks compares two exports field by field: everything but the
// short URL; creation times, revocation times and click totals only when
// the import kept them (the server's import mode).
func sameLinks(t *testing.T, a, b map[string]cli.Link, kept bool) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%d links, then %d", len(a), len(b))
	}
	diffs := 0
	for code, la := range a {
		lb, ok := b[code]
		if !ok {
			t.Fatalf("%s is missing after the round trip", code)
		}
		if !kept {
			la.CreatedAt, lb.CreatedAt, la.Clicks, lb.Clicks = time.Time{}, time.Time{}, nil, nil
			if (la.RevokedAt == nil) == (lb.RevokedAt == nil) {
				la.RevokedAt, lb.RevokedAt = nil, nil
			}
		}
		la.ShortURL, lb.ShortURL = "", ""
		if !reflect.DeepEqual(la, lb) && diffs < 5 {
			diffs++
			t.Errorf("%s differs:\n%+v\n%+v", code, la, lb)
		}
	}
}

// importedMode runs an import with --json and answers its summary.
func importedMode(t *testing.T, s *server, file string) map[string]any {
	t.Helper()
	r := s.run("import", "--from", "ndjson", "--json", file)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	var last struct {
		Summary map[string]any `json:"summary"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || r.code != 0 {
		t.Fatalf("import %s: exit %d, %v, stderr %q, last line %q", file, r.code, err, r.stderr, lines[len(lines)-1])
	}
	return last.Summary
}

// TestExportImportRoundTrip (issue 20's acceptance, 10,000 links): a
// file imported into PostgreSQL, exported, imported into a fresh
// embedded store and exported again gives the same links field by
// field; a second import changes nothing; and back into a fresh
// PostgreSQL the same again.
func TestExportImportRoundTrip(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 links: skipped under -short")
	}
	s := startCaddy(t)
	dir := t.TempDir()
	export := func(name string) map[string]cli.Link {
		path := filepath.Join(dir, name)
		if r := s.run("export", "-o", path); r.code != 0 || !strings.Contains(r.stderr, fmt.Sprintf("exported %d links", roundTripLinks)) {
			t.Fatalf("export: exit %d %q", r.code, r.stderr)
		}
		return readExport(t, path)
	}
	s.load(postgresStore(t))
	start := time.Now()
	sum := importedMode(t, s, writeLinksFile(t, roundTripLinks))
	t.Logf("imported %d links into PostgreSQL in %v (mode %v)", roundTripLinks, time.Since(start), sum["mode"])
	kept := sum["mode"] == "import"
	a := export("a.ndjson")

	s.load(embeddedStore(t))
	start = time.Now()
	if sum := importedMode(t, s, filepath.Join(dir, "a.ndjson")); sum["created"] != float64(roundTripLinks) {
		t.Fatalf("import into the embedded store: %v", sum)
	}
	t.Logf("imported the export into the embedded store in %v", time.Since(start))
	b := export("b.ndjson")
	sameLinks(t, a, b, kept)
	start = time.Now()
	if sum := importedMode(t, s, filepath.Join(dir, "a.ndjson")); sum["created"] != float64(0) || sum["skipped"] != float64(roundTripLinks) {
		t.Errorf("second import: %v, want every link skipped", sum)
	}
	t.Logf("second import (a no-op) in %v", time.Since(start))
	sameLinks(t, b, export("b2.ndjson"), true)

	s.load(postgresStore(t))
	if sum := importedMode(t, s, filepath.Join(dir, "b.ndjson")); sum["created"] != float64(roundTripLinks) {
		t.Fatalf("import back into PostgreSQL: %v", sum)
	}
	sameLinks(t, b, export("c.ndjson"), kept)
}
