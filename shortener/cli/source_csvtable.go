package cli

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"
)

// errRecordTooLong ends an import whose format cannot skip a record.
var errRecordTooLong = fmt.Errorf("a record is longer than %d bytes", maxRecordBytes)

// recordLimiter fails a read once more than maxRecordBytes have been read
// since the last reset (the source resets it before each record), so a
// hostile file cannot make one record take unbounded memory.
type recordLimiter struct {
	r io.Reader
	n int
}

func (l *recordLimiter) reset() { l.n = 0 }

func (l *recordLimiter) Read(p []byte) (int, error) {
	if l.n > maxRecordBytes {
		return 0, errRecordTooLong
	}
	n, err := l.r.Read(p)
	l.n += n
	return n, err
}

// csvTable reads a CSV file with a header row, its columns found by name.
type csvTable struct {
	r    *csv.Reader
	lim  *recordLimiter
	cols map[string]int // field -> column index
	row  []string
}

// headerKey is how a header cell is compared: lower case, without
// spaces, '_' and '-' ("Long URL", "long_url" and "longUrl" are one).
func headerKey(s string) string {
	s = strings.TrimPrefix(strings.TrimSpace(s), "\ufeff")
	return strings.NewReplacer(" ", "", "_", "", "-", "").Replace(strings.ToLower(s))
}

// openCSV reads the header; fields maps each field to the header names
// it may have (as headerKey makes them); required fields must be there.
func openCSV(r io.Reader, fields map[string][]string, required ...string) (*csvTable, error) {
	lim := &recordLimiter{r: r}
	t := &csvTable{r: csv.NewReader(lim), lim: lim, cols: map[string]int{}}
	t.r.ReuseRecord = true
	header, err := t.r.Read()
	if err == io.EOF {
		return nil, errors.New("the file is empty: a header row is required")
	}
	if err != nil {
		return nil, fmt.Errorf("header row: %w", err)
	}
	for i, cell := range header {
		for field, names := range fields {
			for _, n := range names {
				if headerKey(cell) == n {
					if _, dup := t.cols[field]; dup {
						return nil, fmt.Errorf("header row: column %q is given twice", cell)
					}
					t.cols[field] = i
				}
			}
		}
	}
	for _, f := range required {
		if _, ok := t.cols[f]; !ok {
			return nil, fmt.Errorf("header row: no %s column (%s)", f, strings.Join(fields[f], ", "))
		}
	}
	return t, nil
}

// next reads a row; io.EOF at the end, *RecordError for a row with the
// wrong number of cells.
func (t *csvTable) next() (line int, err error) {
	t.lim.reset()
	row, err := t.r.Read()
	line, _ = t.r.FieldPos(0)
	if pe, ok := errors.AsType[*csv.ParseError](err); ok && errors.Is(pe.Err, csv.ErrFieldCount) {
		return pe.StartLine, recordErr(pe.StartLine, "", "%d cells, the header has %d", len(row), t.r.FieldsPerRecord)
	}
	if err == io.EOF {
		return 0, err
	}
	if err != nil {
		return line, fmt.Errorf("line %d: %w", line, err)
	}
	t.row = row
	return line, nil
}

// get is the row's cell of field, "" when the file has no such column.
func (t *csvTable) get(field string) string {
	i, ok := t.cols[field]
	if !ok || i >= len(t.row) {
		return ""
	}
	return t.row[i]
}
