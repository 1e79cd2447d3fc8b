package cfparse

import (
	"reflect"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// conf is what the test blocks fill: `test { size <n>; tag <t...>; inner { ttl <d> } }`.
type conf struct {
	Size  int
	Tags  []string
	Inner *inner
	Lines map[string]int // where each subdirective was read, by Each
}

type inner struct {
	Name string
	TTL  time.Duration
}

var testBlock = Block[conf]{
	Repeatable: []string{"tag"},
	Each:       func(c *conf, d *caddyfile.Dispenser) { c.Lines[d.Val()] = d.Line() },
	Subdirectives: Table[conf]{
		"size": func(c *conf, d *caddyfile.Dispenser) (err error) {
			c.Size, err = PositiveIntArg(d)
			return err
		},
		"tag": func(c *conf, d *caddyfile.Dispenser) error {
			tags, err := Args(d)
			c.Tags = append(c.Tags, tags...)
			return err
		},
		"inner": func(c *conf, d *caddyfile.Dispenser) error {
			name, err := OneArg(d)
			c.Inner = &inner{Name: name}
			if err != nil {
				return err
			}
			return innerBlock.Parse(d, c.Inner)
		},
	},
}

var innerBlock = Block[inner]{
	Prefix: func(in *inner) string { return "inner '" + in.Name + "': " },
	Kind:   "setting",
	Hint:   " (want ttl)",
	Subdirectives: Table[inner]{
		"ttl": func(in *inner, d *caddyfile.Dispenser) (err error) {
			in.TTL, err = PositiveDurationArg(d)
			return err
		},
	},
}

func TestBlockParse(t *testing.T) {
	for _, tt := range []struct {
		name, in string
		want     conf
		err      string
	}{
		{name: "no block", in: "test", want: conf{Lines: map[string]int{}}},
		{name: "empty block", in: "test {\n}", want: conf{Lines: map[string]int{}}},
		{name: "all", in: "test {\n\tsize 3\n\ttag a b\n\tinner x {\n\t\tttl 1m\n\t}\n\ttag c\n}",
			want: conf{Size: 3, Tags: []string{"a", "b", "c"}, Inner: &inner{Name: "x", TTL: time.Minute},
				Lines: map[string]int{"size": 2, "tag": 7, "inner": 4}}},
		{name: "inner without block", in: "test {\n\tinner x\n\tsize 1\n}",
			want: conf{Size: 1, Inner: &inner{Name: "x"}, Lines: map[string]int{"inner": 2, "size": 3}}},
		{name: "unrecognized", in: "test {\n\tsize 1\n\tcolor red\n}", err: "unrecognized subdirective 'color', at Testfile:3"},
		{name: "unrecognized before its arguments", in: "test {\n\tcolor\n}", err: "unrecognized subdirective 'color', at Testfile:2"},
		{name: "duplicate", in: "test {\n\tsize 1\n\tsize 2\n}", err: "duplicate subdirective 'size', at Testfile:3"},
		{name: "entry error", in: "test {\n\tsize 0\n}", err: "invalid size '0': must be a positive integer, at Testfile:2"},
		{name: "arguments", in: "test {\n\ttag\n}", err: "wrong argument count or unexpected line ending after 'tag', at Testfile:2"},
		{name: "inner unrecognized", in: "test {\n\tinner x {\n\t\tage 1m\n\t}\n}", err: "inner 'x': unrecognized setting 'age' (want ttl), at Testfile:3"},
		{name: "inner duplicate", in: "test {\n\tinner x {\n\t\tttl 1m\n\t\tttl 2m\n\t}\n}", err: "inner 'x': duplicate setting 'ttl', at Testfile:4"},
		{name: "outer names are not inner ones", in: "test {\n\tinner x {\n\t\tsize 1\n\t}\n}", err: "inner 'x': unrecognized setting 'size' (want ttl), at Testfile:3"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := caddyfile.NewTestDispenser(tt.in)
			d.Next()
			got := conf{Lines: map[string]int{}}
			err := testBlock.Parse(d, &got)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Errorf("Parse(%q) error = %v, want %q", tt.in, err, tt.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Parse(%q) = %+v, %v, want %+v", tt.in, got, err, tt.want)
			}
			if d.Next() {
				t.Errorf("Parse(%q) stopped at %q, want the end", tt.in, d.Val())
			}
		})
	}
}

// TestBlockNested: a nested block ends at its own closing brace, and the
// outer block goes on after it.
func TestBlockNested(t *testing.T) {
	d := caddyfile.NewTestDispenser("test {\n\tinner x {\n\t\tttl 1m\n\t}\n\tsize 2\n}\nnext")
	d.Next()
	got := conf{Lines: map[string]int{}}
	if err := testBlock.Parse(d, &got); err != nil {
		t.Fatal(err)
	}
	if got.Size != 2 || got.Inner == nil || got.Inner.TTL != time.Minute {
		t.Errorf("Parse = %+v, want size 2 and inner ttl 1m", got)
	}
	if !d.Next() || d.Val() != "next" {
		t.Errorf("after Parse the next token is %q, want next", d.Val())
	}
}

func TestArgHelpers(t *testing.T) {
	read := func(in string, f func(d *caddyfile.Dispenser) (any, error)) (any, string) {
		d := caddyfile.NewTestDispenser(in)
		d.Next()
		v, err := f(d)
		if err != nil {
			return v, err.Error()
		}
		return v, ""
	}
	noArgs := func(d *caddyfile.Dispenser) (any, error) { return nil, NoArgs(d) }
	args := func(d *caddyfile.Dispenser) (any, error) { return Args(d) }
	onOff := func(d *caddyfile.Dispenser) (any, error) { return OnOff(d) }
	posInt := func(d *caddyfile.Dispenser) (any, error) { return PositiveIntArg(d) }
	posDur := func(d *caddyfile.Dispenser) (any, error) { return PositiveDurationArg(d) }
	for _, tt := range []struct {
		in   string
		f    func(d *caddyfile.Dispenser) (any, error)
		want any
		err  string
	}{
		{"flag", noArgs, nil, ""},
		{"flag x", noArgs, nil, "wrong argument count or unexpected line ending after 'x', at Testfile:1"},
		{"hosts a b", args, []string{"a", "b"}, ""},
		{"hosts", args, []string(nil), "wrong argument count or unexpected line ending after 'hosts', at Testfile:1"},
		{"clicks on", onOff, true, ""},
		{"clicks off", onOff, false, ""},
		{"clicks yes", onOff, false, "invalid clicks 'yes': want on or off, at Testfile:1"},
		{"clicks on off", onOff, false, "wrong argument count or unexpected line ending after 'off', at Testfile:1"},
		{"size 7", posInt, 7, ""},
		{"size 0", posInt, 0, "invalid size '0': must be a positive integer, at Testfile:1"},
		{"size", posInt, 0, "wrong argument count or unexpected line ending after 'size', at Testfile:1"},
		{"ttl 2s", posDur, 2 * time.Second, ""},
		{"ttl -2s", posDur, time.Duration(0), "invalid ttl '-2s': must be a positive duration, at Testfile:1"},
	} {
		got, err := read(tt.in, tt.f)
		if err != tt.err || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%q = %v, %q, want %v, %q", tt.in, got, err, tt.want, tt.err)
		}
	}
}
