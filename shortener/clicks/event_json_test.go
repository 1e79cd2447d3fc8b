package clicks

import (
	"encoding/json"
	"testing"
	"time"
)

// FuzzClickEventJSON: AppendJSON writes the bytes json.Marshal writes,
// for any strings (invalid UTF-8, controls, HTML characters, separators).
func FuzzClickEventJSON(f *testing.F) {
	f.Add("abc", "news.example.com", "DE", "Berlin", "French", "a", int64(1796543043123456789), true)
	f.Add("\x00\"\\<>&\u2028\u2029\xff\xfe", "", "", "São Paulo\t\n\r", "", "", int64(0), false)
	f.Fuzz(func(t *testing.T, code, referrer, country, city, rule, variant string, at int64, bot bool) {
		e := ClickEvent{Code: code, Domain: city, At: time.Unix(0, at).UTC(), Bot: bot, Referrer: referrer, Country: country, Region: rule,
			City: city, Device: variant, OS: code, Browser: city, Source: referrer, Rule: rule, Variant: variant, Visitor: country}
		want, err := json.Marshal(e)
		if err != nil {
			return // a time json.Marshal refuses (a year past 9999)
		}
		if got := e.AppendJSON(nil); string(got) != string(want) {
			t.Fatalf("AppendJSON\n%s\njson.Marshal\n%s", got, want)
		}
	})
}

func BenchmarkClickEventJSON(b *testing.B) {
	e := NewClickEvent(Click{Code: "abc1234", At: time.Now(), Class: ClassBrowser, Referrer: "news.example.com", Device: DeviceMobile,
		OS: "ios", Browser: "safari", Country: "DE", Visitor: 0x1234})
	b.Run("AppendJSON", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf = e.AppendJSON(buf[:0])
		}
	})
	b.Run("json.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = json.Marshal(e)
		}
	})
}
