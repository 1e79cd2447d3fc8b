//go:build uibench

package shortener

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
)

// TestUIListRender (make bench) reports how long the dashboard's links
// list takes to render its first page of 50 links after the API's answer
// arrives (e2e/render-bench.mjs in Chromium, RUNS loads, default 20).
// Issue 18's target is 200 ms or less; the figure is reported, not asserted.
func TestUIListRender(t *testing.T) {
	h := newHandler(t, embeddedStore(t), func(h *Handler) {
		h.UI, h.APIReadKeys = "/admin", []string{testReadKey}
		h.ClicksInterval = caddy.Duration(100 * time.Millisecond)
	})
	for i := range 60 {
		create(t, h, fmt.Sprintf(`{"long_url":"https://shop.example.com/catalogue/item-%d?utm_source=bench&utm_medium=print","code":"bench-%02d","title":"Catalogue item %d","tags":["print","campaign:spring","batch-%d"]}`, i, i, i, i%5))
	}
	srv := dashboardServer(t, h, nil)
	runs := os.Getenv("RUNS")
	if runs == "" {
		runs = "20"
	}
	var res struct {
		PaintedMedianMs float64 `json:"painted_median_ms"`
	}
	out := runNode(t, "render-bench.mjs", 3*time.Minute, "BASE="+srv.URL, "UI=/admin/", "KEY="+testKey, "RUNS="+runs)
	decodeResult(t, out, &res)
	if res.PaintedMedianMs > 200 {
		t.Logf("over issue 18's 200 ms target (median %.1f ms): not asserted, see docs/performance.md", res.PaintedMedianMs)
	}
}
