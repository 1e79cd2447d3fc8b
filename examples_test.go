package edgekit

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig"
	_ "github.com/caddyserver/caddy/v2/modules/standard"
)

// TestExamplesAdapt adapts every file in caddyfile_examples/ to JSON and
// fails on any error or warning: the examples are what users copy.
func TestExamplesAdapt(t *testing.T) {
	files, err := filepath.Glob("caddyfile_examples/*.Caddyfile")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no examples found")
	}
	adapter := caddyconfig.GetAdapter("caddyfile")
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			body, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			out, warnings, err := adapter.Adapt(body, map[string]any{"filename": f})
			if err != nil {
				t.Fatalf("adapting: %v", err)
			}
			for _, w := range warnings {
				t.Errorf("warning: %s:%d: %s", w.File, w.Line, w.Message)
			}
			if !json.Valid(out) {
				t.Fatalf("adapted config is not JSON: %s", out)
			}
			s := string(out)
			for _, mod := range []string{"ratelimit", "shortener"} {
				if strings.Contains(string(body), "\n"+mod) || strings.Contains(string(body), "\t"+mod+" ") || strings.Contains(string(body), "\t"+mod+"\n") {
					if !strings.Contains(s, `"handler":"`+mod+`"`) {
						t.Errorf("example uses %s but the adapted config has no %s handler", mod, mod)
					}
				}
			}
		})
	}
}
