package cli

import (
	"encoding/csv"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// exportColumns are the columns of GET <api>/links/export?format=csv.
var exportColumns = []string{"code", "short_url", "long_url", "created_at", "expires_at", "revoked_at", "title", "tags", "notes", "clicks"}

// csvSource reads this handler's CSV export: a header row naming
// exportColumns (short_url is not read), cells neutralised against
// spreadsheet formulas with a leading ' that is removed again.
type csvSource struct{ t *csvTable }

func newCSVSource(r io.Reader, _ SourceOptions) (Source, error) {
	fields := map[string][]string{}
	for _, c := range exportColumns {
		fields[c] = []string{headerKey(c)}
	}
	t, err := openCSV(r, fields, "code", "long_url")
	if err != nil {
		return nil, err
	}
	return &csvSource{t}, nil
}

func (s *csvSource) Unit() string { return "line" }

func (s *csvSource) Next() (Record, error) {
	line, err := s.t.next()
	if err != nil {
		return Record{}, err
	}
	cell := func(f string) string { return link.CSVUncell(s.t.get(f)) }
	rec := Record{Line: line, Code: cell("code"), LongURL: cell("long_url"), Title: strPtr(cell("title")), Notes: strPtr(cell("notes"))}
	if tags := cell("tags"); tags != "" {
		rec.Tags = strings.Split(tags, " ")
	}
	for f, dst := range map[string]**time.Time{"created_at": &rec.CreatedAt, "expires_at": &rec.ExpiresAt, "revoked_at": &rec.RevokedAt} {
		if *dst, err = parseTime(cell(f), time.UTC); err != nil {
			return rec, recordErr(line, rec.Code, "%s: %v", f, err)
		}
	}
	if c := cell("clicks"); c != "" {
		n, err := strconv.ParseInt(c, 10, 64)
		if err != nil || n < 0 {
			return rec, recordErr(line, rec.Code, "clicks: %q is not a count", c)
		}
		rec.Clicks = &n
	}
	return rec, nil
}

// WriteCSVRecord writes rec as a row of the export's CSV, as the handler
// does (the fuzz target's oracle: newCSVSource reads it back).
func WriteCSVRecord(w *csv.Writer, rec *Record, shortURL string) error {
	tm := func(t *time.Time) string {
		if t == nil {
			return ""
		}
		return t.UTC().Format(time.RFC3339Nano)
	}
	str := func(s *string) string {
		if s == nil {
			return ""
		}
		return *s
	}
	clicks := ""
	if rec.Clicks != nil {
		clicks = strconv.FormatInt(*rec.Clicks, 10)
	}
	row := []string{rec.Code, shortURL, rec.LongURL, tm(rec.CreatedAt), tm(rec.ExpiresAt), tm(rec.RevokedAt),
		str(rec.Title), strings.Join(rec.Tags, " "), str(rec.Notes), clicks}
	for i, c := range row {
		row[i] = link.CSVCell(c)
	}
	return w.Write(row)
}
