package strictjson

import (
	"encoding/json"
	"strings"
	"testing"
)

type body struct {
	LongURL string   `json:"long_url"`
	Code    string   `json:"code,omitempty"`
	Tags    []string `json:"tags,omitempty"`
	Inner   *struct {
		A int `json:"a"`
	} `json:"inner,omitempty"`
}

func TestDecodeRefuses(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"long_url":"https://a.example/","long_url":"https://b.example/"}`, `field "long_url" given twice`},
		{`{"long_url":"https://a.example/","LONG_URL":"https://b.example/"}`, `field "LONG_URL" given twice`},
		{`{"code":"x","long_url":"y","Code":"z"}`, `field "Code" given twice`},
		{"{\"long_url\":\"y\",\"\u212aey\":1,\"key\":2}", `field "key" given twice`}, // the Kelvin sign folds with k
		{`{"inner":{"a":1,"A":2},"long_url":"y"}`, `field "inner.A" given twice`},
		{`{"long_url":"https://a.example/"} {"long_url":"https://b.example/"}`, "after the JSON value"},
		{`{"long_url":"https://a.example/"}x`, "after the JSON value"},
		{`{"long_url":"https://a.example/"}]`, "after the JSON value"},
		{`{"long_url":"https://a.example/","evil":1}`, "unknown field"},
		{`{"long_url":`, "unexpected EOF"},
	} {
		var b body
		err := Decode([]byte(tc.in), &b)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Decode(%q) = %v, want an error containing %q", tc.in, err, tc.want)
		}
	}
}

func TestDecodeAccepts(t *testing.T) {
	for _, in := range []string{
		`{"long_url":"https://a.example/"}`,
		" \n{\"long_url\":\"https://a.example/\",\"tags\":[\"a\",\"a\"]}\n\t ",
		`{"long_url":"https://a.example/","inner":{"a":1}}`,
	} {
		var b body
		if err := Decode([]byte(in), &b); err != nil || b.LongURL != "https://a.example/" {
			t.Errorf("Decode(%q) = %v, %+v", in, err, b)
		}
	}
}

// FuzzDecode: whatever Decode accepts, encoding/json reads to the same value,
// and no object in it holds two keys that encoding/json would match alike.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"long_url":"x"}`, `{"long_url":"x","LONG_URL":"y"}`, `{"inner":{"a":1}}`, `{"tags":["a"]} x`, `[]`, `{"K":1,"\u212a":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var got map[string]any
		if Decode(data, &got) != nil {
			return
		}
		var want map[string]any
		if err := json.Unmarshal(data, &want); err != nil {
			t.Fatalf("Decode accepted %q that encoding/json refuses: %v", data, err)
		}
		checkNoFoldedTwins(t, data, got)
	})
}

// checkNoFoldedTwins walks v and fails when two keys of one object are
// equal under strings.EqualFold (encoding/json's own matching rule).
func checkNoFoldedTwins(t *testing.T, data []byte, v any) {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k, c := range x {
			for _, o := range keys {
				if strings.EqualFold(k, o) {
					t.Fatalf("Decode accepted %q with keys %q and %q", data, k, o)
				}
			}
			keys = append(keys, k)
			checkNoFoldedTwins(t, data, c)
		}
	case []any:
		for _, c := range x {
			checkNoFoldedTwins(t, data, c)
		}
	}
}
