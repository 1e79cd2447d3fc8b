package targeting

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"unicode/utf8"
)

// kind is the JSON type a field of the model takes.
type kind uint8

const (
	kindObject kind = iota
	kindArray
	kindString
	kindInt
	kindBool
)

// shape describes the JSON of the model, so that one walk over the input
// can refuse, naming its path, what encoding/json would refuse without a
// path (a wrong type), accept quietly (a duplicate key, a key in another
// case, invalid UTF-8) or refuse without a path (an unknown field).
type shape struct {
	kind   kind
	fields map[string]*shape // of an object
	elem   *shape            // of an array
}

func object(fields map[string]*shape) *shape { return &shape{kind: kindObject, fields: fields} }
func array(elem *shape) *shape               { return &shape{kind: kindArray, elem: elem} }

var (
	stringShape = &shape{kind: kindString}
	intShape    = &shape{kind: kindInt}
	boolShape   = &shape{kind: kindBool}
	stringList  = array(stringShape)

	variantShape = object(map[string]*shape{"name": stringShape, "url": stringShape, "weight": intShape})
	timeShape    = object(map[string]*shape{
		"tz": stringShape, "from": stringShape, "until": stringShape, "days": stringList,
		"hours": object(map[string]*shape{"from": intShape, "until": intShape}),
	})
	queryShape = object(map[string]*shape{"name": stringShape, "equals": stringShape, "present": boolShape})
	ifShape    = object(map[string]*shape{
		"device": stringList, "os": stringList, "browser": stringList, "country": stringList,
		"language": stringList, "ip": stringList, "query": array(queryShape), "time": timeShape,
	})
	ruleShape = object(map[string]*shape{
		"name": stringShape, "if": ifShape, "url": stringShape, "app_url": stringShape,
		"variants": array(variantShape),
	})
	setShape = object(map[string]*shape{"rules": array(ruleShape), "variants": array(variantShape)})
)

// walker checks one input against a shape.
type walker struct {
	data []byte
	dec  *json.Decoder
	last int64 // input offset after the previous token
}

// checkShape walks data, a JSON object, against setShape. Once it
// passes, json.Unmarshal into the model cannot fail.
func checkShape(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	w := &walker{data: data, dec: dec}
	tok, err := w.token("")
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return fieldErr("", "must be a JSON object")
	}
	if err := w.object(setShape, ""); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return fieldErr("", "unexpected data after the JSON object")
	}
	return nil
}

// token reads the next token; a syntax error or invalid UTF-8 is refused
// naming path, where the walk stands.
func (w *walker) token(path string) (json.Token, error) {
	tok, err := w.dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fieldErr(path, "invalid JSON: %v", err)
	}
	end := w.dec.InputOffset()
	if _, ok := tok.(string); ok && !utf8.Valid(w.data[w.last:end]) {
		return nil, fieldErr(path, "not valid UTF-8")
	}
	w.last = end
	return tok, nil
}

// value checks the value at path, whose first token is tok.
func (w *walker) value(tok json.Token, sh *shape, path string) error {
	if tok == nil {
		return nil // null: the field is absent
	}
	switch sh.kind {
	case kindObject:
		if d, ok := tok.(json.Delim); ok && d == '{' {
			return w.object(sh, path)
		}
		return fieldErr(path, "must be an object")
	case kindArray:
		if d, ok := tok.(json.Delim); ok && d == '[' {
			return w.array(sh, path)
		}
		return fieldErr(path, "must be an array")
	case kindString:
		if _, ok := tok.(string); !ok {
			return fieldErr(path, "must be a string")
		}
	case kindInt:
		n, ok := tok.(json.Number)
		if !ok {
			return fieldErr(path, "must be an integer")
		}
		if _, err := strconv.ParseInt(string(n), 10, 32); err != nil {
			return fieldErr(path, "must be an integer, not %s", truncate(string(n), 20))
		}
	case kindBool:
		if _, ok := tok.(bool); !ok {
			return fieldErr(path, "must be true or false")
		}
	}
	return nil
}

// object checks the members of an object whose '{' was read.
func (w *walker) object(sh *shape, path string) error {
	var seen []string // an object of the model has at most 8 keys
	for w.dec.More() {
		tok, err := w.token(path)
		if err != nil {
			return err
		}
		key := tok.(string) // an object's keys are strings, or Token fails
		fsh, known := sh.fields[key]
		if !known {
			return fieldErr(join(path, truncate(key, 64)), "unknown field")
		}
		field := join(path, key)
		for _, k := range seen {
			if k == key {
				return fieldErr(field, "given twice")
			}
		}
		seen = append(seen, key)
		if tok, err = w.token(field); err != nil {
			return err
		}
		if err := w.value(tok, fsh, field); err != nil {
			return err
		}
	}
	_, err := w.token(path) // '}'
	return err
}

// array checks the elements of an array whose '[' was read.
func (w *walker) array(sh *shape, path string) error {
	for i := 0; w.dec.More(); i++ {
		elem := path + "[" + strconv.Itoa(i) + "]"
		tok, err := w.token(elem)
		if err != nil {
			return err
		}
		if err := w.value(tok, sh.elem, elem); err != nil {
			return err
		}
	}
	_, err := w.token(path) // ']'
	return err
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// truncate shortens s for an error message.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
