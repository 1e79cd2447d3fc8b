package shortener

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/edgekit/caddy-edgekit/shortener/link"
	qrcode "github.com/skip2/go-qrcode"
)

// QR codes of links: GET <api>/links/<code>/qr?format=svg|png&size=&level=
// draws the link's short URL with the QR marker added, so scans are
// counted apart from clicks (see stripQRMarker). github.com/skip2/go-qrcode
// encodes (byte mode, the smallest version that fits, a 4-module quiet
// zone); the SVG is drawn here from its bitmap as one path.

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

var qrLevels = map[string]qrcode.RecoveryLevel{
	"L": qrcode.Low, "M": qrcode.Medium, "Q": qrcode.High, "H": qrcode.Highest,
}

// qrRequest is a parsed QR request.
type qrRequest struct {
	format string // svg or png
	size   int
	level  qrcode.RecoveryLevel
}

func parseQRQuery(q url.Values) (qrRequest, error) {
	req := qrRequest{format: "svg", size: DefaultQRSize, level: qrcode.Medium}
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
	q, err := qrcode.New(h.qrURL(r, code), req.level)
	if err != nil { // a short URL always fits (at most 2,953 bytes at level L)
		return fmt.Errorf("qr code: %w", err)
	}
	var body []byte
	ctype := "image/svg+xml"
	if req.format == "png" {
		ctype = "image/png"
		if body, err = q.PNG(req.size); err != nil {
			return fmt.Errorf("qr code png: %w", err)
		}
	} else {
		body = qrSVG(q.Bitmap(), req.size)
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
