package shortener

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
)

// The dashboard's files, embedded: Caddy built with xcaddy serves them
// with no build step, no CDN and nothing fetched at run time. Each is
// gzipped once, at start, and served gzipped to clients that accept it.
//
//go:embed ui
var uiFiles embed.FS

// uiCSP allows the dashboard's own files only: no inline script or
// style, no framing.
const uiCSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// uiAsset is one embedded file, plain and gzipped.
type uiAsset struct {
	ctype string
	etag  string
	plain []byte
	gz    []byte
}

// uiAssets are the dashboard's files by their path under the mount:
// "/" (index.html) and "/assets/<name>".
var uiAssets = loadUIAssets()

func loadUIAssets() map[string]*uiAsset {
	out := map[string]*uiAsset{}
	err := fs.WalkDir(uiFiles, "ui", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := uiFiles.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		a := &uiAsset{ctype: mime.TypeByExtension(path.Ext(p)), etag: `"` + hex.EncodeToString(sum[:8]) + `"`, plain: b}
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		_, _ = zw.Write(b)
		_ = zw.Close()
		if buf.Len() < len(b) {
			a.gz = buf.Bytes()
		}
		name := strings.TrimPrefix(p, "ui")
		if name == "/index.html" {
			name = "/"
		}
		out[name] = a
		return nil
	})
	if err != nil {
		panic("shortener: embedded dashboard: " + err.Error()) // the embed is fixed at build time
	}
	return out
}

// setUIHeaders sets the security headers of every dashboard answer.
func setUIHeaders(h http.Header) {
	h.Set("Content-Security-Policy", uiCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
}

// serveUIAsset answers GET and HEAD of a dashboard file (rest: its path
// under the mount), gzipped when the client accepts it, revalidated by
// ETag on every load (Cache-Control: no-cache).
func serveUIAsset(w http.ResponseWriter, r *http.Request, rest string) {
	hdr := w.Header()
	setUIHeaders(hdr)
	a := uiAssets[rest]
	if a == nil || rest == "/index.html" {
		http.Error(w, "404 page not found", http.StatusNotFound)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hdr.Set("Allow", "GET, HEAD")
		http.Error(w, "405 method not allowed", http.StatusMethodNotAllowed)
		return
	}
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("ETag", a.etag)
	hdr.Set("Vary", "Accept-Encoding")
	if a.ctype != "" {
		hdr.Set("Content-Type", a.ctype)
	}
	if etagMatches(r.Header.Get("If-None-Match"), a.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	body := a.plain
	if a.gz != nil && acceptsGzip(r) {
		hdr.Set("Content-Encoding", "gzip")
		body = a.gz
	}
	hdr.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

// etagMatches reports whether an If-None-Match list names etag (or *).
func etagMatches(list, etag string) bool {
	for _, t := range strings.Split(list, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == etag || t == "*" {
			return true
		}
	}
	return false
}

// acceptsGzip reports whether r accepts gzip (and not with q=0).
func acceptsGzip(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept-Encoding") {
		for _, e := range strings.Split(v, ",") {
			name, params, _ := strings.Cut(strings.TrimSpace(e), ";")
			if strings.EqualFold(strings.TrimSpace(name), "gzip") || strings.TrimSpace(name) == "*" {
				q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
				return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
			}
		}
	}
	return false
}
