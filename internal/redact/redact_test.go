package redact

import "testing"

func TestForms(t *testing.T) {
	for _, tc := range []struct{ msg, secret, want string }{
		{`auth "a\"b" failed`, `a"b`, `auth "xxxxx" failed`},
		{"url u:a%20b@h", "a b", "url u:xxxxx@h"},
		{"q=a+b&x=1", "a b", "q=xxxxx&x=1"},
		{"ab and abc", "abc", "ab and xxxxx"},
		{"nothing", "", "nothing"},
	} {
		if got := Forms(tc.msg, tc.secret); got != tc.want {
			t.Errorf("Forms(%q, %q) = %q, want %q", tc.msg, tc.secret, got, tc.want)
		}
	}
}

func TestQuery(t *testing.T) {
	for raw, want := range map[string]string{
		"db=1&password=s3cret":   "db=1&password=xxxxx",
		"pass%77ord=s&sslmode=x": "pass%77ord=xxxxx&sslmode=x",
		"auth=t&AUTH_TOKEN=u":    "auth=xxxxx&AUTH_TOKEN=xxxxx",
		"%zz=s&a=b":              "xxxxx&a=b",
		"":                       "",
	} {
		if got := Query(raw); got != want {
			t.Errorf("Query(%q) = %q, want %q", raw, got, want)
		}
	}
}

func TestQuoted(t *testing.T) {
	for msg, want := range map[string]string{
		`missing "=" after "se cret" here`: `missing "xxxxx" after "xxxxx" here`,
		`bad "se\"cret" end`:               `bad "xxxxx" end`,
		`open "rest`:                       `open "xxxxx`,
		"plain":                            "plain",
	} {
		if got := Quoted(msg); got != want {
			t.Errorf("Quoted(%q) = %q, want %q", msg, got, want)
		}
	}
}
