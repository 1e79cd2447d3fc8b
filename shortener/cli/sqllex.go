package cli

import (
	"bufio"
	"errors"
	"io"
	"strings"
)

// sqlKind is the kind of a token of a MySQL dump.
type sqlKind int

const (
	sqlEOF    sqlKind = iota
	sqlWord           // a keyword, bare identifier, number or NULL
	sqlIdent          // a `quoted identifier`
	sqlString         // a 'string' or "string", unescaped
	sqlPunct          // ( ) , ; and any other single character
)

// sqlToken is one token; tooLong marks a string cut at maxRecordBytes.
type sqlToken struct {
	kind    sqlKind
	text    string
	line    int
	tooLong bool
}

// sqlLexer splits a MySQL dump (mysqldump, phpMyAdmin) into tokens,
// reading one byte at a time from a buffer: comments (-- #, /* */) are
// skipped, strings unescaped as MySQL reads them.
type sqlLexer struct {
	r    *bufio.Reader
	line int
}

func newSQLLexer(r io.Reader) *sqlLexer {
	return &sqlLexer{r: bufio.NewReaderSize(r, 64<<10), line: 1}
}

func (l *sqlLexer) read() (byte, error) {
	c, err := l.r.ReadByte()
	if c == '\n' && err == nil {
		l.line++
	}
	return c, err
}

func (l *sqlLexer) unread(c byte) {
	_ = l.r.UnreadByte()
	if c == '\n' {
		l.line--
	}
}

// next returns the next token; sqlEOF at the end.
func (l *sqlLexer) next() (sqlToken, error) {
	for {
		c, err := l.read()
		if err == io.EOF {
			return sqlToken{kind: sqlEOF, line: l.line}, nil
		}
		if err != nil {
			return sqlToken{}, err
		}
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			continue
		case c == '#':
			err = l.skipLine()
		case c == '-' && l.peekIs('-'):
			err = l.skipLine()
		case c == '/' && l.peekIs('*'):
			err = l.skipBlock()
		case c == '\'' || c == '"':
			return l.quoted(c, sqlString)
		case c == '`':
			return l.quoted(c, sqlIdent)
		case isWordByte(c):
			return l.word(c)
		default:
			return sqlToken{kind: sqlPunct, text: string(c), line: l.line}, nil
		}
		if err != nil {
			return sqlToken{}, err
		}
	}
}

func (l *sqlLexer) peekIs(want byte) bool {
	b, err := l.r.Peek(1)
	return err == nil && b[0] == want
}

func (l *sqlLexer) skipLine() error {
	for {
		c, err := l.read()
		if err == io.EOF || c == '\n' {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func (l *sqlLexer) skipBlock() error {
	prev := byte(0)
	for {
		c, err := l.read()
		if err == io.EOF {
			return errors.New("a /* comment never ends")
		}
		if err != nil {
			return err
		}
		if prev == '*' && c == '/' {
			return nil
		}
		prev = c
	}
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '$' || c == '.' || c == '-' || c == '+' || c >= 0x80
}

func (l *sqlLexer) word(first byte) (sqlToken, error) {
	t := sqlToken{kind: sqlWord, line: l.line}
	var b strings.Builder
	b.WriteByte(first)
	for {
		c, err := l.read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return t, err
		}
		if !isWordByte(c) {
			l.unread(c)
			break
		}
		if b.Len() < maxRecordBytes {
			b.WriteByte(c)
		} else {
			t.tooLong = true
		}
	}
	t.text = b.String()
	return t, nil
}

// quoted reads up to the closing quote: a doubled quote is one, and in
// strings a backslash escapes as MySQL reads it (\0 \b \n \r \t \Z, and
// \% \_ keep their backslash).
func (l *sqlLexer) quoted(q byte, kind sqlKind) (sqlToken, error) {
	t := sqlToken{kind: kind, line: l.line}
	var b strings.Builder
	put := func(s string) {
		if b.Len()+len(s) <= maxRecordBytes {
			b.WriteString(s)
		} else {
			t.tooLong = true
		}
	}
	for {
		c, err := l.read()
		if err == io.EOF {
			return t, errorf("line %d: a quoted value never ends", t.line)
		}
		if err != nil {
			return t, err
		}
		switch {
		case c == q && l.peekIs(q):
			_, _ = l.read()
			put(string(q))
		case c == q:
			t.text = b.String()
			return t, nil
		case c == '\\' && kind == sqlString:
			e, err := l.read()
			if err != nil {
				return t, errorf("line %d: a quoted value never ends", t.line)
			}
			put(sqlEscape(e))
		case b.Len() < maxRecordBytes:
			b.WriteByte(c)
		default:
			t.tooLong = true
		}
	}
}

// sqlEscape is what MySQL reads for a backslash followed by e.
func sqlEscape(e byte) string {
	switch e {
	case '0':
		return "\x00"
	case 'b':
		return "\b"
	case 'n':
		return "\n"
	case 'r':
		return "\r"
	case 't':
		return "\t"
	case 'Z':
		return "\x1a"
	case '%', '_':
		return "\\" + string(e)
	}
	return string([]byte{e})
}
