package shortener

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"net/url"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/makiuchi-d/gozxing"
	gzqr "github.com/makiuchi-d/gozxing/qrcode"

	"github.com/edgekit/caddy-edgekit/shortener/clicks"
)

// decodeQR reads a QR code image with gozxing, a decoder independent of
// the encoder.
func decodeQR(t *testing.T, img image.Image) string {
	t.Helper()
	bmp, err := gozxing.NewBinaryBitmapFromImage(img)
	if err != nil {
		t.Fatal(err)
	}
	res, err := gzqr.NewQRCodeReader().Decode(bmp, nil)
	if err != nil {
		t.Fatalf("decoding the QR code: %v", err)
	}
	return res.GetText()
}

var svgRun = regexp.MustCompile(`M(\d+) (\d+)h(\d+)v1h-(\d+)z`)

// rasterSVG draws the SVG the handler writes (a viewBox of n modules, one
// path of runs) at scale pixels a module.
func rasterSVG(t *testing.T, svg string, scale int) image.Image {
	t.Helper()
	m := regexp.MustCompile(`viewBox="0 0 (\d+) (\d+)"`).FindStringSubmatch(svg)
	if m == nil {
		t.Fatalf("no viewBox in %.200s", svg)
	}
	n, _ := strconv.Atoi(m[1])
	img := image.NewGray(image.Rect(0, 0, n*scale, n*scale))
	for i := range img.Pix {
		img.Pix[i] = 255
	}
	for _, r := range svgRun.FindAllStringSubmatch(svg, -1) {
		x, _ := strconv.Atoi(r[1])
		y, _ := strconv.Atoi(r[2])
		w, _ := strconv.Atoi(r[3])
		for px := x * scale; px < (x+w)*scale; px++ {
			for py := y * scale; py < (y+1)*scale; py++ {
				img.SetGray(px, py, color.Gray{})
			}
		}
	}
	return img
}

// TestQRCode: the PNG and the SVG decode, with an independent decoder, to
// the short URL with the marker, at every level; bad parameters are 400
// naming them; an unknown code 404; a read key may fetch it.
func TestQRCode(t *testing.T) {
	h := newHandler(t, newMemStore(), func(h *Handler) { h.BaseURL = "https://sho.rt"; h.APIReadKeys = []string{testReadKey} })
	l := create(t, h, `{"long_url":"https://example.com/qr","code":"qrlink"}`)
	want := l.ShortURL + "?" + QRMarker
	for _, level := range []string{"L", "M", "Q", "H"} {
		w := serve(t, h, "GET", "/api/links/qrlink/qr?format=png&size=300&level="+level, "", "Authorization", "Bearer "+testReadKey)
		if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "image/png" {
			t.Fatalf("png %s: %d %s", level, w.Code, w.Header())
		}
		img, err := png.Decode(bytes.NewReader(w.Body.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		if b := img.Bounds(); b.Dx() != 300 || b.Dy() != 300 {
			t.Errorf("png %s is %v, want 300x300", level, b)
		}
		if got := decodeQR(t, img); got != want {
			t.Errorf("png %s decodes to %q, want %q", level, got, want)
		}
	}
	w := serve(t, h, "GET", "/api/links/qrlink/qr", "", auth()...)
	if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "image/svg+xml" || !strings.Contains(w.Body.String(), `width="512"`) {
		t.Fatalf("svg: %d %s %.100s", w.Code, w.Header(), w.Body)
	}
	if got := decodeQR(t, rasterSVG(t, w.Body.String(), 8)); got != want {
		t.Errorf("svg decodes to %q, want %q", got, want)
	}
	for _, tc := range []struct{ query, msg string }{
		{"format=gif", "format must be svg or png"},
		{"size=63", "size must be an integer from 64 to 2048"},
		{"size=2049", "size must be an integer from 64 to 2048"},
		{"size=1e3", "size must be"},
		{"level=X", "level must be one of L, M, Q, H"},
		{"level=l", "level must be one of"},
		{"size=100&size=200", "size: given 2 times"},
		{"level=", "level: empty"},
	} {
		w := serve(t, h, "GET", "/api/links/qrlink/qr?"+tc.query, "", auth()...)
		if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), tc.msg) {
			t.Errorf("?%s: %d %s, want 400 %q", tc.query, w.Code, w.Body, tc.msg)
		}
	}
	if w := serve(t, h, "GET", "/api/links/nope123/qr", "", auth()...); w.Code != http.StatusNotFound {
		t.Errorf("unknown code: %d, want 404", w.Code)
	}
	if w := serve(t, h, "POST", "/api/links/qrlink/qr", "", auth()...); w.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST qr: %d, want 405", w.Code)
	}
}

// TestQRMarkerStripped: a scan's marker never reaches the long URL, with
// forward_query on or off, wherever it is in the query.
func TestQRMarkerStripped(t *testing.T) {
	for _, forward := range []bool{true, false} {
		h := newHandler(t, newMemStore(), func(h *Handler) { h.ForwardQuery = forward })
		create(t, h, `{"long_url":"https://example.com/p?x=1","code":"scan1"}`)
		for query, fwd := range map[string]string{
			"?" + QRMarker:                  "https://example.com/p?x=1",
			"?a=1&" + QRMarker + "&b=2":     "https://example.com/p?x=1&a=1&b=2",
			"?" + QRMarker + "&" + QRMarker: "https://example.com/p?x=1",
			"?_qr=2":                        "https://example.com/p?x=1&_qr=2",
		} {
			w := serve(t, h, "GET", "/scan1"+query, "")
			loc := w.Header().Get("Location")
			if !forward {
				fwd = "https://example.com/p?x=1"
			}
			if loc != fwd {
				t.Errorf("forward_query %v, GET /scan1%s: Location %q, want %q", forward, query, loc, fwd)
			}
		}
	}
}

// FuzzStripQRMarker: the result is the query's other parameters, in order,
// and never the marker.
func FuzzStripQRMarker(f *testing.F) {
	f.Add("a=1&_qr=1&b=2")
	f.Add("_qr=1")
	f.Add("_qr=1&_qr=1&&")
	f.Fuzz(func(t *testing.T, raw string) {
		got, found := stripQRMarker(raw)
		var want []string
		hit := false
		for _, p := range strings.Split(raw, "&") {
			if p == QRMarker {
				hit = true
			} else {
				want = append(want, p)
			}
		}
		if found != hit || hit && got != strings.Join(want, "&") || !hit && got != raw {
			t.Fatalf("stripQRMarker(%q) = %q, %v; want %q, %v", raw, got, found, strings.Join(want, "&"), hit)
		}
	})
}

// TestQRScansCounted: requesting the URL a QR code encodes counts as a
// click with source qr, apart from plain clicks (group_by=source).
func TestQRScansCounted(t *testing.T) {
	now := time.Date(2026, 11, 29, 10, 42, 0, 0, time.UTC)
	h := newHandler(t, embeddedStore(t), func(h *Handler) {
		h.now = func() time.Time { return now }
		h.ClicksInterval = caddy.Duration(10 * time.Millisecond)
	})
	code := create(t, h, `{"long_url":"https://example.com/poster"}`).Code
	w := serve(t, h, "GET", "/api/links/"+code+"/qr?format=png&size=256", "", auth()...)
	img, err := png.Decode(bytes.NewReader(w.Body.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	scanned, err := url.Parse(decodeQR(t, img))
	if err != nil {
		t.Fatal(err)
	}
	const browser = "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1"
	for range 3 {
		if w := serve(t, h, "GET", scanned.RequestURI(), "", "User-Agent", browser); w.Code != http.StatusFound || strings.Contains(w.Header().Get("Location"), "_qr") {
			t.Fatalf("scan: %d %q", w.Code, w.Header().Get("Location"))
		}
	}
	for range 2 {
		serve(t, h, "GET", "/"+code, "", "User-Agent", browser)
	}
	waitCodeTotal(t, h.clicks.Cfg.Sink, code, 5)
	var st clicks.StatsAnswer
	getJSON(t, h, "/api/links/"+code+"/stats?group_by=source", http.StatusOK, &st)
	want := []clicks.BreakdownEntry{{Value: clicks.SourceQR, Clicks: 3}, {Value: clicks.SourceLink, Clicks: 2}}
	if !reflect.DeepEqual(st.Breakdown, want) {
		t.Errorf("group_by=source: %+v, want %+v", st.Breakdown, want)
	}
}

// BenchmarkQR: one QR request through the handler, per format, at the
// default size and level: what encoding and drawing cost.
func BenchmarkQR(b *testing.B) {
	h := newHandler(b, newMemStore(), func(h *Handler) { h.BaseURL = "https://sho.rt" })
	create(b, h, `{"long_url":"https://example.com/qr","code":"qrlink"}`)
	for _, format := range []string{"svg", "png"} {
		b.Run(format, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if w := serve(b, h, "GET", "/api/links/qrlink/qr?format="+format, "", auth()...); w.Code != http.StatusOK {
					b.Fatalf("%s: %d %s", format, w.Code, w.Body)
				}
			}
		})
	}
}
