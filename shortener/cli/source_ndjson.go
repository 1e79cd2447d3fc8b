package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

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
		// A line is an import item as it is (fields it does not name,
		// short_url among them, are ignored).
		var it link.ImportItem
		if err := json.Unmarshal(b, &it); err != nil {
			return Record{Line: s.line}, recordErr(s.line, "", "not a link's JSON: %v", err)
		}
		return recordOf(it, s.line)
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
func MarshalNDJSON(rec *Record) ([]byte, error) { return json.Marshal(importItem(rec)) }
