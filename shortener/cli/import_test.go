package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgekit/caddy-edgekit/shortener/cli"
)

// TestImportSamples imports the sample file of each source into a fresh
// PostgreSQL store of a running Caddy, checks the summary, the refusals
// by line and the links, then imports it again: nothing changes.
func TestImportSamples(t *testing.T) {
	s := startCaddy(t)
	for _, tc := range []struct {
		from, file string
		summary    string   // the summary line
		refused    []string // lines that must be printed
		again      string   // the summary of the second import
		check      map[string]string
	}{
		{"yourls", "yourls.sql", "5 records: created 3, skipped 0, conflicts 0, updated 0, refused 2",
			[]string{"line 22: js refused: long_url scheme 'javascript' is not allowed", "line 28: multi refused: long_url"},
			"5 records: created 0, skipped 3, conflicts 0, updated 0, refused 2",
			map[string]string{"ozh": `title Ozh's blog; "quoted"`, "no-title": "title -"}},
		{"yourls", "yourls.csv", "4 records: created 3, skipped 0, conflicts 0, updated 0, refused 1",
			[]string{"line 5: js refused: long_url scheme 'javascript' is not allowed"},
			"4 records: created 0, skipped 3, conflicts 0, updated 0, refused 1",
			map[string]string{"yourls": "long_url https://yourls.org/"}},
		{"shlink", "shlink.csv", "3 records: created 2, skipped 0, conflicts 0, updated 0, refused 1",
			[]string{"line 4: ftp1 refused: long_url scheme 'ftp' is not allowed"},
			"3 records: created 0, skipped 2, conflicts 0, updated 0, refused 1",
			map[string]string{"Ab3dE": "tags spring-sale mail", "docs": "title Shlink docs"}},
		{"bitly", "bitly.csv", "4 records: created 3, skipped 0, conflicts 0, updated 0, refused 1",
			[]string{`line 4: refused: bitlink: "https://bit.ly/" has no back-half`},
			"4 records: created 0, skipped 3, conflicts 0, updated 0, refused 1",
			map[string]string{"launch-2024": "long_url https://example.com/launch", "3xYzAbc": "tags launch blog"}},
		{"kutt", "kutt.json", "3 records: created 2, skipped 0, conflicts 0, updated 0, refused 1",
			[]string{"item 3: secret refused: password: the link is password-protected in Kutt"},
			"3 records: created 0, skipped 2, conflicts 0, updated 0, refused 1",
			map[string]string{"gone": "status revoked", "k1tt": "title Kutt project"}},
		{"ndjson", "links.ndjson", "3 records: created 3, skipped 0, conflicts 0, updated 0, refused 0", nil,
			"3 records: created 0, skipped 3, conflicts 0, updated 0, refused 0",
			map[string]string{"launch": "max_clicks 100", "old-offer": "status revoked", "spring": "notes Printed on 5,000 flyers. Do not change the destination."}},
		{"csv", "links.csv", "3 records: created 3, skipped 0, conflicts 0, updated 0, refused 0", nil,
			"3 records: created 0, skipped 3, conflicts 0, updated 0, refused 0",
			map[string]string{"old-offer": "title =SUM(A1:A9) old offer", "spring": "tags print campaign:spring-2027"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			s.t = t
			s.load(postgresStore(t))
			file := filepath.Join("testdata", tc.file)
			r := s.run("import", "--from", tc.from, file)
			wantCode := cli.ExitOK
			if len(tc.refused) > 0 {
				wantCode = cli.ExitConflict
			}
			if r.code != wantCode || !strings.Contains(r.stdout, tc.summary+"\n") {
				t.Errorf("import: exit %d, stdout\n%s\nstderr %s\nwant exit %d and %q", r.code, r.stdout, r.stderr, wantCode, tc.summary)
			}
			for _, line := range tc.refused {
				if !strings.Contains(r.stdout, line) {
					t.Errorf("import printed\n%s\nwant a line with %q", r.stdout, line)
				}
			}
			for code, want := range tc.check {
				if out := squash(s.must("get", code)); !strings.Contains(out, want) {
					t.Errorf("get %s printed\n%s\nwant %q", code, out, want)
				}
			}
			if r := s.run("import", "--from", tc.from, file); !strings.Contains(r.stdout, tc.again+"\n") {
				t.Errorf("second import printed\n%s\nwant %q", r.stdout, tc.again)
			}
		})
	}
}

// TestImportDryRunAndOverwrite: --dry-run writes nothing; a code taken
// with another destination is a conflict (exit 4) until --overwrite
// edits it through PATCH, which the link's history shows.
func TestImportDryRunAndOverwrite(t *testing.T) {
	s := startCaddy(t)
	s.load(embeddedStore(t))
	r := s.run("import", "--from", "ndjson", "--dry-run", "testdata/links.ndjson")
	if r.code != 0 || !strings.Contains(r.stdout, "3 records: would create 3, skipped 0") {
		t.Errorf("dry run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if out := s.must("list", "--status", "all"); strings.Count(out, "\n") != 1 {
		t.Errorf("after a dry run the store holds links:\n%s", out)
	}
	s.must("import", "--from", "ndjson", "testdata/links.ndjson")
	moved := filepath.Join(t.TempDir(), "moved.csv")
	if err := os.WriteFile(moved, []byte("keyword,url,title,clicks\nspring,https://example.com/spring-2028,Moved,3\nlaunch,https://example.com/launch,,1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = s.run("import", "--from", "yourls", moved)
	if r.code != cli.ExitConflict || !strings.Contains(r.stdout, "line 2: spring conflict: ") ||
		!strings.Contains(r.stdout, "2 records: created 0, skipped 1, conflicts 1, updated 0") {
		t.Errorf("conflicting import: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = s.run("import", "--from", "yourls", "--overwrite", moved)
	if r.code != 0 || !strings.Contains(r.stdout, "2 records: created 0, skipped 1, conflicts 0, updated 1") {
		t.Errorf("--overwrite: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if out := squash(s.must("get", "spring")); !strings.Contains(out, "long_url https://example.com/spring-2028") || !strings.Contains(out, "title Moved") {
		t.Errorf("after --overwrite get printed\n%s", out)
	}
}
