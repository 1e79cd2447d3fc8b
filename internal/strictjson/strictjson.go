// Package strictjson decodes a JSON request body strictly: exactly one
// value, no field the target does not have, and no field given twice.
//
// encoding/json alone lets the last of two equal fields win and ignores what
// follows the first value, so a body can mean one thing to this server and
// another to a proxy, a log or an auditor in front of it. A field is "the
// same" as encoding/json matches it: case-insensitively.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"
)

// Decode decodes data, one JSON value, into v.
func Decode(data []byte, v any) error {
	if err := checkFields(data); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("unexpected data after the JSON value")
	}
	return nil
}

// frame is one open object or array while walking the tokens.
type frame struct {
	keys    map[string]struct{} // nil for an array
	path    string              // its name, for errors: "", "a", "a[].b"
	wantKey bool                // an object expecting a key (or its end)
	last    string              // the last key read in an object
}

// checkFields reports the first field that an object holds twice. Syntax
// errors are left to the decoder.
func checkFields(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var stack []frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		top := len(stack) - 1
		if top >= 0 && stack[top].wantKey {
			key, ok := tok.(string)
			if !ok { // the object's end
				stack = closeFrame(stack)
				continue
			}
			f := &stack[top]
			folded := fold(key)
			if _, dup := f.keys[folded]; dup {
				return fmt.Errorf("field %q given twice", join(f.path, key))
			}
			f.keys[folded] = struct{}{}
			f.wantKey, f.last = false, key
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, frame{keys: map[string]struct{}{}, path: childPath(stack), wantKey: true})
		case json.Delim('['):
			stack = append(stack, frame{path: childPath(stack)})
		case json.Delim(']'):
			stack = closeFrame(stack)
		default:
			valueDone(stack)
		}
	}
}

// closeFrame ends the innermost object or array, a value of its parent.
func closeFrame(stack []frame) []frame {
	stack = stack[:len(stack)-1]
	valueDone(stack)
	return stack
}

// valueDone marks the innermost object's current field as read.
func valueDone(stack []frame) {
	if n := len(stack); n > 0 && stack[n-1].keys != nil {
		stack[n-1].wantKey = true
	}
}

// childPath names a value opened inside stack's top.
func childPath(stack []frame) string {
	n := len(stack)
	switch {
	case n == 0:
		return ""
	case stack[n-1].keys != nil:
		return join(stack[n-1].path, stack[n-1].last)
	default:
		return stack[n-1].path + "[]"
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// fold maps a key to the same string as every key encoding/json would
// match it with (its fold: the smallest rune of each rune's case orbit).
func fold(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		min := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if f < min {
				min = f
			}
		}
		b.WriteRune(min)
	}
	return b.String()
}
