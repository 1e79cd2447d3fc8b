package cli

import (
	"io"
	"net/url"
	"strings"
)

// bitlySource reads Bitly's CSV export of links. Columns are found by
// name (case, spaces and '_' ignored): the short link (bitlink or link,
// e.g. bit.ly/3xYzAbc), long_url, title, created_at (or date_created),
// tags (separated by ',' '|' or ';'), custom_bitlinks (more short links to
// the same destination) and the click total (clicks, total_clicks,
// engagements or total_engagements). Each custom bitlink becomes a
// record of its own, with no click total.
type bitlySource struct {
	t       *csvTable
	opt     SourceOptions
	pending []Record // custom bitlinks of the row read last
}

func newBitlySource(r io.Reader, o SourceOptions) (Source, error) {
	t, err := openCSV(r, map[string][]string{
		"link":    {"bitlink", "link", "shortlink", "shorturl"},
		"longUrl": {"longurl"},
		"title":   {"title"},
		"created": {"createdat", "datecreated", "created"},
		"tags":    {"tags"},
		"custom":  {"custombitlinks", "custombitlink", "customlinks"},
		"clicks":  {"clicks", "totalclicks", "engagements", "totalengagements"},
	}, "link", "longUrl")
	if err != nil {
		return nil, err
	}
	return &bitlySource{t: t, opt: o}, nil
}

func (s *bitlySource) Unit() string { return "line" }

func (s *bitlySource) Next() (Record, error) {
	if len(s.pending) > 0 {
		rec := s.pending[0]
		s.pending = s.pending[1:]
		return rec, nil
	}
	line, err := s.t.next()
	if err != nil {
		return Record{}, err
	}
	rec := Record{Line: line, LongURL: s.t.get("longUrl"), Title: strPtr(s.t.get("title"))}
	if rec.Code, err = bitlyCode(s.t.get("link")); err != nil {
		return rec, recordErr(line, "", "bitlink: %v", err)
	}
	rec.Tags = splitTags(strings.NewReplacer("|", ",", ";", ",").Replace(s.t.get("tags")), ",")
	if rec.CreatedAt, err = parseTime(s.t.get("created"), s.opt.location()); err != nil {
		return rec, recordErr(line, rec.Code, "created_at: %v", err)
	}
	if rec.Clicks, err = parseCount(s.t.get("clicks")); err != nil {
		return rec, recordErr(line, rec.Code, "clicks: %v", err)
	}
	for _, c := range strings.FieldsFunc(s.t.get("custom"), func(r rune) bool { return r == ',' || r == '|' || r == ' ' || r == ';' }) {
		extra := rec
		extra.Clicks = nil
		if extra.Code, err = bitlyCode(c); err == nil && extra.Code != rec.Code {
			s.pending = append(s.pending, extra)
		}
	}
	return rec, nil
}

// bitlyCode is the back-half of a short link: its path without the
// leading '/', with or without a scheme ("bit.ly/3xYz", "https://bit.ly/3xYz").
func bitlyCode(link string) (string, error) {
	link = strings.TrimSpace(link)
	if !strings.Contains(link, "://") {
		link = "https://" + link
	}
	u, err := url.Parse(link)
	if err != nil || u.Host == "" {
		return "", errorf("%q is not a short link like bit.ly/3xYzAbc", link)
	}
	code := strings.Trim(u.Path, "/")
	if code == "" || strings.Contains(code, "/") {
		return "", errorf("%q has no back-half, or more than one path segment", link)
	}
	return code, nil
}
