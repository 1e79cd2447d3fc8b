package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"time"
)

// ndjsonLink is one line of GET <api>/links/export (the JSON of GET
// <api>/links/<code>); fields it does not name are ignored.
type ndjsonLink struct {
	Code            string     `json:"code"`
	ShortURL        string     `json:"short_url,omitempty"`
	LongURL         string     `json:"long_url"`
	CreatedAt       *time.Time `json:"created_at"`
	ExpiresAt       *time.Time `json:"expires_at"`
	RevokedAt       *time.Time `json:"revoked_at,omitempty"`
	Title           *string    `json:"title"`
	Tags            []string   `json:"tags"`
	Notes           *string    `json:"notes"`
	RedirectStatus  *int       `json:"redirect_status,omitempty"`
	ValidFrom       *time.Time `json:"valid_from,omitempty"`
	MaxClicks       *int64     `json:"max_clicks,omitempty"`
	ForwardQuery    *bool      `json:"forward_query,omitempty"`
	RemainingClicks *int64     `json:"remaining_clicks,omitempty"`
	Clicks          *int64     `json:"clicks,omitempty"`
	// Hourly is the click rollups of an export with_stats=1.
	Hourly json.RawMessage `json:"hourly,omitempty"`
}

// ndjsonSource reads an NDJSON export line by line; blank lines are
// skipped, and a line over maxRecordBytes is refused without being held.
type ndjsonSource struct {
	r    *bufio.Reader
	line int
}

func newNDJSONSource(r io.Reader, _ SourceOptions) (Source, error) {
	return &ndjsonSource{r: bufio.NewReaderSize(r, 64<<10)}, nil
}

func (s *ndjsonSource) Unit() string { return "line" }

func (s *ndjsonSource) Next() (Record, error) {
	for {
		b, err := s.readLine()
		if err != nil {
			return Record{}, err
		}
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		var l ndjsonLink
		if err := json.Unmarshal(b, &l); err != nil {
			return Record{Line: s.line}, recordErr(s.line, "", "not a link's JSON: %v", err)
		}
		return Record{
			Line: s.line, Code: l.Code, LongURL: l.LongURL, Title: l.Title, Tags: l.Tags, Notes: l.Notes,
			CreatedAt: l.CreatedAt, ExpiresAt: l.ExpiresAt, RevokedAt: l.RevokedAt, Clicks: l.Clicks,
			RedirectStatus: l.RedirectStatus, ValidFrom: l.ValidFrom, MaxClicks: l.MaxClicks, ForwardQuery: l.ForwardQuery,
			RemainingClicks: l.RemainingClicks, Hourly: l.Hourly,
		}, nil
	}
}

// readLine returns the next line without its line feed; a line longer
// than maxRecordBytes is read to its end and answered as a RecordError.
func (s *ndjsonSource) readLine() ([]byte, error) {
	s.line++
	var buf []byte
	tooLong := false
	for {
		chunk, err := s.r.ReadSlice('\n')
		if !tooLong {
			buf = append(buf, chunk...)
			if len(buf) > maxRecordBytes {
				tooLong, buf = true, nil
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if tooLong {
			return nil, recordErr(s.line, "", "the line is longer than %d bytes", maxRecordBytes)
		}
		if err == io.EOF && len(buf) > 0 {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
		return buf[:len(buf)-1], nil
	}
}

// MarshalNDJSON is rec as a line of the NDJSON export (the fuzz target's
// oracle: newNDJSONSource reads it back).
func MarshalNDJSON(rec *Record) ([]byte, error) {
	return json.Marshal(ndjsonLink{
		Code: rec.Code, LongURL: rec.LongURL, CreatedAt: rec.CreatedAt, ExpiresAt: rec.ExpiresAt, RevokedAt: rec.RevokedAt,
		Title: rec.Title, Tags: rec.Tags, Notes: rec.Notes, RedirectStatus: rec.RedirectStatus, ValidFrom: rec.ValidFrom,
		MaxClicks: rec.MaxClicks, ForwardQuery: rec.ForwardQuery, RemainingClicks: rec.RemainingClicks, Clicks: rec.Clicks, Hourly: rec.Hourly,
	})
}
