package cli

import (
	"bufio"
	"bytes"
	"io"
	"strings"
)

// yourlsColumns are the columns of YOURLS' yourls_url table, in its
// order: an INSERT without a column list gives them in this order.
var yourlsColumns = []string{"keyword", "url", "title", "timestamp", "ip", "clicks"}

// newYOURLSSource reads YOURLS' yourls_url table as a CSV with a header
// row (phpMyAdmin's or the database's export) or as an SQL dump of its
// INSERT statements (mysqldump); the first bytes tell which. The ip
// column is read past and dropped.
func newYOURLSSource(r io.Reader, o SourceOptions) (Source, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	head, _ := br.Peek(512)
	if looksLikeSQL(head) {
		if o.Table == "" {
			o.Table = "yourls_url"
		}
		return &yourlsSQL{lx: newSQLLexer(br), opt: o}, nil
	}
	fields := map[string][]string{}
	for _, c := range yourlsColumns {
		fields[c] = []string{c}
	}
	t, err := openCSV(br, fields, "keyword", "url")
	if err != nil {
		return nil, err
	}
	return &yourlsCSV{t: t, opt: o}, nil
}

// looksLikeSQL reports whether a file starts as an SQL dump: a comment
// or a statement keyword.
func looksLikeSQL(head []byte) bool {
	head = bytes.TrimLeft(bytes.TrimPrefix(head, []byte("\xef\xbb\xbf")), " \t\r\n")
	for _, p := range []string{"--", "/*", "#"} {
		if bytes.HasPrefix(head, []byte(p)) {
			return true
		}
	}
	word, _, _ := strings.Cut(string(head), " ")
	switch strings.ToUpper(word) {
	case "INSERT", "SET", "CREATE", "DROP", "LOCK", "UNLOCK", "USE", "START", "BEGIN", "COMMIT", "ALTER", "REPLACE":
		return true
	}
	return false
}

// yourlsRecord maps one row; get answers a column's value.
func yourlsRecord(line int, get func(string) (string, bool), o SourceOptions) (Record, error) {
	code, _ := get("keyword")
	long, _ := get("url")
	rec := Record{Line: line, Code: code, LongURL: long}
	if title, ok := get("title"); ok {
		rec.Title = strPtr(title)
	}
	var err error
	if ts, ok := get("timestamp"); ok {
		if rec.CreatedAt, err = parseTime(ts, o.location()); err != nil {
			return rec, recordErr(line, code, "timestamp: %v", err)
		}
	}
	if clicks, ok := get("clicks"); ok {
		if rec.Clicks, err = parseCount(clicks); err != nil {
			return rec, recordErr(line, code, "clicks: %v", err)
		}
	}
	return rec, nil
}

// yourlsCSV reads the table as CSV.
type yourlsCSV struct {
	t   *csvTable
	opt SourceOptions
}

func (s *yourlsCSV) Unit() string { return "line" }

func (s *yourlsCSV) Next() (Record, error) {
	line, err := s.t.next()
	if err != nil {
		return Record{}, err
	}
	return yourlsRecord(line, func(c string) (string, bool) {
		_, ok := s.t.cols[c]
		v := s.t.get(c)
		return v, ok && !(c == "title" && v == "NULL")
	}, s.opt)
}

// yourlsSQL reads the rows of INSERT INTO <table> statements of a dump,
// one row (value tuple) at a time; every other statement is skipped.
type yourlsSQL struct {
	lx       *sqlLexer
	opt      SourceOptions
	cols     []string // the INSERT's columns
	inValues bool     // between the tuples of an INSERT of the table
}

func (s *yourlsSQL) Unit() string { return "line" }

func (s *yourlsSQL) Next() (Record, error) {
	for {
		if s.inValues {
			return s.tuple()
		}
		tok, err := s.lx.next()
		if err != nil {
			return Record{}, err
		}
		switch {
		case tok.kind == sqlEOF:
			return Record{}, io.EOF
		case tok.kind == sqlWord && strings.EqualFold(tok.text, "INSERT"):
			if err := s.insert(); err != nil {
				return Record{}, err
			}
		case tok.kind == sqlPunct && tok.text == ";":
		default:
			if err := s.skipStatement(); err != nil {
				return Record{}, err
			}
		}
	}
}

// skipStatement reads past the next ';'.
func (s *yourlsSQL) skipStatement() error {
	for {
		tok, err := s.lx.next()
		if err != nil || tok.kind == sqlEOF || (tok.kind == sqlPunct && tok.text == ";") {
			return err
		}
	}
}

// insert reads "INSERT [IGNORE] [INTO] table [(cols)] VALUES" and, for
// the YOURLS table, stops before the first tuple.
func (s *yourlsSQL) insert() error {
	tok, err := s.lx.next()
	for err == nil && tok.kind == sqlWord && (strings.EqualFold(tok.text, "IGNORE") || strings.EqualFold(tok.text, "INTO")) {
		tok, err = s.lx.next()
	}
	if err != nil {
		return err
	}
	table := tok.text
	if i := strings.LastIndexByte(table, '.'); tok.kind == sqlWord && i >= 0 {
		table = table[i+1:] // db.table
	}
	if !strings.EqualFold(table, s.opt.Table) {
		return s.skipStatement()
	}
	s.cols = yourlsColumns
	if tok, err = s.lx.next(); err == nil && tok.kind == sqlPunct && tok.text == "(" {
		if s.cols, err = s.columnList(); err == nil {
			tok, err = s.lx.next()
		}
	}
	if err != nil {
		return err
	}
	if tok.kind != sqlWord || (!strings.EqualFold(tok.text, "VALUES") && !strings.EqualFold(tok.text, "VALUE")) {
		return errorf("line %d: INSERT INTO %s: expected VALUES, found %q", tok.line, s.opt.Table, tok.text)
	}
	s.inValues = true
	return nil
}

// columnList reads "a, `b`, c)".
func (s *yourlsSQL) columnList() ([]string, error) {
	var cols []string
	for {
		tok, err := s.lx.next()
		if err != nil {
			return nil, err
		}
		if tok.kind != sqlWord && tok.kind != sqlIdent || len(cols) >= 64 {
			return nil, errorf("line %d: a bad column list", tok.line)
		}
		cols = append(cols, strings.ToLower(tok.text))
		if tok, err = s.lx.next(); err != nil || tok.kind != sqlPunct || (tok.text != "," && tok.text != ")") {
			return nil, errorf("line %d: a bad column list", tok.line)
		}
		if tok.text == ")" {
			return cols, nil
		}
	}
}

// tuple reads "(v, v, ...)" and what follows it: ',' (another tuple) or
// ';' (the end of the INSERT).
func (s *yourlsSQL) tuple() (Record, error) {
	open, err := s.lx.next()
	if err != nil {
		return Record{}, err
	}
	if open.kind != sqlPunct || open.text != "(" {
		return Record{}, errorf("line %d: expected a ( of values, found %q", open.line, open.text)
	}
	vals, isNull, tooLong, err := s.values(open.line)
	if err != nil {
		return Record{}, err
	}
	after, err := s.lx.next()
	if err != nil {
		return Record{}, err
	}
	if after.kind == sqlEOF || after.kind == sqlPunct && after.text == ";" {
		s.inValues = false
	} else if after.kind != sqlPunct || after.text != "," {
		return Record{}, errorf("line %d: expected , or ; after a row, found %q", after.line, after.text)
	}
	if tooLong {
		return Record{Line: open.line}, recordErr(open.line, "", "a value is longer than %d bytes", maxRecordBytes)
	}
	if len(vals) != len(s.cols) {
		return Record{Line: open.line}, recordErr(open.line, "", "%d values for %d columns", len(vals), len(s.cols))
	}
	return yourlsRecord(open.line, func(c string) (string, bool) {
		for i, name := range s.cols {
			if name == c {
				return vals[i], !isNull[i]
			}
		}
		return "", false
	}, s.opt)
}

// values reads the values of a tuple after its "(" up to its ")".
func (s *yourlsSQL) values(line int) (vals []string, isNull []bool, tooLong bool, err error) {
	for {
		tok, err := s.lx.next()
		if err != nil {
			return nil, nil, false, err
		}
		if tok.kind != sqlString && tok.kind != sqlWord || len(vals) >= 64 {
			return nil, nil, false, errorf("line %d: a bad row of values", line)
		}
		vals = append(vals, tok.text)
		isNull = append(isNull, tok.kind == sqlWord && strings.EqualFold(tok.text, "NULL"))
		tooLong = tooLong || tok.tooLong
		if tok, err = s.lx.next(); err != nil || tok.kind != sqlPunct || (tok.text != "," && tok.text != ")") {
			return nil, nil, false, errorf("line %d: a bad row of values", line)
		}
		if tok.text == ")" {
			return vals, isNull, tooLong, nil
		}
	}
}
