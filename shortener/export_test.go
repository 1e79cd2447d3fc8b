package shortener

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

func TestAPIExport(t *testing.T) {
	for name, open := range listStores {
		t.Run(name, func(t *testing.T) {
			h := newHandler(t, open(t), withReadKey)
			var want []link.Response
			for _, body := range []string{
				`{"long_url":"https://example.com/a","title":"=HYPERLINK(\"http://evil\")","tags":["x","y:z"],"notes":"@SUM(1)\n'quoted"}`,
				`{"long_url":"https://example.com/b","code":"-starts-with-dash","title":"+1 ' quote"}`,
				`{"long_url":"https://example.com/c","code":"Export","notes":"\tindent"}`,
			} {
				want = append(want, create(t, h, body))
			}
			// Codes are case sensitive: "Export" is a link like any other.
			if w := serve(t, h, "GET", "/Export", ""); w.Code != http.StatusFound {
				t.Errorf("GET /Export = %d, want the redirect", w.Code)
			}
			ndjson := exportBody(t, h, "ndjson", "application/x-ndjson")
			var got []link.Response
			sc := bufio.NewScanner(bytes.NewReader(ndjson))
			for sc.Scan() {
				var l link.Response
				if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
					t.Fatalf("line %q: %v", sc.Bytes(), err)
				}
				got = append(got, l)
			}
			if len(got) != len(want) {
				t.Fatalf("ndjson export has %d links, want %d:\n%s", len(got), len(want), ndjson)
			}
			rows, err := csv.NewReader(bytes.NewReader(exportBody(t, h, "csv", "text/csv; charset=utf-8"))).ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) != len(want)+1 || strings.Join(rows[0], ",") != strings.Join(csvHeader, ",") {
				t.Fatalf("csv export = %q", rows)
			}
			for i, w := range want {
				if got[i].Code != w.Code || got[i].LongURL != w.LongURL || !equalStrPtr(got[i].Title, w.Title) || !equalStrPtr(got[i].Notes, w.Notes) {
					t.Errorf("ndjson link %d = %+v, want %+v", i, got[i], w)
				}
				row := rows[i+1]
				for j := range row {
					if strings.ContainsRune("=+-@\t\r", rune(firstByte(row[j]))) {
						t.Errorf("csv cell %q would run as a formula", row[j])
					}
					row[j] = link.CSVUncell(row[j])
				}
				if row[0] != w.Code || row[2] != w.LongURL || row[6] != deref(w.Title) || row[7] != strings.Join(w.Tags, " ") || row[8] != deref(w.Notes) {
					t.Errorf("csv row %d (undone) = %q, want the link %+v", i, row, w)
				}
			}
			if w := serve(t, h, "DELETE", "/api/links/Export", "", auth()...); w.Code != http.StatusNoContent {
				t.Errorf("DELETE /api/links/Export = %d, want 204 (the link)", w.Code)
			}
			if w := serve(t, h, "GET", "/Export", ""); w.Code != http.StatusGone {
				t.Errorf("GET /Export after DELETE = %d, want 410", w.Code)
			}
		})
	}
}

// exportBody runs an export with the read key and checks its headers.
func exportBody(t *testing.T, h *Handler, format, contentType string) []byte {
	t.Helper()
	w := serve(t, h, "GET", "/api/links/export?format="+format, "", "Authorization", "Bearer "+readKey)
	if w.Code != http.StatusOK || w.Header().Get("Content-Type") != contentType ||
		w.Header().Get("Content-Disposition") != `attachment; filename="links.`+format+`"` {
		t.Fatalf("export %s = %d %v %s", format, w.Code, w.Header(), w.Body)
	}
	return w.Body.Bytes()
}

func firstByte(s string) byte {
	if s == "" {
		return 0
	}
	return s[0]
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func equalStrPtr(a, b *string) bool { return deref(a) == deref(b) }
