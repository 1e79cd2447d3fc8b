package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// maxRecordBytes bounds one record of an import file (a CSV row, an
// NDJSON line, a JSON item, an SQL value): a longer one is refused, or
// ends the import where the format cannot skip it.
const maxRecordBytes = 1 << 20

// Record is one link read from an import file, whatever its source.
type Record struct {
	Line      int        // where the record starts: its line, or its item number in a JSON array
	Code      string     // the short code, "" when the source has none
	LongURL   string     // the destination
	Title     *string    // nil: none
	Tags      []string   // nil: none
	Notes     *string    // nil: none
	CreatedAt *time.Time // nil: unknown (the import's time)
	ExpiresAt *time.Time // nil: never
	RevokedAt *time.Time // nil: not revoked
	Clicks    *int64     // the click total at the source, imported as a baseline; nil: unknown

	// The per-link rules (NDJSON exports only).
	RedirectStatus *int
	ValidFrom      *time.Time
	MaxClicks      *int64
	ForwardQuery   *bool
	// RemainingClicks, with MaxClicks, keeps the redirects already served.
	RemainingClicks *int64
	// Hourly is the click rollups of an export --with-stats, passed to the
	// import mode as they are (NDJSON only).
	Hourly []link.ImportHour
}

// Source reads the records of an import file one at a time, in constant
// memory. Next answers io.EOF after the last record; a *RecordError when
// one record cannot be read (the next call goes on with the following
// record); any other error ends the import.
type Source interface {
	Next() (Record, error)
	// Unit names what Record.Line counts: "line" or "item".
	Unit() string
}

// RecordError is one record the source cannot read, with where it is.
type RecordError struct {
	Line int
	Code string // when known
	Msg  string
}

func (e *RecordError) Error() string { return e.Msg }

// recordErr is a RecordError at line.
func recordErr(line int, code, format string, args ...any) *RecordError {
	return &RecordError{Line: line, Code: code, Msg: fmt.Sprintf(format, args...)}
}

// isRecordErr reports whether err spoils one record only.
func isRecordErr(err error) bool {
	_, ok := errors.AsType[*RecordError](err)
	return ok
}

// Sources names every import format; each opens a Source on a stream.
var Sources = map[string]func(r io.Reader, o SourceOptions) (Source, error){
	"ndjson": newNDJSONSource,
	"csv":    newCSVSource,
	"yourls": newYOURLSSource,
	"shlink": newShlinkSource,
	"kutt":   newKuttSource,
	"bitly":  newBitlySource,
}

// SourceOptions are the settings a source may need.
type SourceOptions struct {
	// Location is the zone of times written without one (YOURLS'
	// timestamp, a Bitly date); UTC by default.
	Location *time.Location
	// Table is the YOURLS table an SQL dump's INSERTs are read from.
	Table string
}

// timeLayouts are the layouts parseTime accepts, zoned ones first.
var timeLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05-0700",
	"2006-01-02 15:04:05-07:00",
	"2006-01-02 15:04:05 -0700",
	"2006-01-02T15:04:05",
	"2006-01-02 15:04:05",
	"2006-01-02",
}

// parseTime reads a time in one of timeLayouts; one without a zone is in
// loc. The zero YOURLS timestamp 0000-00-00 00:00:00 is no time (nil).
func parseTime(s string, loc *time.Location) (*time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" || strings.HasPrefix(s, "0000-00-00") {
		return nil, nil
	}
	for _, layout := range timeLayouts {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			u := t.UTC()
			return &u, nil
		}
	}
	return nil, fmt.Errorf("%q is not a time (RFC 3339, or YYYY-MM-DD HH:MM:SS)", s)
}

// normalizeTag turns a tag of another shortener into one this handler
// takes: spaces become '-' (Shlink and Bitly allow them); anything else
// is left for the API to judge.
func normalizeTag(t string) string {
	return strings.Join(strings.Fields(t), "-")
}

// splitTags splits a cell of tags on sep, dropping empty ones.
func splitTags(cell, sep string) []string {
	var tags []string
	for _, t := range strings.Split(cell, sep) {
		if t = normalizeTag(t); t != "" {
			tags = append(tags, t)
		}
	}
	return tags
}

// strPtr is s, or nil when s is empty.
func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// location is the zone of times without one.
func (o SourceOptions) location() *time.Location {
	if o.Location == nil {
		return time.UTC
	}
	return o.Location
}

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }
