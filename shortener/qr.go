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

	"github.com/maypok86/otter/v2"
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

// parseQRQuery reads format, size and level, each once and not empty
// (checkQuery); a bad value is a 400 naming its parameter.
func parseQRQuery(q url.Values) (qrRequest, error) {
	req := qrRequest{format: "svg", size: DefaultQRSize, level: goqr.Medium}
	switch q.Get("format") {
	case "", "svg":
	case "png":
		req.format = "png"
	default:
		return req, apiErr(http.StatusBadRequest, "format must be svg or png")
	}
	if s := q.Get("size"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < MinQRSize || n > MaxQRSize {
			return req, apiErr(http.StatusBadRequest, "size must be an integer from %d to %d", MinQRSize, MaxQRSize)
		}
		req.size = n
	}
	if l := q.Get("level"); l != "" {
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
	return h.linkURL(r, code) + "?" + QRMarker
}

// apiQR answers GET <api>/links/<code>/qr.
func (h *Handler) apiQR(w http.ResponseWriter, r *http.Request, code string) error {
	req, err := parseQRQuery(r.URL.Query())
	if err != nil {
		return err
	}
	if !validKey(code) {
		return apiErr(http.StatusNotFound, "link not found")
	}
	ctx, cancel := context.WithTimeout(r.Context(), apiTimeout)
	defer cancel()
	if err := h.linkExists(ctx, code); err != nil {
		return err
	}
	body, err := qrImages.image(ctx, h.qrURL(r, code), req)
	if err != nil {
		return err
	}
	ctype := "image/svg+xml"
	if req.format == "png" {
		ctype = "image/png"
	}
	hdr := w.Header()
	hdr.Set("Content-Type", ctype)
	hdr.Set("Cache-Control", "private, max-age=300")
	_, name := link.SplitDomainKey(code)
	hdr.Set("Content-Disposition", fmt.Sprintf(`inline; filename="%s-qr.%s"`, name, req.format))
	hdr.Set("Content-Length", strconv.Itoa(len(body)))
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
	return nil
}

// Bounded work: an image is a function of the text it encodes (the short
// URL: its host and code), its format, size and level alone, so images are
// cached by those (an edit of the long URL changes none of them; a deleted
// link is answered 404 before the cache is read). The cache holds at most
// qrCacheBytes of images; at most qrMaxRenders images are drawn at once in
// the process (a 2048 px PNG takes a 4 MiB bitmap and the encoder's
// buffers), and a request waiting for a turn longer than its deadline
// (apiTimeout) is answered 503. Measured by BenchmarkQRConcurrent2048.
const (
	qrCacheBytes = 16 << 20
	qrMaxRenders = 4
)

// errQRBusy answers a request that found no render slot before its deadline.
var errQRBusy = apiErr(http.StatusServiceUnavailable, "too many QR codes are being drawn: retry later")

// qrKey names a cached image.
type qrKey struct {
	text   string
	format string
	size   int
	level  goqr.Ecc
}

// qrRenderer draws QR images, cached, a bounded number at once.
type qrRenderer struct {
	cache *otter.Cache[qrKey, []byte]
	slots chan struct{}
	draw  func(text string, req qrRequest) ([]byte, error) // qrDraw; tests count the draws
}

// qrImages is the process's renderer: the bound is on the process's
// memory, whatever the handlers and config loads.
var qrImages = newQRRenderer(qrCacheBytes, qrMaxRenders)

func newQRRenderer(cacheBytes, renders int) *qrRenderer {
	return &qrRenderer{
		cache: otter.Must(&otter.Options[qrKey, []byte]{
			MaximumWeight: uint64(cacheBytes),
			Weigher:       func(k qrKey, v []byte) uint32 { return uint32(len(k.text) + len(v)) },
		}),
		slots: make(chan struct{}, renders),
		draw:  qrDraw,
	}
}

// image is the image of text as req asks, from the cache or drawn when a
// render slot is free (concurrent requests for one image wait for one
// draw: otter's loader); errQRBusy when ctx ends first.
func (q *qrRenderer) image(ctx context.Context, text string, req qrRequest) ([]byte, error) {
	k := qrKey{text: text, format: req.format, size: req.size, level: req.level}
	return q.cache.Get(ctx, k, otter.LoaderFunc[qrKey, []byte](q.load))
}

// load draws k's image once a render slot is free.
func (q *qrRenderer) load(ctx context.Context, k qrKey) ([]byte, error) {
	select {
	case q.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, errQRBusy
	}
	defer func() { <-q.slots }()
	return q.draw(k.text, qrRequest{format: k.format, size: k.size, level: k.level})
}

// qrDraw draws the image of text as req asks.
func qrDraw(text string, req qrRequest) ([]byte, error) {
	bm, err := qrBitmap(text, req.level)
	if err != nil { // a short URL always fits (at most 2,953 bytes at level L)
		return nil, fmt.Errorf("qr code: %w", err)
	}
	if req.format != "png" {
		return qrSVG(bm, req.size), nil
	}
	b, err := qrPNG(bm, req.size)
	if err != nil {
		return nil, fmt.Errorf("qr code png: %w", err)
	}
	return b, nil
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
