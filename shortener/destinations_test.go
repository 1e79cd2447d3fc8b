package shortener

import (
	"slices"
	"strings"
	"testing"
)

// app_schemes lists custom schemes only, each named at its line when bad.
func TestCaddyfileAppSchemes(t *testing.T) {
	h, err := parse("shortener {\n\tapp_schemes myapp fb-messenger x.y+z\n}")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"myapp", "fb-messenger", "x.y+z"}; !slices.Equal(h.AppSchemes, want) {
		t.Errorf("AppSchemes = %q, want %q", h.AppSchemes, want)
	}
	for _, tc := range []struct{ input, want string }{
		{"shortener {\napp_schemes\n}", "wrong argument count"},
		{"shortener {\n\napp_schemes myapp HTTPS\n}", `"HTTPS" is not allowed: app_schemes lists custom schemes only, at Testfile:3`},
		{"shortener {\napp_schemes javascript\n}", `app scheme "javascript" is not allowed`},
		{"shortener {\napp_schemes 1app\n}", `invalid app scheme "1app"`},
		{"shortener {\napp_schemes my_app\n}", `invalid app scheme "my_app"`},
		{"shortener {\napp_schemes " + strings.Repeat("a", 33) + "\n}", "invalid app scheme"},
	} {
		if _, err := parse(tc.input); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parse(%q) = %v, want an error containing %q", tc.input, err, tc.want)
		}
	}
}
