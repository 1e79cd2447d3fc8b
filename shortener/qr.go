package shortener

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	goqr "github.com/piglig/go-qr"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// QR codes of links: GET <api>/links/<code>/qr?format=svg|png&size=&level=
// draws the link's short URL with the QR marker added, so scans are
// counted apart from clicks (see stripQRMarker). github.com/piglig/go-qr
// encodes (byte mode, the smallest version that fits, the level asked);
// both images are drawn here from its modules with a 4-module quiet zone.

// QRMarker is the query parameter a QR code's URL carries. The redirect
// removes it before anything else reads the query: it never reaches a long
// URL, with forward_query or not.
const QRMarker = "_qr=1"

// Bounds of the size parameter, in pixels (the image's side).
const (
	MinQRSize     = 64
	MaxQRSize     = 2048
	DefaultQRSize = 512
)

// qrQuietZone is the light border, in modules, the standard asks for.
const qrQuietZone = 4

var qrLevels = map[string]goqr.Ecc{
	"L": goqr.Low, "M": goqr.Medium, "Q": goqr.Quartile, "H": goqr.High,
}

// qrRequest is a parsed QR request.
type qrRequest struct {
	format string // svg or png
	size   int
	level  goqr.Ecc
}

func parseQRQuery(q url.Values) (qrRequest, error) {
	req := qrRequest{format: "svg", size: DefaultQRSize, level: goqr.Medium}
	get := func(name string) (string, error) {
		if len(q[name]) > 1 {
			return "", apiErr(http.StatusBadRequest, "%s given %d times", name, len(q[name]))
		}
		return q.Get(name), nil
	}
	f, err := get("format")
	if err != nil {
		return req, err
	}
	switch f {
	case "", "svg":
	case "png":
		req.format = "png"
	default:
		return req, apiErr(http.StatusBadRequest, "format must be svg or png")
	}
	s, err := get("size")
	if err != nil {
		return req, err
	}
	if s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < MinQRSize || n > MaxQRSize {
			return req, apiErr(http.StatusBadRequest, "size must be an integer from %d to %d", MinQRSize, MaxQRSize)
		}
		req.size = n
	}
	l, err := get("level")
	if err != nil {
		return req, err
	}
	if l != "" {
		lv, ok := qrLevels[l]
		if !ok {
			return req, apiErr(http.StatusBadRequest, "level must be one of L, M, Q, H")
		}
		req.level = lv
	}
	return req, nil
}

// qrURL is what a link's QR code encodes.
func (h *Handler) qrURL(r *http.Request, code string) string {
	return h.shortURL(r, code) + "?" + QRMarker
}

// apiQR answers GET <api>/links/<code>/qr.
func (h *Handler) apiQR(w http.ResponseWriter, r *http.Request, code string) error {
	req, err := parseQRQuery(r.URL.Query())
	if err != nil {
		return err
	}
	if !link.ValidLookupCode(code) {
		return apiErr(http.StatusNotFound, "link not found")
	}
	ctx, cancel := context.WithTimeout(r.Context(), apiTimeout)
	defer cancel()
	if err := h.linkExists(ctx, code); err != nil {
		return err
	}
	bm, err := qrBitmap(h.qrURL(r, code), req.level)
	if err != nil { // a short URL always fits (at most 2,953 bytes at level L)
		return fmt.Errorf("qr code: %w", err)
	}
	var body []byte
	ctype := "image/svg+xml"
	if req.format == "png" {
		ctype = "image/png"
		if body, err = qrPNG(bm, req.size); err != nil {
			return fmt.Errorf("qr code png: %w", err)
		}
	} else {
		body = qrSVG(bm, req.size)
	}
	hdr := w.Header()
	hdr.Set("Content-Type", ctype)
	hdr.Set("Cache-Control", "private, max-age=300")
	hdr.Set("Content-Disposition", fmt.Sprintf(`inline; filename="%s-qr.%s"`, code, req.format))
	hdr.Set("Content-Length", strconv.Itoa(len(body)))
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
	return nil
}

// qrBitmap encodes text in byte mode at exactly level (not raised when
// the version has room) in the smallest version that holds it: its
// modules, true for dark, with the quiet zone around them.
func qrBitmap(text string, level goqr.Ecc) ([][]bool, error) {
	seg, err := goqr.MakeBytes([]byte(text))
	if err != nil {
		return nil, err
	}
	q, err := goqr.EncodeSegments([]*goqr.QrSegment{seg}, level, goqr.MinVersion, goqr.MaxVersion, -1, false)
	if err != nil {
		return nil, err
	}
	n := q.Size() + 2*qrQuietZone
	cells := make([]bool, n*n)
	bm := make([][]bool, n)
	for y := range bm {
		bm[y] = cells[y*n : (y+1)*n]
		for x := range bm[y] {
			bm[y][x] = q.Module(x-qrQuietZone, y-qrQuietZone) // false outside the symbol
		}
	}
	return bm, nil
}

// qrPNG draws a QR bitmap as a two-colour PNG of size pixels, each pixel
// the colour of the module under it, so a module is drawn size/n or one
// more pixels wide. A size below the bitmap's n modules becomes n: one
// pixel a module, never a module dropped.
func qrPNG(bm [][]bool, size int) ([]byte, error) {
	n := len(bm)
	size = max(size, n)
	img := image.NewPaletted(image.Rect(0, 0, size, size), color.Palette{color.White, color.Black})
	for y := range size {
		row, pix := bm[y*n/size], img.Pix[y*img.Stride:]
		for x := range size {
			if row[x*n/size] {
				pix[x] = 1
			}
		}
	}
	var b bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestCompression}
	if err := enc.Encode(&b, img); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// qrSVG draws a QR bitmap (true: dark) as an SVG of size pixels: a white
// square and one path of the dark modules, a horizontal run per subpath.
func qrSVG(bm [][]bool, size int) []byte {
	n := len(bm)
	var sb strings.Builder
	fmt.Fprintf(&sb, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" shape-rendering="crispEdges">`, size, size, n, n)
	fmt.Fprintf(&sb, `<rect width="%d" height="%d" fill="#fff"/><path fill="#000" d="`, n, n)
	for y, row := range bm {
		for x := 0; x < len(row); {
			if !row[x] {
				x++
				continue
			}
			start := x
			for x < len(row) && row[x] {
				x++
			}
			fmt.Fprintf(&sb, "M%d %dh%dv1h-%dz", start, y, x-start, x-start)
		}
	}
	sb.WriteString(`"/></svg>`)
	return []byte(sb.String())
}

// stripQRMarker removes QRMarker from a raw query: the rest, and whether
// it was there.
func stripQRMarker(raw string) (string, bool) {
	if !strings.Contains(raw, QRMarker) {
		return raw, false
	}
	var kept []string
	found := false
	for _, p := range strings.Split(raw, "&") {
		if p == QRMarker {
			found = true
			continue
		}
		kept = append(kept, p)
	}
	return strings.Join(kept, "&"), found
}
