package link

import (
	"bytes"
	"encoding/csv"
	"strings"
	"testing"
)

// FuzzCSVCell: a cell written through CSVCell and encoding/csv reads back
// through CSVUncell as it was, and never starts with a formula character.
func FuzzCSVCell(f *testing.F) {
	for _, s := range []string{"", "=1+1", "+", "-x", "@a", "\tx", "\rx", "'", "''=", "plain", "a,b\"c\nd", "=HYPERLINK(\"x\")"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cell := CSVCell(s)
		if cell != "" && strings.ContainsRune("=+-@\t\r", rune(cell[0])) {
			t.Fatalf("CSVCell(%q) = %q starts with a formula character", s, cell)
		}
		var buf bytes.Buffer
		w := csv.NewWriter(&buf)
		if err := w.Write([]string{cell, "next"}); err != nil {
			t.Fatal(err)
		}
		w.Flush()
		rec, err := csv.NewReader(&buf).Read()
		if err != nil {
			t.Fatalf("reading back %q: %v", buf.String(), err)
		}
		// encoding/csv turns \r\n inside a quoted field into \n; the rule
		// itself is exact.
		want := strings.ReplaceAll(s, "\r\n", "\n")
		if CSVUncell(cell) != s || CSVUncell(strings.ReplaceAll(rec[0], "\r\n", "\n")) != want && CSVUncell(rec[0]) != want {
			t.Fatalf("round trip of %q: cell %q, read %q", s, cell, rec[0])
		}
	})
}
