package targeting

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
)

// memoSets are rule sets a Memo serves (user agent, country and
// language only; link-level and rule variants) and one it must not (a
// time condition): the same visitor gets different rules from each.
var memoSets = []string{
	`{"rules":[{"if":{"device":["mobile"],"language":["fr"]},"url":"https://m-fr.example/"},
		{"if":{"os":["ios"]},"variants":[{"name":"a","url":"https://a.example/","weight":30},{"name":"b","url":"https://b.example/","weight":70}]},
		{"if":{"country":["DE"],"browser":["firefox"]},"url":"https://de.example/"}],
	 "variants":[{"name":"x","url":"https://x.example/","weight":50},{"name":"y","url":"https://y.example/","weight":50}]}`,
	`{"rules":[{"if":{"language":["de","fr-CA"]},"url":"https://lang.example/"},
		{"if":{"device":["desktop"],"country":["FR","US"]},"url":"https://desk.example/"}]}`,
	`{"rules":[{"if":{"device":["mobile"],"time":{"tz":"UTC","hours":{"from":0,"until":12}}},"url":"https://t.example/"}]}`,
}

// randomVisitor draws from a few values of each kind, so that visitors
// repeat (memo hits) and differ (misses, replaced entries).
func randomVisitor(r *rand.Rand) Visitor {
	pick := func(vs ...string) string { return vs[r.IntN(len(vs))] }
	return Visitor{
		Device: pick("mobile", "desktop", "tablet", "", "bot"), OS: pick("ios", "android", "windows", ""),
		Browser: pick("firefox", "chrome", "safari", ""), Country: pick("DE", "FR", "US", ""),
		AcceptLanguage: pick("fr-CH, fr;q=0.9", "de-DE,de;q=0.9,en;q=0.8", "en-US", "", "fr-CA;q=0.5, en", "zh-Hant-TW"),
		Key:            r.Uint64(), Link: pick("a", "b"),
	}
}

// TestMemoDecidesAsDecide: 64 goroutines deciding random visitors of
// three sets through one Memo (under -race) always get Decide's answer,
// and a remembered decision costs no allocation.
func TestMemoDecidesAsDecide(t *testing.T) {
	var sets []*Set
	for _, js := range memoSets {
		sets = append(sets, mustParse(t, js))
	}
	if !sets[0].memo || !sets[1].memo || sets[2].memo {
		t.Fatalf("memoable: %v %v %v, want true true false", sets[0].memo, sets[1].memo, sets[2].memo)
	}
	m := NewMemo()
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for g := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 1))
			for range 2000 {
				s, v := sets[r.IntN(len(sets))], randomVisitor(r)
				if got, want := s.DecideWith(m, &v), s.Decide(&v); got != want {
					errs <- fmt.Sprintf("visitor %+v: DecideWith %+v, Decide %+v", v, got, want)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	v := Visitor{Device: "mobile", OS: "ios", Browser: "safari", Country: "DE", AcceptLanguage: "en-US", Key: 7, Link: "a"}
	sets[0].DecideWith(m, &v)
	if n := testing.AllocsPerRun(100, func() { sets[0].DecideWith(m, &v) }); n != 0 {
		t.Errorf("a remembered decision allocates %.1f times", n)
	}
}

// TestMemoBounds: a long Accept-Language is decided without the Memo, and
// nil Memo, set and visitor are Decide's.
func TestMemoBounds(t *testing.T) {
	s, m := mustParse(t, memoSets[1]), NewMemo()
	long := Visitor{Device: "desktop", Country: "FR", AcceptLanguage: "en, " + string(make([]byte, MemoMaxLanguage))}
	if d := s.DecideWith(m, &long); d.Rule != 1 {
		t.Errorf("long Accept-Language: %+v, want rule 1", d)
	}
	for i := range m.slots {
		if m.slots[i].Load() != nil {
			t.Fatal("a long Accept-Language was remembered")
		}
	}
	var none *Set
	if d := none.DecideWith(m, &long); d.Rule != -1 || d.Variant != -1 {
		t.Errorf("nil set: %+v", d)
	}
	if d := s.DecideWith(nil, &long); d.Rule != 1 {
		t.Errorf("nil memo: %+v", d)
	}
	if d, want := s.DecideWith(m, nil), s.Decide(nil); d != want {
		t.Errorf("nil visitor: %+v, want %+v", d, want)
	}
}

// FuzzDecideWith: for any visitor, two memoable sets deciding through one
// Memo shared by every input answer as Decide does.
func FuzzDecideWith(f *testing.F) {
	f.Add("fr-CH, fr;q=0.9", "mobile", "ios", "firefox", "DE", uint64(1), "a")
	f.Add("", "", "", "", "", uint64(0), "")
	sets := []*Set{mustParse(f, memoSets[0]), mustParse(f, memoSets[1])}
	m := NewMemo()
	f.Fuzz(func(t *testing.T, al, device, os, browser, country string, key uint64, link string) {
		v := Visitor{Device: device, OS: os, Browser: browser, Country: country, AcceptLanguage: al, Key: key, Link: link}
		for _, s := range sets {
			for range 2 { // the second decision is remembered
				if got, want := s.DecideWith(m, &v), s.Decide(&v); got != want {
					t.Fatalf("visitor %+v: DecideWith %+v, Decide %+v", v, got, want)
				}
			}
		}
	})
}

func BenchmarkDecideWith10Rules(b *testing.B) {
	s := mustParse(b, tenMemoRules())
	v := Visitor{Device: "desktop", OS: "linux", Browser: "firefox", Country: "US", AcceptLanguage: "en-US,en;q=0.9,de;q=0.5"}
	m := NewMemo()
	b.ReportAllocs()
	for b.Loop() {
		s.DecideWith(m, &v)
	}
}

func BenchmarkDecideMemoable10Rules(b *testing.B) {
	s := mustParse(b, tenMemoRules())
	v := Visitor{Device: "desktop", OS: "linux", Browser: "firefox", Country: "US", AcceptLanguage: "en-US,en;q=0.9,de;q=0.5"}
	b.ReportAllocs()
	for b.Loop() {
		s.Decide(&v)
	}
}

// tenMemoRules: ten rules on device, country and language, the last
// matching the benchmarks' visitor.
func tenMemoRules() string {
	rules := ""
	for i, lang := range []string{"fr", "it", "es", "pt", "nl", "sv", "pl", "ja", "ko"} {
		rules += fmt.Sprintf(`{"if":{"device":["desktop"],"country":["US"],"language":["%s"]},"url":"https://r%d.example/"},`, lang, i)
	}
	return `{"rules":[` + rules + `{"if":{"device":["desktop"],"os":["linux"],"browser":["firefox"],"country":["US"],"language":["en"]},"url":"https://en.example/"}]}`
}
