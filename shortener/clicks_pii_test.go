package shortener

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
	"github.com/edgekit/caddy-edgekit/shortener/clicks"
	"github.com/edgekit/caddy-edgekit/shortener/store"
)

// No personal data is stored (issue 17): after real redirects through a
// real Caddy whose clients' addresses arrive in X-Forwarded-For from a
// trusted proxy, with user agents carrying a marker, and with a salt of two
// days ago planted the way the code keeps salts, nothing in PostgreSQL, in
// Redis (every key of the prefix, every stream entry ever appended) or in
// the embedded file holds a client address (text, 4- or 16-byte binary,
// hex), a user agent, the marker or the old salt.

// piiMarker is in every user agent of the test, so a user agent stored
// whole or in part is found.
const piiMarker = "zq7-pii-marker"

// piiNeedles is what must not be stored.
type piiNeedles struct {
	text [][]byte // compared ignoring case
	bin  [][]byte // compared byte for byte
}

func newPIINeedles(addrs []netip.Addr, uas []string, oldSalt []byte) piiNeedles {
	var n piiNeedles
	addText := func(s string) { n.text = append(n.text, []byte(strings.ToLower(s))) }
	for _, a := range addrs {
		addText(a.String())
		addText(a.StringExpanded())
		b16 := a.As16()
		n.bin = append(n.bin, b16[:])
		addText(hex.EncodeToString(b16[:]))
		if a.Is4() {
			b4 := a.As4()
			n.bin = append(n.bin, b4[:])
			addText(hex.EncodeToString(b4[:]))
		}
	}
	for _, ua := range uas {
		addText(ua)
	}
	addText(piiMarker)
	n.bin = append(n.bin, oldSalt)
	addText(hex.EncodeToString(oldSalt))
	n.bin = append(n.bin, []byte(base64.StdEncoding.EncodeToString(oldSalt)))
	return n
}

// Check reports each needle found in blob, a value stored at where.
func (n piiNeedles) check(t *testing.T, where string, blob []byte) {
	t.Helper()
	lower := bytes.ToLower(blob)
	for _, s := range n.text {
		if bytes.Contains(lower, s) {
			t.Errorf("%s holds %q: %.200q", where, s, blob)
		}
	}
	for _, b := range n.bin {
		if bytes.Contains(blob, b) {
			t.Errorf("%s holds the bytes %x", where, b)
		}
	}
}

// piiStore is one store of the test: its Caddyfile line, how to plant an
// old salt before Caddy starts, and how to inspect everything it holds
// once Caddy let go of it.
type piiStore struct {
	line    string
	plant   func(t *testing.T, day time.Time) []byte
	inspect func(t *testing.T, n piiNeedles) (values int)
}

func piiStores(t *testing.T) map[string]func(t *testing.T) piiStore {
	return map[string]func(t *testing.T) piiStore{
		"postgres": func(t *testing.T) piiStore {
			dsn := testenv.Postgres(t)
			return piiStore{
				line: "store postgres {env.SHORTENER_PII_DSN}",
				plant: func(t *testing.T, day time.Time) []byte {
					t.Setenv("SHORTENER_PII_DSN", dsn)
					salt, err := store.NewPostgresClickSink(testClickPool(t, dsn), 0).VisitorSalt(t.Context(), day)
					if err != nil {
						t.Fatal(err)
					}
					return salt
				},
				inspect: func(t *testing.T, n piiNeedles) int { return inspectPostgres(t, dsn, n) },
			}
		},
		"embedded": func(t *testing.T) piiStore {
			path := filepath.Join(t.TempDir(), "links.db")
			return piiStore{
				line: "store embedded " + path,
				plant: func(t *testing.T, day time.Time) []byte {
					st, err := store.OpenEmbedded(path)
					if err != nil {
						t.Fatal(err)
					}
					defer st.Close()
					sink, err := clickSinkFor(st, 0)
					if err != nil {
						t.Fatal(err)
					}
					salt, err := sink.(clicks.VisitorSalter).VisitorSalt(t.Context(), day)
					if err != nil {
						t.Fatal(err)
					}
					return salt
				},
				inspect: func(t *testing.T, n piiNeedles) int { return inspectBolt(t, path, n) },
			}
		},
	}
}

func TestNoPersonalDataStored(t *testing.T) {
	for name, open := range piiStores(t) {
		t.Run(name, func(t *testing.T) { testNoPersonalData(t, open(t)) })
	}
}

func testNoPersonalData(t *testing.T, store piiStore) {
	rdb, prefix := testenv.Redis(t)
	today := clicks.DayFloor(time.Now())
	oldSalt := store.plant(t, today.AddDate(0, 0, -2))

	// 4 addresses × 2 user agents = 8 visitors, each clicking twice, and a
	// bot: uniques are 8 only if the address came from X-Forwarded-For.
	addrs := []netip.Addr{netip.MustParseAddr("198.51.100.173"), netip.MustParseAddr("203.0.113.219"),
		netip.MustParseAddr("2001:db8:7e57::a11"), netip.MustParseAddr("2001:db8:c0de:1::5")}
	uas := []string{"Mozilla/5.0 (X11; Linux x86_64; rv:131.0) Gecko/20100101 Firefox/131.0 " + piiMarker + "-a",
		"Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148 " + piiMarker + "-b"}
	bot := "Googlebot/2.1 (+http://www.google.com/bot.html) " + piiMarker + "-bot"
	needles := newPIINeedles(addrs, append(uas, bot), oldSalt)

	entries := followStream(t, rdb, prefix+":clicks")
	base, key, stop := startPIICaddy(t, store.line, prefix)
	do := func(method, path, body, addr, ua string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("X-Forwarded-For", addr)
		req.Header.Set("User-Agent", ua)
		req.Header.Set("Referer", "https://news.example.com/?from="+addr)
		resp, err := piiClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	status, body := do("POST", "/api/links", `{"long_url":"https://example.com/pii"}`, addrs[0].String(), uas[0])
	if status != http.StatusCreated {
		t.Fatalf("create = %d %s", status, body)
	}
	code := body[strings.Index(body, `"code":"`)+8:]
	code = code[:strings.IndexByte(code, '"')]
	for range 2 {
		for _, a := range addrs {
			for _, ua := range append(uas, bot) {
				if s, b := do("GET", "/"+code, "", a.String(), ua); s != http.StatusFound {
					t.Fatalf("GET /%s = %d %s", code, s, b)
				}
			}
		}
	}
	var st clicks.Stats
	for deadline := time.Now().Add(30 * time.Second); st.Total < 24; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("counted %d clicks, want 24", st.Total)
		}
		_, body := do("GET", "/api/links/"+code+"/stats", "", addrs[0].String(), uas[0])
		if err := json.Unmarshal([]byte(body), &st); err != nil {
			t.Fatalf("stats %s: %v", body, err)
		}
	}
	if st.Total != 24 || st.Bots != 8 || st.Uniques != 8 {
		t.Errorf("stats: total %d bots %d uniques %d, want 24, 8 and 8 (addresses from X-Forwarded-For)", st.Total, st.Bots, st.Uniques)
	}
	stop() // the handler lets go of the store (the embedded file's lock)

	seen := entries()
	if len(seen) == 0 {
		t.Error("no stream entry was seen")
	}
	for i, e := range seen {
		needles.check(t, fmt.Sprintf("stream entry %d", i), []byte(e))
	}
	keys := inspectRedis(t, rdb, prefix, needles)
	values := store.inspect(t, needles)
	t.Logf("inspected %d stream entries as appended, %d Redis keys, %d stored values", len(seen), keys, values)
}
