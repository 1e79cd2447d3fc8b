package cli

import (
	"io"
	"strconv"
	"strings"
)

// shlinkSource reads the CSV of Shlink's web client export ("Export" on
// the short URLs list): createdAt, domain, shortCode, shortUrl, longUrl,
// title, tags (joined by '|'), visits. domain and shortUrl are not read.
type shlinkSource struct {
	t   *csvTable
	opt SourceOptions
}

func newShlinkSource(r io.Reader, o SourceOptions) (Source, error) {
	t, err := openCSV(r, map[string][]string{
		"createdAt": {"createdat", "datecreated"},
		"shortCode": {"shortcode"},
		"longUrl":   {"longurl"},
		"title":     {"title"},
		"tags":      {"tags"},
		"visits":    {"visits", "visitscount"},
	}, "shortCode", "longUrl")
	if err != nil {
		return nil, err
	}
	return &shlinkSource{t, o}, nil
}

func (s *shlinkSource) Unit() string { return "line" }

func (s *shlinkSource) Next() (Record, error) {
	line, err := s.t.next()
	if err != nil {
		return Record{}, err
	}
	rec := Record{Line: line, Code: s.t.get("shortCode"), LongURL: s.t.get("longUrl"), Title: strPtr(s.t.get("title"))}
	rec.Tags = splitTags(s.t.get("tags"), "|")
	if rec.CreatedAt, err = parseTime(s.t.get("createdAt"), s.opt.location()); err != nil {
		return rec, recordErr(line, rec.Code, "createdAt: %v", err)
	}
	if rec.Clicks, err = parseCount(s.t.get("visits")); err != nil {
		return rec, recordErr(line, rec.Code, "visits: %v", err)
	}
	return rec, nil
}

// parseCount reads a click total: digits, maybe with thousands
// separators; "" is unknown (nil).
func parseCount(s string) (*int64, error) {
	s = strings.NewReplacer(",", "", "_", "", " ", "").Replace(strings.TrimSpace(s))
	if s == "" {
		return nil, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return nil, errorf("%q is not a count", s)
	}
	return &n, nil
}
