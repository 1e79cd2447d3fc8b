package shortener

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/edgekit/caddy-edgekit/shortener/clicks"
	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// TestUIBrowserRules is issue 35's dashboard acceptance in a real browser
// (e2e/rules.mjs): on a link's page, rules and A/B splits set with the
// editor's controls (a device rule; a language rule with its own split,
// moved above it by keyboard; the link's split, whose weights must sum
// to 100), a refused URL named beside the form, the preview of the
// unsaved rules, then visits that follow the short link with an
// iPhone's, a desktop's (twice: the same variant) and a French desktop's
// user agent and land where the rules say, read back off the page per
// rule and variant; a read key sees the rules as text only. Here: the
// store holds what the script set, and the clicks carry their rule and
// variant.
func TestUIBrowserRules(t *testing.T) {
	needBrowser(t)
	st := embeddedStore(t)
	h := newHandler(t, st, func(h *Handler) {
		h.UI, h.APIReadKeys = "/admin", []string{testReadKey}
		h.ClicksInterval = caddy.Duration(50 * time.Millisecond)
		h.DenyPrivate = new(bool) // the destinations are on the loopback
	})
	other := otherOrigin(t)
	srv := dashboardServer(t, h, nil)
	out := runNode(t, "rules.mjs", 90*time.Second,
		"BASE="+srv.URL, "UI=/admin/", "WRITE_KEY="+testKey, "READ_KEY="+testReadKey, "OTHER="+other.URL)
	var res struct {
		Code, DestA, DestB, DestC, DestFRa, DestFRb string
		Desktop, Variant, French, FrVariant         string
		Rules                                       json.RawMessage
	}
	decodeResult(t, out, &res)

	l, err := st.Get(context.Background(), res.Code)
	if err != nil {
		t.Fatal(err)
	}
	wantRules := fmt.Sprintf(`[{"if":{"language":["fr"]},"variants":[{"name":"fr-a","url":%q,"weight":30},{"name":"fr-b","url":%q,"weight":70}]},`+
		`{"if":{"device":["mobile"]},"url":%q}]`, res.DestFRa, res.DestFRb, res.DestA)
	wantVariants := fmt.Sprintf(`[{"name":"a","url":%q,"weight":50},{"name":"b","url":%q,"weight":50}]`, res.DestB, res.DestC)
	for _, c := range []struct{ what, got, want string }{
		{"stored rules", string(link.TargetingPart(l.Targeting, "rules")), wantRules},
		{"rules the page read back", string(res.Rules), wantRules},
		{"stored variants", string(link.TargetingPart(l.Targeting, "variants")), wantVariants},
	} {
		if !sameJSON(c.got, c.want) {
			t.Errorf("%s = %s, want %s", c.what, c.got, c.want)
		}
	}
	if want := map[string]string{"a": res.DestB, "b": res.DestC}[res.Variant]; want == "" || res.Desktop != want {
		t.Errorf("the desktop landed on %s as variant %q, want variant a or b and its URL", res.Desktop, res.Variant)
	}
	if want := map[string]string{"fr-a": res.DestFRa, "fr-b": res.DestFRb}[res.FrVariant]; want == "" || res.French != want {
		t.Errorf("the French visitor landed on %s as variant %q, want variant fr-a or fr-b and its URL", res.French, res.FrVariant)
	}

	// The iPhone's visit by rule-2, the desktop's two by the link's
	// variant, the French visitor's by rule-1 and its variant.
	waitCodeTotal(t, h.clicks.Cfg.Sink, res.Code, 4)
	for dim, want := range map[string]map[string]int64{
		clicks.DimRule:    {"rule-1": 1, "rule-2": 1},
		clicks.DimVariant: {res.Variant: 2, res.FrVariant: 1},
	} {
		var s clicks.StatsAnswer
		getJSON(t, h, "/api/links/"+res.Code+"/stats?group_by="+dim, http.StatusOK, &s)
		got := map[string]int64{}
		for _, e := range s.Breakdown {
			got[e.Value] = e.Clicks
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("clicks by %s = %v, want %v", dim, got, want)
		}
	}
}

// sameJSON reports whether two JSON texts hold the same value.
func sameJSON(a, b string) bool {
	var x, y any
	return json.Unmarshal([]byte(a), &x) == nil && json.Unmarshal([]byte(b), &y) == nil && reflect.DeepEqual(x, y)
}
