package cli

import (
	"encoding/json"
	"errors"
	"io"
	"time"
)

// kuttLink is one link of Kutt's API v2 GET /api/v2/links answer.
type kuttLink struct {
	Address     string          `json:"address"`
	Target      string          `json:"target"`
	Description *string         `json:"description"`
	CreatedAt   string          `json:"created_at"`
	UpdatedAt   string          `json:"updated_at"`
	ExpireIn    *string         `json:"expire_in"`
	VisitCount  *int64          `json:"visit_count"`
	Banned      bool            `json:"banned"`
	Password    json.RawMessage `json:"password"`
}

// kuttSource reads Kutt's API v2 /links JSON: one answer
// {"total", "limit", "skip", "data": [...]}, several such answers one
// after another (one per page, as saved by a loop over skip), or a bare
// array of links. It decodes one link at a time.
type kuttSource struct {
	dec     *json.Decoder
	lim     *recordLimiter
	item    int
	inArray bool // inside a data array or a top-level array
	inPage  bool // inside an answer object, between its fields
}

func newKuttSource(r io.Reader, _ SourceOptions) (Source, error) {
	lim := &recordLimiter{r: r}
	return &kuttSource{dec: json.NewDecoder(lim), lim: lim}, nil
}

func (s *kuttSource) Unit() string { return "item" }

func (s *kuttSource) Next() (Record, error) {
	for {
		s.lim.reset()
		switch {
		case s.inArray && s.dec.More():
			return s.link()
		case s.inArray:
			s.inArray = false
			if _, err := s.dec.Token(); err != nil { // ']'
				return Record{}, s.syntax(err)
			}
		case s.inPage:
			if err := s.pageField(); err != nil {
				return Record{}, err
			}
		default:
			tok, err := s.dec.Token()
			if err == io.EOF {
				return Record{}, io.EOF
			}
			if err != nil {
				return Record{}, s.syntax(err)
			}
			switch tok {
			case json.Delim('['):
				s.inArray = true
			case json.Delim('{'):
				s.inPage = true
			default:
				return Record{}, errors.New("not Kutt's /links JSON: expected an object with \"data\" or an array of links")
			}
		}
	}
}

// pageField reads the next field of an answer object: "data" opens the
// array of links, any other field is skipped, '}' ends the answer.
func (s *kuttSource) pageField() error {
	if !s.dec.More() {
		s.inPage = false
		_, err := s.dec.Token() // '}'
		return s.syntax(err)
	}
	tok, err := s.dec.Token()
	if err != nil {
		return s.syntax(err)
	}
	if tok == "data" {
		if tok, err = s.dec.Token(); err != nil || tok != json.Delim('[') {
			return errors.New("not Kutt's /links JSON: \"data\" must be an array of links")
		}
		s.inArray = true
		return nil
	}
	var skip json.RawMessage
	return s.syntax(s.dec.Decode(&skip))
}

// link decodes the next link of the array.
func (s *kuttSource) link() (Record, error) {
	s.item++
	var k kuttLink
	if err := s.dec.Decode(&k); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return Record{Line: s.item}, recordErr(s.item, "", "not a Kutt link: %v", err)
		}
		return Record{}, s.syntax(err)
	}
	return kuttRecord(s.item, &k)
}

// syntax wraps an error that ends the import.
func (s *kuttSource) syntax(err error) error {
	if err == nil || errors.Is(err, errRecordTooLong) {
		return err
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return errorf("item %d: not valid JSON: %v", s.item, err)
}

// kuttRecord maps a Kutt link: address is the code, target the long URL,
// description the title, expire_in the expiry, visit_count the total; a
// banned link is imported revoked (at updated_at). A password-protected
// link is refused: this handler has no passwords, and importing it would
// open it to everyone.
func kuttRecord(item int, k *kuttLink) (Record, error) {
	rec := Record{Line: item, Code: k.Address, LongURL: k.Target, Title: k.Description, Clicks: k.VisitCount}
	if rec.Title != nil && *rec.Title == "" {
		rec.Title = nil
	}
	if len(k.Password) > 0 && string(k.Password) != "false" && string(k.Password) != "null" {
		return rec, recordErr(item, rec.Code, "password: the link is password-protected in Kutt, and this handler has no passwords: not imported")
	}
	var err error
	if rec.CreatedAt, err = parseTime(k.CreatedAt, time.UTC); err != nil {
		return rec, recordErr(item, rec.Code, "created_at: %v", err)
	}
	if k.ExpireIn != nil {
		if rec.ExpiresAt, err = parseTime(*k.ExpireIn, time.UTC); err != nil {
			return rec, recordErr(item, rec.Code, "expire_in: %v", err)
		}
	}
	if k.Banned {
		if rec.RevokedAt, _ = parseTime(k.UpdatedAt, time.UTC); rec.RevokedAt == nil {
			t := time.Now().UTC()
			rec.RevokedAt = &t
		}
	}
	return rec, nil
}
