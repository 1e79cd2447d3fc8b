package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"strings"

	"github.com/spf13/pflag"
)

// targetingFlags are a link's destination rules, A/B split and fallback
// as create and edit take them: --rule (repeatable) and --variants each a
// JSON value or @file holding one.
type targetingFlags struct {
	rules         []string
	variants      string
	fallbackURL   string
	clearRules    bool
	clearVariants bool
}

// maxTargetingFile bounds a file given to --rule or --variants (the API
// takes at most 64 KiB of rules and variants together).
const maxTargetingFile = 1 << 20

func (t *targetingFlags) register(fl *pflag.FlagSet, edit bool) {
	fl.StringArrayVar(&t.rules, "rule", nil, `a destination rule, JSON ('{"if":{"os":["ios"]},"url":"https://..."}') or @file holding a rule or an array of rules; repeat for several, in order`)
	fl.StringVar(&t.variants, "variants", "", `the link's A/B split, JSON ('[{"name":"a","url":"https://...","weight":50},...]') or @file`)
	fl.StringVar(&t.fallbackURL, "fallback-url", "", "where an expired, revoked, not yet valid or used-up link sends a person")
	if edit {
		fl.BoolVar(&t.clearRules, "clear-rules", false, "remove the link's rules")
		fl.BoolVar(&t.clearVariants, "clear-variants", false, "remove the link's A/B split")
	}
}

// fields adds the flags given to b, the request body or merge patch.
func (t *targetingFlags) fields(changed func(string) bool, b map[string]any) error {
	if changed("rule") {
		rules, err := ruleList(t.rules)
		if err != nil {
			return err
		}
		b["rules"] = rules
	}
	if changed("variants") {
		v, err := jsonArg("--variants", t.variants)
		if err != nil {
			return err
		}
		b["variants"] = v
	}
	if changed("fallback-url") {
		b["fallback_url"] = nullIf(t.fallbackURL, t.fallbackURL == "")
	}
	if t.clearRules {
		b["rules"] = nil
	}
	if t.clearVariants {
		b["variants"] = nil
	}
	return nil
}

// ruleList is the rules of the --rule values in order: each a rule or an
// array of rules.
func ruleList(values []string) ([]json.RawMessage, error) {
	var out []json.RawMessage
	for _, v := range values {
		raw, err := jsonArg("--rule", v)
		if err != nil {
			return nil, err
		}
		if trimmed := bytes.TrimSpace(raw); len(trimmed) > 0 && trimmed[0] == '[' {
			var list []json.RawMessage
			if err := json.Unmarshal(trimmed, &list); err != nil {
				return nil, usageErr("--rule: %v", err)
			}
			out = append(out, list...)
			continue
		}
		out = append(out, raw)
	}
	return out, nil
}

// jsonArg reads a flag's JSON value, inline or from @file.
func jsonArg(flag, v string) (json.RawMessage, error) {
	data := []byte(v)
	if name, ok := strings.CutPrefix(v, "@"); ok {
		f, err := os.Open(name)
		if err != nil {
			return nil, usageErr("%s: %v", flag, err)
		}
		defer f.Close()
		read, err := io.ReadAll(io.LimitReader(f, maxTargetingFile+1))
		if err != nil || len(read) > maxTargetingFile {
			return nil, usageErr("%s: %s is not a readable file of at most 1 MiB", flag, name)
		}
		data = read
	}
	if !json.Valid(data) {
		return nil, usageErr("%s: not valid JSON (give the JSON itself or @file)", flag)
	}
	return json.RawMessage(data), nil
}
